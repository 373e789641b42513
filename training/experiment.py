"""CPU-sized end-to-end experiment (not a test): SFT then RL of a small offline student model.

    python -m training.experiment --out <dir> --questions ../shared/data/multihop/hotpotqa_train100 \
        --sft-n 16 --rl-n 16 --eval-n 10 [--data <SFT dataset from `eventfold train sft-data`>]

Questions are split in file order: the first ``sft-n`` for teacher trajectories, the next ``rl-n``
for RL, the next ``eval-n`` held out. All their passages go into one EventRAG index (rules, naive).

1. the student: the tiny Qwen3 recipe (``training.common.tiny``) with a 2k-token BPE trained on the
   agent prompts and the corpus, 4 layers of width 64, a long position range;
2. the teacher: an SFT dataset given with ``--data`` (e.g. built by an LLM teacher), or the
   ``OracleTeacher`` below (privileged: gold supporting titles and answer) driving the real agent;
3. evaluation before training: the real agent driven by the student on the held-out questions,
   scored with the RL reward (``training.evaluate``); SFT (``training.sft.train``), evaluation;
   RL (GRPO + SIRAS, adaptive scheduling) in the research environment (``training.rl.run``),
   evaluation;
4. ``results.json`` and ``results.md`` in ``--out``. Timings are wall clock on whatever machine runs
   it (shared CPUs: noisy).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from training.config import QuestionsSection, RLRunConfig, SFTRunConfig
from training.corpus import load_questions, open_backend
from training.evaluate import evaluate_policy, summarize


class OracleTeacher:
    """A scripted teacher with privileged information (the gold supporting titles and the answer),
    used when no LLM teacher is affordable: it searches each supporting title, folds all completed
    steps once the rendered context passes ``fold_at`` of the budget, then answers with the gold
    answer. Its trajectories go through the real agent, tools and corpus; counting uses the
    student's tokenizer so the budget is in student tokens."""

    def __init__(self, counter: Any, plans: dict[str, tuple[list[str], str]], budget: int, fold_at: float = 0.6):
        self.name = "oracle-teacher"
        self.counter, self.plans, self.budget, self.fold_at = counter, plans, budget, fold_at
        self._done: dict[str, list[str]] = {}

    def chat(self, messages: list[Any], *, tools: Any = None, **kw: Any) -> Any:
        from eventfold.llm.types import ChatResponse, Message, ToolCall

        titles, gold = self.plans[" ".join(messages[1].content.split())]
        if not tools:
            return ChatResponse(message=Message(role="assistant", content=gold), model=self.name)
        done = self._done.setdefault(" ".join(messages[1].content.split()), [])
        steps = sum(1 for m in messages if m.role == "assistant") + sum(
            1 for m in messages if m.role == "user" and m.content.startswith("## [F"))
        folded = any(m.role == "user" and m.content.startswith("## [F") for m in messages)
        tokens = self.counter.count_message_tokens(messages, tools)
        todo = [t for t in titles if t not in done]
        if steps >= 2 and not folded and tokens > self.fold_at * self.budget:
            call = ToolCall(id=f"o{steps}", name="fold", arguments={"start_step": 1, "end_step": steps})
        elif todo:
            done.append(todo[0])
            call = ToolCall(id=f"o{steps}", name="search", arguments={"query": todo[0]})
        else:
            call = ToolCall(id=f"o{steps}", name="answer", arguments={"answer": gold})
        return ChatResponse(message=Message(role="assistant", content="", tool_calls=[call]), model=self.name)

    def count_tokens(self, text: str) -> int:
        return self.counter.count_tokens(text)

    def count_message_tokens(self, messages: list[Any], tools: Any = None) -> int:
        return self.counter.count_message_tokens(messages, tools)


def build_student(out: Path, texts: list[str]) -> Path:
    from training.common.tiny import build_tiny_model

    if (out / "config.json").is_file():
        return out
    return build_tiny_model(
        out, vocab_size=2048, hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=16384, extra_text=texts, seed=0,
    )


def _chat_model(path: Path) -> Any:
    from trl.chat_template_utils import add_response_schema

    from training.common.loading import load_model_and_tokenizer
    from training.hf_chat import HFChatModel

    model, tok = load_model_and_tokenizer(path)
    model.eval()
    return HFChatModel(add_response_schema(tok), model, name=path.name)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="training.experiment")
    p.add_argument("--data", type=Path, default=None, help="an SFT dataset (else: the oracle teacher builds one)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--questions", type=Path, required=True)
    p.add_argument("--sft-n", type=int, default=24)
    p.add_argument("--rl-n", type=int, default=24)
    p.add_argument("--eval-n", type=int, default=12)
    p.add_argument("--sft-epochs", type=float, default=3.0)
    p.add_argument("--rl-steps", type=int, default=20)
    p.add_argument("--budget", type=int, default=4500, help="student-token context budget")
    p.add_argument("--home", type=Path, default=None)
    p.add_argument("--max-steps", type=int, default=5, help="agent steps per episode")
    p.add_argument("--step-tokens", type=int, default=128, help="max new tokens per agent turn")
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}

    from agent import prompts
    from eventfold.run_options import RunOptions
    from training.sft.data import agent_run_fn, generate_trajectories, write_dataset

    sft_qs, ds = load_questions(QuestionsSection(path=a.questions, offset=0, limit=a.sft_n))
    rl_qs, ds_rl = load_questions(QuestionsSection(path=a.questions, offset=a.sft_n, limit=a.rl_n))
    ev_qs, ds_ev = load_questions(QuestionsSection(path=a.questions, offset=a.sft_n + a.rl_n, limit=a.eval_n))
    both = ds.model_copy(update={"examples": ds.examples + ds_rl.examples + ds_ev.examples})
    tool_text = json.dumps([{"name": n} for n in ("search", "read", "fold", "unfold", "answer")])
    texts = [prompts.SYSTEM_FOLD, prompts.STATUS, tool_text] + [f"{x.title}\n{x.text}" for x in both.passages]
    student = build_student(a.out / "student", texts)

    corpus = {"index": "train-exp", "mode": "naive", **({"home": str(a.home)} if a.home else {})}
    rl_cfg = RLRunConfig.model_validate({
        "model": {"path": str(a.out / "sft" / "final")}, "output_dir": str(a.out / "rl"), "resume": False,
        "questions": {"path": str(a.questions), "offset": a.sft_n, "limit": a.rl_n}, "corpus": corpus,
        "env": {"run": {"context_budget": a.budget, "max_steps": a.max_steps, "search_top_k": 3, "result_chars": 400},
                "reward": {"context_budget": a.budget, "cost_per_1k": 0.25}},
        "schedule": {"enabled": True, "n_clusters": 3, "update_every": 5, "exploration": 1.0},
        "grpo": {"num_generations": 4, "per_device_train_batch_size": 4, "max_steps": a.rl_steps,
                 "learning_rate": 2e-4, "temperature": 1.0, "max_completion_length": 1536,
                 "max_tool_calling_iterations": a.max_steps, "save_steps": 1000},
        "advantage": {"method": "siras"},
    })
    options = RunOptions(max_steps=a.max_steps, context_budget=a.budget, fold_summary="deterministic",
                         search_top_k=3, result_chars=400, step_max_tokens=a.step_tokens)
    results: dict[str, Any] = {"eval_questions": [q.id for q in ev_qs]}
    with open_backend(rl_cfg.corpus, both) as backend:
        data_dir = a.data
        if data_dir is None:
            from training.common.loading import load_tokenizer
            from training.hf_chat import HFChatModel

            plans = {" ".join(e.question.split()): (e.gold_titles, e.answers[0]) for e in ds.examples}
            teacher = OracleTeacher(HFChatModel(load_tokenizer(student)), plans, a.budget)
            t = time.perf_counter()
            trajs = generate_trajectories(sft_qs, agent_run_fn(backend, options), teacher)
            timings["teacher_s"] = time.perf_counter() - t
            data_dir = a.out / "sft_data"
            write_dataset(trajs, data_dir, source=str(a.questions))
        results["manifest"] = json.loads((data_dir / "manifest.json").read_text())
        t = time.perf_counter()
        results["before"] = summarize(evaluate_policy(_chat_model(student), ev_qs, backend, options, rl_cfg.env.reward))
        timings["eval_before_s"] = time.perf_counter() - t

        from training.sft.train import run_sft

        sft_cfg = SFTRunConfig.model_validate({
            "model": {"path": str(student)}, "output_dir": str(a.out / "sft"), "data_dir": str(data_dir),
            "max_length": 16384, "resume": False,
            "optim": {"learning_rate": 3e-3, "num_train_epochs": a.sft_epochs, "per_device_train_batch_size": 1,
                      "gradient_accumulation_steps": 2, "save_steps": 1000, "warmup_steps": 2},
        })
        t = time.perf_counter()
        sft = run_sft(sft_cfg)
        timings["sft_s"] = time.perf_counter() - t
        results["sft"] = {"steps": sft.global_step, "train_loss": sft.train_loss, "rows": sft.rows}
        print(json.dumps({"before": results["before"], "sft": results["sft"]}), flush=True)
        t = time.perf_counter()
        results["after_sft"] = summarize(
            evaluate_policy(_chat_model(sft.final_dir), ev_qs, backend, options, rl_cfg.env.reward))
        timings["eval_sft_s"] = time.perf_counter() - t
        print(json.dumps({"after_sft": results["after_sft"]}), flush=True)

        from training.rl.run import run_rl

        t = time.perf_counter()
        rl = run_rl(rl_cfg, rl_qs, backend)
        timings["rl_s"] = time.perf_counter() - t
        logs = [json.loads(x) for x in rl.log_path.read_text().splitlines()]
        steps = [x for x in logs if "reward" in x]
        keys = ("reward", "episode/em", "episode/answered", "episode/folds", "episode/unfolds",
                "episode/peak_context_tokens", "frac_reward_zero_std", "entropy", "tools/call_frequency", "step_time")
        results["rl"] = {"steps": rl.global_step, "schedule_history": rl.schedule_history,
                         "first": {k: steps[0].get(k) for k in keys} if steps else {},
                         "last": {k: steps[-1].get(k) for k in keys} if steps else {},
                         "mean": {k: sum(float(s.get(k, 0)) for s in steps) / len(steps) for k in keys} if steps else {}}
        t = time.perf_counter()
        results["after_rl"] = summarize(
            evaluate_policy(_chat_model(rl.final_dir), ev_qs, backend, options, rl_cfg.env.reward))
        timings["eval_rl_s"] = time.perf_counter() - t
    results["timings"] = timings
    (a.out / "results.json").write_text(json.dumps(results, indent=1))
    cols = ("reward", "em", "f1", "answered", "folds", "unfolds", "guard_folds", "invalid_turns", "steps",
            "peak_context_tokens")
    lines = ["| policy | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for name in ("before", "after_sft", "after_rl"):
        lines.append(f"| {name} | " + " | ".join(f"{results[name].get(c, 0):.3g}" for c in cols) + " |")
    (a.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    m = results["manifest"]
    print(json.dumps({"teacher": m["teacher"], "accepted": m["accepted"], "trajectories": m["trajectories"],
                      "rows": m["rows"], "folds": m["folds"], "rejections": m["rejection_reasons"],
                      "sft": results["sft"], "rl": results["rl"], "timings": timings}, indent=1))


if __name__ == "__main__":
    main()
