"""The torch-only device check (training/gpu): chunked log-probs, the RL update, imports without
pydantic/trl/peft, and the CLI's results on a tiny CPU run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import Qwen2ForCausalLM

from training.gpu.learn import ToyTask
from training.gpu.logprobs import chunked_token_logprobs, sequence_logprobs
from training.gpu.shapes import student_config, tiny_config
from training.gpu.step import completion_batch, dapo_loss, expand_advantages, rl_update

ROOT = Path(__file__).resolve().parents[2]


def _model() -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    return Qwen2ForCausalLM(tiny_config(vocab_size=50, hidden_size=16))


def test_chunked_logprobs_equal_the_unchunked_values_and_gradients():
    torch.manual_seed(1)
    hidden = torch.randn(3, 7, 16, requires_grad=True)
    weight = torch.randn(50, 16, requires_grad=True)
    targets = torch.randint(0, 50, (3, 7))
    full = torch.log_softmax(hidden @ weight.T, -1).gather(-1, targets[..., None]).squeeze(-1)
    g_full = torch.autograd.grad((full * torch.arange(7.0)).sum(), (hidden, weight))
    chunked = chunked_token_logprobs(hidden, weight, targets, chunk=4)  # 21 positions: 4+4+...+1
    g_chunk = torch.autograd.grad((chunked * torch.arange(7.0)).sum(), (hidden, weight))
    torch.testing.assert_close(chunked, full)
    for a, b in zip(g_chunk, g_full, strict=True):
        torch.testing.assert_close(a, b)


def test_sequence_logprobs_match_the_models_own_logits():
    model = _model()
    ids = torch.randint(0, 50, (2, 9))
    ref = torch.log_softmax(model(ids).logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    torch.testing.assert_close(sequence_logprobs(model, ids, chunk=5), ref, atol=1e-5, rtol=1e-5)


def test_dapo_loss_normalises_by_the_batch_tokens_and_clips_the_ratio():
    adv = torch.tensor([[1.0, -1.0]])
    mask = torch.ones(1, 2)
    on_policy = dapo_loss(torch.zeros(1, 2), torch.zeros(1, 2), adv, mask, num_items=4)
    assert on_policy.item() == pytest.approx(0.0)
    # ratio e^1 on a positive advantage is clipped at 1.2; on a negative one the unclipped term is the min
    loss = dapo_loss(torch.ones(1, 2), torch.zeros(1, 2), adv, mask, num_items=4)
    assert loss.item() == pytest.approx((-1.2 + torch.e) / 4)


def test_one_update_changes_the_parameters_and_reports_its_fields():
    model = _model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    before = [p.detach().clone() for p in model.parameters()]
    prompts, completions = torch.randint(0, 50, (4, 3)), torch.randint(0, 50, (4, 6))
    batch = completion_batch(prompts, completions)
    assert batch.loss_mask.sum() == 4 * 6 and batch.loss_mask[:, :2].sum() == 0
    adv = expand_advantages(torch.tensor([1.0, -1.0, 0.5, -0.5])[:, None].expand(-1, 6), prompt_len=3)
    report = rl_update(model, opt, batch, adv, micro_batch=2, chunk=5).to_dict()
    assert set(report) == {"step_s", "tokens", "tokens_per_s", "loss", "peak_mem_gib", "mem_kind"}
    assert report["tokens"] == 4 * 9 and report["tokens_per_s"] > 0 and report["mem_kind"] == "rss_max"
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_student_shape_is_qwen25_05b():
    c = student_config()
    assert (c.vocab_size, c.hidden_size, c.num_hidden_layers, c.intermediate_size) == (151936, 896, 24, 4864)
    assert (c.num_attention_heads, c.num_key_value_heads, c.tie_word_embeddings) == (14, 2, True)


def test_toy_reward_reads_the_first_tool_token():
    task = ToyTask()
    tools = task.tools()
    filler = 2 * task.classes + 1
    wrong = tools[(1) % task.classes]
    comps = torch.tensor([[filler, tools[0], wrong], [wrong, tools[0], filler], [filler] * 3])
    assert task.rewards(torch.zeros(3, dtype=torch.long), comps).tolist() == [1.0, 0.0, 0.0]


def test_the_package_imports_with_pydantic_trl_and_peft_blocked():
    code = (
        "import sys\n"
        "for m in ('pydantic', 'trl', 'peft', 'vllm'): sys.modules[m] = None\n"
        "import training.gpu.__main__, training.gpu.learn, training.gpu.timing\n"
        "from training.gpu.siras_overlap import SirasUnavailable, load_shaper\n"
        "try:\n    load_shaper('siras', 10)\nexcept SirasUnavailable as e:\n    print('unavailable', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "unavailable" in out.stdout


def test_cli_tiny_cpu_run_writes_results(tmp_path):
    cmd = [sys.executable, "-m", "training.gpu", "--mode", "all", "--device", "cpu", "--tiny",
           "--out", str(tmp_path), "--minutes", "1"]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads((tmp_path / "results.json").read_text())
    assert {"environment", "shape", "learn", "elapsed_s"} <= set(res)
    update = res["shape"]["updates"][0]
    assert update["tokens_per_s"] > 0 and update["peak_mem_gib"] > 0
    assert res["shape"]["sampling"]["tokens_per_s"] > 0
    siras = res["shape"]["siras"]
    assert siras["shaping_s"]["2x2x12"] > 0 and siras["overlap"]["steps"] >= 1
    assert {"sequential_s", "overlapped_s", "overlap_saving"} <= set(siras["overlap"])
    assert res["learn"]["grpo"]["steps"] == res["learn"]["siras"]["steps"] == 3
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert set(curve) == {"grpo", "siras"} and len(curve["siras"]) == 3
