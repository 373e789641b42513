"""CPU-sized end-to-end experiment (not a test): SFT then RL of a small offline student model.

    python -m training.experiment --data <sft dataset dir> --out <dir> \
        --questions ../shared/data/multihop/hotpotqa_train100 --rl-offset 24 --rl-n 24 --eval-offset 48 --eval-n 12

1. the student: the tiny Qwen3 recipe (``training.common.tiny``) with a larger tokenizer trained on
   the SFT rows and the corpus text, a few layers, a long position range;
2. evaluation before training: the real agent driven by the student on held-out questions, scored
   with the RL reward (``training.evaluate``);
3. SFT on the teacher dataset (``training.sft.train``), evaluation again;
4. RL (GRPO + SIRAS, adaptive scheduling) in the research environment over the same indexed corpus
   (``training.rl.run``), evaluation again;
5. ``results.json`` and ``results.md`` in ``--out``: the three evaluations side by side, the SFT
   dataset's manifest and the RL log's first/last steps. Timings are wall clock on whatever machine
   runs it (shared CPUs: noisy).
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


def build_student(out: Path, rows: list[dict[str, Any]], passages: list[str]) -> Path:
    from training.common.tiny import build_tiny_model

    if (out / "config.json").is_file():
        return out
    texts = [json.dumps(r["prompt"][-3:], ensure_ascii=False) for r in rows[:200]]
    texts += [json.dumps(r["completion"], ensure_ascii=False) for r in rows]
    texts += [r["tools"] for r in rows[:1]]
    texts += passages[:2000]
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
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--questions", type=Path, required=True)
    p.add_argument("--rl-offset", type=int, default=24)
    p.add_argument("--rl-n", type=int, default=24)
    p.add_argument("--eval-offset", type=int, default=48)
    p.add_argument("--eval-n", type=int, default=12)
    p.add_argument("--sft-epochs", type=float, default=3.0)
    p.add_argument("--rl-steps", type=int, default=20)
    p.add_argument("--budget", type=int, default=4500, help="student-token context budget")
    p.add_argument("--home", type=Path, default=None)
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    rows = [json.loads(x) for x in (a.data / "train.jsonl").read_text().splitlines() if x.strip()]
    manifest = json.loads((a.data / "manifest.json").read_text())

    rl_qs, ds = load_questions(QuestionsSection(path=a.questions, offset=a.rl_offset, limit=a.rl_n))
    ev_qs, ds_ev = load_questions(QuestionsSection(path=a.questions, offset=a.eval_offset, limit=a.eval_n))
    both = ds.model_copy(update={"examples": ds.examples + ds_ev.examples})
    passages = [f"{x.title}\n{x.text}" for x in both.passages]
    student = build_student(a.out / "student", rows, passages)

    rl_cfg = RLRunConfig.model_validate({
        "model": {"path": str(a.out / "sft" / "final")}, "output_dir": str(a.out / "rl"), "resume": False,
        "questions": {"path": str(a.questions), "offset": a.rl_offset, "limit": a.rl_n},
        "corpus": {"index": "train-exp-rl", "mode": "naive", **({"home": str(a.home)} if a.home else {})},
        "env": {"context_budget": a.budget, "max_steps": 6, "search_top_k": 3, "result_chars": 400,
                "reward": {"context_budget": a.budget, "cost_per_1k": 0.25}},
        "schedule": {"enabled": True, "n_clusters": 3, "update_every": 5, "exploration": 1.0},
        "grpo": {"num_generations": 4, "per_device_train_batch_size": 4, "max_steps": a.rl_steps,
                 "learning_rate": 2e-4, "temperature": 1.0, "max_completion_length": 1536,
                 "max_tool_calling_iterations": 6, "save_steps": 1000},
        "advantage": {"method": "siras"},
    })
    from agent.options import RunOptions

    options = RunOptions(max_steps=6, context_budget=a.budget, fold_summary="deterministic", search_top_k=3,
                         result_chars=400, step_max_tokens=192)
    results: dict[str, Any] = {"manifest": manifest, "eval_questions": [q.id for q in ev_qs]}
    with open_backend(rl_cfg.corpus, both) as backend:
        t = time.perf_counter()
        results["before"] = summarize(evaluate_policy(_chat_model(student), ev_qs, backend, options, rl_cfg.env.reward))
        timings["eval_before_s"] = time.perf_counter() - t

        from training.sft.train import run_sft

        sft_cfg = SFTRunConfig.model_validate({
            "model": {"path": str(student)}, "output_dir": str(a.out / "sft"), "data_dir": str(a.data),
            "max_length": 16384, "resume": False,
            "optim": {"learning_rate": 3e-3, "num_train_epochs": a.sft_epochs, "per_device_train_batch_size": 1,
                      "gradient_accumulation_steps": 2, "save_steps": 1000, "warmup_steps": 2},
        })
        t = time.perf_counter()
        sft = run_sft(sft_cfg)
        timings["sft_s"] = time.perf_counter() - t
        results["sft"] = {"steps": sft.global_step, "train_loss": sft.train_loss, "rows": sft.rows}
        t = time.perf_counter()
        results["after_sft"] = summarize(
            evaluate_policy(_chat_model(sft.final_dir), ev_qs, backend, options, rl_cfg.env.reward))
        timings["eval_sft_s"] = time.perf_counter() - t

        from training.rl.run import run_rl

        t = time.perf_counter()
        rl = run_rl(rl_cfg, rl_qs, backend)
        timings["rl_s"] = time.perf_counter() - t
        logs = [json.loads(x) for x in rl.log_path.read_text().splitlines()]
        steps = [x for x in logs if "reward" in x]
        keys = ("reward", "episode/em", "episode/folds", "episode/unfolds", "episode/peak_context_tokens",
                "frac_reward_zero_std", "entropy", "tools/call_frequency", "step_time")
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
    print(json.dumps({"sft": results["sft"], "rl": results["rl"], "timings": timings}, indent=1))


if __name__ == "__main__":
    main()
