"""One RL step on the tiny model: 2 rollouts per prompt, multi-turn tool calls forced by a patched
`generate` (as TRL's own tool tests do), the research environment's rewards, parameters change."""

from __future__ import annotations

import json
import re

import pytest
import torch

from training.common.loading import load_model_and_tokenizer
from training.config import RLRunConfig
from training.rl.run import ScheduledSampler, build_rl_trainer, rl_rows, run_rl
from training.rl.schedule import ScheduleConfig, Scheduler
from training.sft.data import TrainingQuestion


def _call(name: str, **args) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call><|im_end|>"


def scripted_policy(text: str, row: int) -> str:
    """Sibling A searches for the repairs, folds step 1 and answers right; sibling B answers wrong."""
    question = re.findall(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", text, flags=re.S)[0]
    gold = "Mara Quill" if "repairs" in question else "10 January 2020"
    turn = text.count("<tool_response>")
    path_a = "repairs Riverside Road" in text or (turn == 0 and row % 2 == 0)
    if turn == 0:
        # A's search names its answer, so the answer it gives rests on a chunk it has seen
        return _call("search", query=f"repairs Riverside Road storm {gold}" if path_a else "Riverside Road closure")
    script = [_call("fold", start_step=1, end_step=1), _call("answer", answer=gold)] if path_a else [
        _call("answer", answer="Samuel Okafor")]
    return script[turn - 1] if turn - 1 < len(script) else "done<|im_end|>"


OPENED = '<tool_call>\n{"name": "'  # the end of a prompt forced to a tool call (training.rl.opener)


def patch_generate(model, tok, prompts: list[str] | None = None) -> list[int]:
    """The scripted policy in place of `generate`; a prompt that ends with the tool-call opener gets the
    script's call from the tool's name on (the opener is the prompt's). `prompts` collects the prompts."""
    calls: list[int] = []

    def generate(input_ids=None, attention_mask=None, **kw):
        calls.append(input_ids.shape[0])
        outs = []
        for i in range(input_ids.shape[0]):
            text = tok.decode(input_ids[i][attention_mask[i].bool()])
            reply = scripted_policy(text, i)
            if text.endswith(OPENED) and reply.startswith("<tool_call>"):
                reply = reply.split(OPENED, 1)[1]
            if prompts is not None:
                prompts.append(text)
            outs.append(tok(reply, add_special_tokens=False).input_ids)
        width = max(len(o) for o in outs)
        padded = torch.tensor([o + [tok.pad_token_id] * (width - len(o)) for o in outs])
        return torch.cat([input_ids, padded.to(input_ids.device)], dim=1)

    model.generate = generate
    return calls


@pytest.fixture
def questions(tiny_questions) -> list[TrainingQuestion]:
    return [TrainingQuestion(id=q["id"], question=q["question"], golds=[q["answer"]]) for q in tiny_questions]


def _cfg(tmp_path, tiny_model_dir, **over) -> RLRunConfig:
    data = {
        "model": {"path": str(tiny_model_dir)},
        "output_dir": str(tmp_path / "rl"),
        "questions": {"path": str(tmp_path)},
        "env": {"run": {"context_budget": 4000, "max_steps": 4, "search_top_k": 2, "result_chars": 100},
                "reward": {"context_budget": 4000}},
        "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 1, "learning_rate": 1e-2,
                 "max_completion_length": 1500, "max_tool_calling_iterations": 4},
        "advantage": {"method": "grpo"},
    }
    for k, v in over.items():
        data[k] = {**data.get(k, {}), **v} if isinstance(v, dict) else v
    return RLRunConfig.model_validate(data)


def test_one_rl_step_multi_turn_tools_changes_parameters(tmp_path, tiny_model_dir, questions,
                                                        lexical_backend) -> None:
    cfg = _cfg(tmp_path, tiny_model_dir, advantage={"method": "siras"})
    model, tok = load_model_and_tokenizer(tiny_model_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    calls = patch_generate(model, tok)
    res = run_rl(cfg, questions, lexical_backend, model=model, tokenizer=tok)
    assert res.global_step == 1
    assert calls[0] == 2 and len(calls) >= 3  # 2 rollouts, then post-tool turns
    logs = [json.loads(x) for x in res.log_path.read_text().splitlines()]
    step = next(x for x in logs if "reward" in x)
    # sibling A: EM 1 + format 0.1; sibling B: wrong answer + format 0.1 -> mean reward 0.6
    assert step["episode/em"] == pytest.approx(0.5) and step["reward"] == pytest.approx(0.6, abs=1e-4)
    assert step["episode/folds"] == pytest.approx(0.5) and step["episode/answered"] == 1.0
    assert step["frac_reward_zero_std"] == 0.0 and "entropy" in step
    assert step["tools/call_frequency"] >= 2.5
    after = dict(trainer_params(res.final_dir))
    assert any(not torch.equal(after[n], before[n]) for n in before if n in after)
    # the SIRAS trainer shaped (B, T) advantages over the multi-turn rollouts
    assert "siras/mean_abs_adv" in step and step["siras/degenerate_frac"] == 0.0


def trainer_params(path):
    m, _ = load_model_and_tokenizer(path)
    return m.named_parameters()


def test_tool_results_are_masked(tmp_path, tiny_model_dir, questions, lexical_backend) -> None:
    cfg = _cfg(tmp_path, tiny_model_dir)
    model, tok = load_model_and_tokenizer(tiny_model_dir)
    template = tok.chat_template
    prompts: list[str] = []
    patch_generate(model, tok, prompts)
    trainer = build_rl_trainer(cfg, questions, lexical_backend, model=model, tokenizer=tok)
    batch = next(iter(trainer.get_train_dataloader()))
    out = trainer._generate_and_score_completions(batch)
    ids, mask, tool_mask = out["completion_ids"], out["completion_mask"], out["tool_mask"]
    for r in range(ids.shape[0]):
        trained = tok.decode(ids[r][(mask[r] * tool_mask[r]).bool()])
        masked = tok.decode(ids[r][(mask[r] * (1 - tool_mask[r])).bool()])
        # the policy writes each call from the tool's name on: the forced opener is prompt or suffix, not trained
        assert '"arguments"' in trained and "<tool_call>" not in trained and "<tool_response>" not in trained
        assert "<tool_response>" in masked and "[status] step 2 of 4 · context" in masked
        assert OPENED in masked  # the later turns' openers, inside the tool suffixes
    # every turn was asked as the agent asks it, up to the answer; the turn after it is free
    answered = [p for p in prompts if "the episode is over" in p.rsplit("<tool_response>", 1)[-1]]
    assert answered and all(not p.endswith(OPENED) for p in answered)
    assert all(p.endswith(OPENED) for p in prompts if p not in answered)
    assert tok.chat_template == template  # the template saved with the model is not the forcing one


def test_scheduled_sampler_follows_the_scheduler(tmp_path, tiny_model_dir, questions) -> None:
    sched = Scheduler([0, 1, 1, 0], ScheduleConfig(seed=0))
    sampler = ScheduledSampler(sched, n_rows=4, per_chunk=1, mini_repeat=2, repeat_count=1)
    got = list(sampler)
    assert len(got) == len(sampler) == 8
    assert all(got[i] == got[i + 1] for i in range(0, 8, 2))  # each question twice in a row (one group)
    assert all(sched.clusters[i] == sched.active for i in got)
    rows = rl_rows(questions, 2000)
    assert rows[0]["prompt"][0]["role"] == "system" and "2000 tokens" in rows[0]["prompt"][0]["content"]
    assert rows[1]["answer"] == ["Mara Quill"] and rows[1]["qidx"] == 1 and len(rows[1]["prompt"]) == 2
    with_status = rl_rows(questions, 2000, status=lambda q: f"[status] step 1 of 4 · {q.id}")
    assert with_status[1]["prompt"][-1] == {"role": "user", "content": "[status] step 1 of 4 · t2"}


def test_rl_steps_with_adaptive_schedule_plain_grpo(tmp_path, tiny_model_dir, questions, lexical_backend) -> None:
    cfg = _cfg(tmp_path, tiny_model_dir, schedule={"enabled": True, "n_clusters": 2, "update_every": 1},
               grpo={"max_steps": 2}, advantage={"method": "grpo"})
    model, tok = load_model_and_tokenizer(tiny_model_dir)
    patch_generate(model, tok)
    res = run_rl(cfg, questions, lexical_backend, model=model, tokenizer=tok)
    assert res.global_step == 2 and len(res.schedule_history) == 3  # initial choice + one per step
    logs = [json.loads(x) for x in res.log_path.read_text().splitlines()]
    steps = [x for x in logs if "reward" in x]
    assert len(steps) == 2 and all("schedule/cluster" in x for x in steps)
    assert all(x["reward"] == pytest.approx(0.6, abs=1e-4) for x in steps)  # plain GRPO: no siras/ metrics
    assert not any(k.startswith("siras/") for x in steps for k in x)


def test_async_rollouts_run_the_multi_turn_loop_through_the_pipeline(tmp_path, tiny_model_dir, questions,
                                                                     lexical_backend) -> None:
    """async_rollouts: TRL's tool loop in a rollout thread, the pipeline's learner, weights published."""
    cfg = _cfg(tmp_path, tiny_model_dir, advantage={"method": "siras"}, async_rollouts=True,
               grpo={"max_steps": 2}, pipeline={"max_lag": 1, "verify_workers": 1, "queue_size": 2})
    model, tok = load_model_and_tokenizer(tiny_model_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    calls = patch_generate(model, tok)
    res = run_rl(cfg, questions, lexical_backend, model=model, tokenizer=tok)
    assert res.global_step == 2 and len(calls) >= 3  # the rollout copy generated, tool turns included
    steps = [json.loads(x) for x in res.log_path.read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 2]
    assert all(s["reward"] == pytest.approx(0.6, abs=1e-4) and s["mean_lag"] <= 1 for s in steps)
    after = dict(trainer_params(res.final_dir))
    assert any(not torch.equal(after[n], before[n]) for n in before if n in after)
