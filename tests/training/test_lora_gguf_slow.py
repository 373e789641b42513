"""RL rollouts through llama.cpp with the trainer's LoRA adapter: export -> load -> generate round trip, and
llama.cpp's log-probs of the sampled tokens against torch's (the loss's) on a fixed prompt.

The model is a small random Qwen2 with the student's real tokenizer (taken from the packaged 0.5B GGUF):
llama.cpp's converter recognises a tokenizer by its pre-tokenizer, so the offline toy tokenizer of
``training.common.tiny`` cannot be exported; the weights are tiny, so the test stays short."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from eventfold.models import get_model, is_installed, model_file
from eventfold.settings import Settings
from training.common.export import export_gguf
from training.rl.llama_rollout import LoraRolloutEngine, logprob_gap, torch_token_logprobs

pytestmark = pytest.mark.slow

NAME = "qwen2.5-coder-0.5b"
PROMPT = "The agent searched the corpus for the recall order and found"


@pytest.fixture(scope="module")
def small_student(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(saved HF dir of a 2-layer random Qwen2 with the real tokenizer, its f32 GGUF)."""
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    settings = Settings()
    if not is_installed(settings.models_dir, get_model(NAME)):
        if os.environ.get("CI"):
            pytest.fail(f"{model_file(settings.models_dir, NAME)} missing: run `eventfold model pull {NAME}`")
        pytest.skip(f"{NAME} is not pulled on this machine")
    gguf = model_file(settings.models_dir, NAME)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = Qwen2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=True, eos_token_id=tok.eos_token_id)  # fmt: skip
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("small_student")
    Qwen2ForCausalLM(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out, export_gguf(out, settings.cache_dir, outtype="f32")


def _peft(model_dir: Path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    # init_lora_weights=False: B is random too, so the adapter visibly changes the model
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False)
    return get_peft_model(base, config).eval()


def test_adapter_export_load_generate_and_logprobs_round_trip(small_student, tmp_path) -> None:
    model_dir, base_gguf = small_student
    from transformers import AutoTokenizer

    ids = AutoTokenizer.from_pretrained(model_dir)(PROMPT, add_special_tokens=False)["input_ids"]
    model = _peft(model_dir)
    engine = LoraRolloutEngine(base_gguf, model_dir, Settings().cache_dir, tmp_path / "adapters", n_ctx=256, n_threads=1)
    try:
        first = engine.sync(model)
        assert first.adapter_gguf.is_file() and first.adapter_gguf.stat().st_size > 0
        out = engine.generate(ids, 12, 0.0)
        with torch.no_grad():  # greedy under torch with the same adapter picks the same tokens
            expect = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False)[0, len(ids):].tolist()
        assert out == expect[: len(out)] and len(out) >= 1
        with model.disable_adapter(), torch.no_grad():
            plain = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False)[0, len(ids):].tolist()
        assert plain != expect  # the adapter matters, so matching it means it was applied
        with torch.no_grad():  # the next step's adapter replaces the previous one
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.mul_(-1.0)
        second = engine.sync(model)
        assert second.version == 2 and second.convert_s > 0
        with torch.no_grad():
            again = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False)[0, len(ids):].tolist()
        assert engine.generate(ids, 12, 0.0) == again[: len(engine.generate(ids, 12, 0.0))]
        assert sorted(p.name for p in (tmp_path / "adapters").iterdir()) == ["adapter-00001", "adapter-00002"]
        full = ids + engine.generate(ids, 16, 0.0)
    finally:
        engine.close()
    # the rollout engine samples from the policy the loss differentiates: llama.cpp's log-probs of the
    # sampled tokens equal torch's (f32 weights and adapter: only summation order differs)
    gap = logprob_gap(model, full, len(ids), base_gguf, second.adapter_gguf)
    assert gap.tokens == len(full) - len(ids) == len(torch_token_logprobs(model, full, len(ids)))
    assert gap.max_abs < 1e-3, gap
    without = logprob_gap(model, full, len(ids), base_gguf, None)  # the base alone is another policy
    assert without.max_abs > 100 * gap.max_abs


def test_rl_loop_with_llama_cpp_rollouts_runs_two_steps(small_student, tmp_path, lexical_backend, tiny_questions) -> None:
    """`launch.rollout = "llama_cpp"`: TRL's multi-turn tool loop samples every turn through llama.cpp with
    the adapter of the current step (exported again after each optimiser step); the loss is torch's."""
    from training.config import RLRunConfig
    from training.rl.run import build_rl_trainer
    from training.sft.data import TrainingQuestion

    model_dir, _ = small_student
    cfg = RLRunConfig.model_validate({
        "model": {"path": str(model_dir)}, "output_dir": str(tmp_path / "rl"), "questions": {"path": str(tmp_path)},
        "env": {"run": {"context_budget": 1500, "max_steps": 2, "search_top_k": 1, "result_chars": 120},
                "reward": {"context_budget": 1500}},
        "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 2, "learning_rate": 1e-2,
                 "max_completion_length": 48, "max_tool_calling_iterations": 1, "temperature": 1.0},
        "lora": {"enabled": True, "r": 4, "alpha": 8},
        "advantage": {"method": "siras", "siras": {"s_batch_fallback": 0.5, "chunking": "structure", "gate": False}},
        "launch": {"rollout": "llama_cpp"},
    })  # fmt: skip
    qs = [TrainingQuestion(id=q["id"], question=q["question"], golds=[q["answer"]]) for q in tiny_questions[:2]]
    trainer = build_rl_trainer(cfg, qs, lexical_backend)
    engine = trainer.rollout_engine
    try:
        trainer.train()
    finally:
        engine.close()
    assert trainer.state.global_step == 2
    assert [s.version for s in engine.syncs] == [1, 2]  # one adapter per optimiser step
    assert engine.calls >= 2 * 2 and engine.generated_tokens > 0  # 2 rollouts x 2 steps, every turn sampled here
    logged = [x for x in trainer.state.log_history if "rollout/generate_s" in x]
    assert logged and all(x["rollout/adapter_convert_s"] > 0 for x in logged)


def test_sampled_log_probs_are_the_models(small_student, tmp_path) -> None:
    """The log-probs llama.cpp hands back while sampling (SIRAS reads them as surprise) are the model's
    log-probs of those tokens, as a separate full evaluation computes them."""
    from transformers import AutoTokenizer

    from training.rl.llama_rollout import llama_token_logprobs

    model_dir, base_gguf = small_student
    ids = AutoTokenizer.from_pretrained(model_dir)(PROMPT, add_special_tokens=False)["input_ids"]
    engine = LoraRolloutEngine(base_gguf, model_dir, Settings().cache_dir, tmp_path / "adapters", n_ctx=256, n_threads=1)
    try:
        engine.sync(_peft(model_dir))
        lps: list[float] = []
        out = engine.generate(ids, 10, 1.0, logprobs=lps)
        adapter = engine.syncs[-1].adapter_gguf
    finally:
        engine.close()
    assert len(lps) == len(out) >= 1 and all(lp <= 0.0 for lp in lps)
    full = llama_token_logprobs(base_gguf, ids + out, len(ids), lora_gguf=adapter)
    assert max(abs(a - b) for a, b in zip(lps, full, strict=True)) < 1e-3


def test_agent_rl_runs_two_steps_saves_and_resumes(small_student, tmp_path, lexical_backend, tiny_questions) -> None:
    """`launch.rollout = "agent"`: each rollout is a run of the agent (the model policy over the student's
    chat template, sampled through llama.cpp with the current adapter); each step is a checkpoint, a
    rerun continues from it, and the final folder serves as trained (GGUF export, run options)."""
    import json

    from eventfold.run_options import TRAINED_RUN_FILE
    from training.config import RLRunConfig
    from training.rl.run import run_rl
    from training.sft.data import TrainingQuestion

    model_dir, _ = small_student
    spec = {
        "model": {"path": str(model_dir)}, "output_dir": str(tmp_path / "rl"), "questions": {"path": str(tmp_path)},
        "report_to": "tensorboard",
        "env": {"run": {"context_budget": 1500, "max_steps": 2, "search_top_k": 1, "result_chars": 120,
                        "step_max_tokens": 16}, "reward": {"context_budget": 1500}},
        "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 2, "learning_rate": 1e-2,
                 "temperature": 1.0, "save_steps": 1},
        "lora": {"enabled": True, "r": 4, "alpha": 8},
        "advantage": {"method": "siras"}, "launch": {"rollout": "agent"},
    }  # fmt: skip
    qs = [TrainingQuestion(id=q["id"], question=q["question"], golds=[q["answer"]]) for q in tiny_questions[:2]]
    first = run_rl(RLRunConfig.model_validate(spec), qs, lexical_backend)
    rows = [json.loads(line) for line in first.log_path.read_text().splitlines()]
    assert first.global_step == 2 and first.resumed_from is None and [r["step"] for r in rows] == [1, 2]
    assert all(r["rollout/generate_s"] > 0 and r["rollout/adapter_convert_s"] > 0 for r in rows)
    # every turn's prompt is either evaluated or served from llama.cpp's cache; siblings share their opening
    turns = json.loads((tmp_path / "rl" / "rollouts" / "step-00001.json").read_text())["rollouts"]
    prompted = sum(len(t["prompt_ids"]) for r in turns for t in r["turns"])
    assert rows[0]["rollout/prompt_evaluated"] > 0 and rows[0]["rollout/prompt_reused"] > 0
    assert rows[0]["rollout/prompt_evaluated"] + rows[0]["rollout/prompt_reused"] >= prompted
    assert all(r["tools/call_frequency"] >= 0 and 0.0 <= r["episode/valid_call_rate"] <= 1.0 for r in rows)
    assert (tmp_path / "rl" / "checkpoint-2").is_dir() and (tmp_path / "rl" / "tb").is_dir()
    final = first.final_dir
    assert (final / "student-q8_0.gguf").is_file()
    assert json.loads((final / TRAINED_RUN_FILE).read_text())["context_budget"] == 1500
    spec["grpo"].update(max_steps=3, resample_flat=1)
    again = run_rl(RLRunConfig.model_validate(spec), qs, lexical_backend)
    rows = [json.loads(line) for line in again.log_path.read_text().splitlines()]
    assert again.resumed_from is not None and again.resumed_from.endswith("checkpoint-2")
    assert [r["step"] for r in rows] == [1, 2, 3]  # the rerun trained step 3 only
    state = json.loads((tmp_path / "rl" / "checkpoint-3" / "agent_rl_state.json").read_text())
    assert rows[2]["rollout/groups_drawn"] in (1, 2)  # a flat first group is replaced once at most
    assert state["drawn"] == 2 + rows[2]["rollout/groups_drawn"]  # a resumed run draws on from here
    (final / "student-q8_0.gguf").unlink()
    spec["grpo"]["max_steps"] = 2  # `train rl --max-steps 2` on a run stopped at step 3: no step, a final
    stopped = run_rl(RLRunConfig.model_validate(spec), qs, lexical_backend)
    assert stopped.global_step == 3 and len(again.log_path.read_text().splitlines()) == 3
    assert (stopped.final_dir / "student-q8_0.gguf").is_file()
