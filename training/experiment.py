"""The CPU experiment (not a test): SFT then SIRAS-GRPO on the real student, measured before and after.

    python -m training.experiment --out DIR --questions data/multihop/hotpotqa_train100 \
        --student qwen2.5-coder-0.5b --sft-n 24 --rl-n 8 --eval-n 20 --llm-teacher-n 4 \
        --stages data,base,sft,eval-sft,rl,eval-rl,report [--deadline-min 40]

Questions are split in file order from ``start`` (20: the benchmarks' development questions come
first and are never trained on): ``sft-n`` for teacher trajectories, the next ``rl-n``
for RL, the next ``eval-n`` held out (never seen by a training step). All their passages go into one
EventRAG index (rule extraction, naive retrieval).

Stages (each resumable: a finished stage is not run again, an evaluation continues per question):
- ``data``: teacher trajectories through the real agent, rejection-sampled (``training.sft.data.judge``):
  the first ``llm-teacher-n`` SFT questions with the LLM teacher (``Settings.llm``: the packaged 1.5B
  through llama.cpp), all SFT questions with the privileged oracle (``training.sft.teachers``; on every
  ``1 / oracle-slips``-th question it re-runs its first query once, an untrained turn); yield
  and rejection reasons per teacher go to the manifest; the kept trajectories of both form the SFT set;
- ``base`` / ``eval-sft`` / ``eval-rl``: the real agent driven by the student (transformers backend,
  greedy) on the held-out questions, scored with the RL reward (``training.evaluate``);
- ``sft``: LoRA SFT (``training.sft.train``) of the student on the set, merged into ``sft/final``;
- ``rl``: GRPO + SIRAS with LoRA, UCB scheduling on, in the research environment from ``sft/final``;
- ``report``: ``results.md`` (the three columns on the questions all three evaluated) + timings.
Wall-clock figures are whatever this machine gives (shared CPUs: noisy; the load average is logged).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from training.config import QuestionsSection, RLRunConfig, SFTRunConfig
from training.corpus import load_questions, open_backend
from training.evaluate import EpisodeScore, call_profile, evaluate_policy, summarize

STAGES = ("data", "base", "sft", "eval-sft", "rl", "eval-rl", "report")


def chat_model(path: Path, max_new_tokens: int, generate: str = "torch", cache_dir: Path | None = None) -> Any:
    """The student in ``path`` behind the agent's ``ChatModel``, in its training format; ``generate``
    "llama_cpp" exports it to GGUF (Q8_0, as the packaged students; cached beside the weights) and
    generates there — the same prompt tokens and reply parsing, ~10x faster than torch on a CPU."""
    from trl.chat_template_utils import add_response_schema

    from eventfold.llm.transformers_backend import HFChatModel

    name = path.parent.name + "/" + path.name
    if generate == "llama_cpp":
        from eventfold.settings import Settings
        from training.common.export import export_gguf
        from training.common.loading import load_tokenizer

        tok = add_response_schema(load_tokenizer(path))
        gguf = export_gguf(path, cache_dir or Settings().cache_dir)
        return HFChatModel.over_gguf(tok, gguf, name=f"{name} (llama.cpp)", max_new_tokens=max_new_tokens, n_ctx=4096)
    import torch

    from training.common.loading import load_model_and_tokenizer

    model, tok = load_model_and_tokenizer(path)
    model.eval()
    if torch.cuda.is_available():
        model.to("cuda")
    return HFChatModel(add_response_schema(tok), model, name=name, max_new_tokens=max_new_tokens)


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="training.experiment")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--questions", type=Path, required=True)
    p.add_argument("--student", default="qwen2.5-coder-0.5b", help="packaged model name, .gguf or HF directory")
    p.add_argument("--stages", default=",".join(STAGES))
    p.add_argument("--start", type=int, default=20,
                   help="first question used (the benchmarks' development questions come before it)")
    p.add_argument("--sft-n", type=int, default=24)
    p.add_argument("--rl-n", type=int, default=8)
    p.add_argument("--eval-n", type=int, default=20)
    p.add_argument("--llm-teacher-n", type=int, default=4, help="SFT questions also run by the LLM teacher")
    p.add_argument("--oracle-slips", type=float, default=0.5,
                   help="share of SFT questions on which the oracle re-runs its first query once (not trained)")
    p.add_argument("--sft-epochs", type=float, default=2.0)
    p.add_argument("--sft-lr", type=float, default=2e-4)
    p.add_argument("--rl-steps", type=int, default=4)
    p.add_argument("--rl-lr", type=float, default=5e-5)
    p.add_argument("--sft-minutes", type=float, default=None, help="wall-clock cap of SFT (the model is still saved)")
    p.add_argument("--rl-minutes", type=float, default=None, help="wall-clock cap of RL (the model is still saved)")
    p.add_argument("--budget", type=int, default=1800, help="student-token context budget")
    p.add_argument("--max-steps", type=int, default=5, help="agent steps per episode")
    p.add_argument("--step-tokens", type=int, default=96, help="max new tokens per agent turn")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--deadline-min", type=float, default=None, help="stop starting new eval questions after this")
    p.add_argument("--home", type=Path, default=None)
    p.add_argument("--eval-generate", choices=("llama_cpp", "torch"), default=None,
                   help="how the evaluated student generates: llama_cpp (its GGUF export, Q8_0; CPU default) or "
                        "torch (GPU default); prompts and replies are in the training format either way")
    p.add_argument("--profile", choices=sorted(PROFILES), default="cpu",
                   help="cpu: LoRA, HF generate, small batches; h200: bf16, vLLM colocated rollouts, larger batches")
    p.add_argument("--dry-run", action="store_true",
                   help="validate the SFT/RL configs (model, data, batch arithmetic, rollout settings) and exit")
    a = p.parse_args(argv)
    for k, v in PROFILES[a.profile].get("defaults", {}).items():  # a profile's sizes, unless given explicitly
        if getattr(a, k) == p.get_default(k):
            setattr(a, k, v)
    return a


# LoRA of the real student: attention and the output head. The head matters: the packaged 0.5B's rows
# for <tool_call> / </tool_call> are nearly collinear with <|im_start|>'s (cosine .93: special tokens the
# coder model barely used), so adapters on attention alone taught the student "a special token here"
# and it wrote <|im_start|> where the template has <tool_call> and never stopped after its call.
# SFT trains lm_head in full beside the adapters
# (TRL's own recipe for new tokens; TRL refuses a LoRA adapter on lm_head); RL keeps adapters only
# (GRPO reads lm_head.weight directly).
STUDENT_LORA: dict[str, Any] = {"enabled": True, "r": 16, "alpha": 32}
STUDENT_SFT_LORA: dict[str, Any] = {**STUDENT_LORA, "modules_to_save": ["lm_head"]}

# Sizes per machine. h200: the same pipeline as on CPU at a batch that fills one H200 for ~10 minutes
# (training/gpu_check.sh); rollouts by vLLM colocated with training, bf16.
PROFILES: dict[str, dict[str, Any]] = {
    "cpu": {"rollout": "hf_generate", "bf16": False, "num_generations": 2, "rl_batch": 4, "sft_batch": 1,
            "sft_accum": 4, "max_completion": 1536},  # 5 turns of 96 tokens and 4 tool results
    "h200": {"rollout": "vllm_colocate", "bf16": True, "num_generations": 8, "rl_batch": 32, "sft_batch": 8,
             "sft_accum": 1, "max_completion": 2048,
             "defaults": {"sft_n": 40, "rl_n": 20, "eval_n": 20, "llm_teacher_n": 0, "sft_epochs": 3.0,
                          "rl_steps": 30, "budget": 2048, "max_steps": 6, "step_tokens": 128}},
}


class Experiment:
    def __init__(self, a: argparse.Namespace) -> None:
        from eventfold.run_options import RunOptions

        self.a = a
        a.out.mkdir(parents=True, exist_ok=True)
        self.results_path = a.out / "results.json"
        self.results: dict[str, Any] = json.loads(self.results_path.read_text()) if self.results_path.is_file() else {}
        self.deadline = time.time() + 60 * a.deadline_min if a.deadline_min else None
        self.sft_qs, self.ds = load_questions(QuestionsSection(path=a.questions, offset=a.start, limit=a.sft_n))
        self.rl_qs, ds_rl = load_questions(QuestionsSection(path=a.questions, offset=a.start + a.sft_n, limit=a.rl_n))
        self.ev_qs, ds_ev = load_questions(
            QuestionsSection(path=a.questions, offset=a.start + a.sft_n + a.rl_n, limit=a.eval_n))
        self.all_ds = self.ds.model_copy(update={"examples": self.ds.examples + ds_rl.examples + ds_ev.examples})
        self.options = RunOptions(max_steps=a.max_steps, context_budget=a.budget, fold_summary="deterministic",
                                  search_top_k=2, result_chars=300, read_chars=600, step_max_tokens=a.step_tokens)
        self.corpus = {"index": "i12-train-exp", "mode": "naive", **({"home": str(a.home)} if a.home else {})}

    # --- plumbing -----------------------------------------------------------------------------
    def save(self) -> None:
        self.results["load_average"] = os.getloadavg()
        self.results_path.write_text(json.dumps(self.results, indent=1))

    def student_dir(self) -> Path:
        from training.common.loading import resolve_model_dir

        s = self.a.student
        return resolve_model_dir(s) if s.endswith(".gguf") or Path(s).is_dir() else resolve_model_dir(packaged=s)

    def rl_config(self) -> RLRunConfig:
        a = self.a
        pr = PROFILES[a.profile]
        return RLRunConfig.model_validate({
            "model": {"path": str(a.out / "sft" / "final")}, "output_dir": str(a.out / "rl"), "resume": True,
            "questions": {"path": str(a.questions), "offset": a.start + a.sft_n, "limit": a.rl_n}, "corpus": self.corpus,
            "env": {"run": {"context_budget": a.budget, "max_steps": a.max_steps, "search_top_k": 2,
                            "result_chars": 300, "read_chars": 600, "step_max_tokens": a.step_tokens},
                    "reward": {"context_budget": a.budget, "cost_per_1k": 0.5}},
            "schedule": {"enabled": True, "n_clusters": 2, "update_every": 2, "exploration": 1.0, "seed": a.seed},
            "grpo": {"num_generations": pr["num_generations"], "per_device_train_batch_size": pr["rl_batch"],
                     "max_steps": a.rl_steps, "learning_rate": a.rl_lr, "temperature": 1.0,
                     "max_completion_length": pr["max_completion"], "max_tool_calling_iterations": a.max_steps - 1,
                     "save_steps": 1 if a.profile == "cpu" else 10, "seed": a.seed, "bf16": pr["bf16"],
                     "max_train_minutes": a.rl_minutes},
            "lora": STUDENT_LORA,
            "advantage": {"method": "siras"},
            "launch": {"rollout": pr["rollout"]},
        })  # fmt: skip

    # --- stages -------------------------------------------------------------------------------
    def data(self, backend: Any) -> None:
        """LLM teacher (Settings.llm) on the first llm-teacher-n questions, the oracle on all of them."""
        from eventfold.llm.transformers_backend import HFChatModel
        from training.common.loading import load_tokenizer
        from training.sft.data import agent_run_fn, judge, write_dataset
        from training.sft.teachers import OracleTeacher, mixed_trajectories, oracle_plans, slip_questions

        a = self.a
        out = a.out / "sft_data"
        if (out / "manifest.json").is_file():
            return
        llm = None
        if a.llm_teacher_n:
            from eventfold.llm.factory import make_chat_model
            from eventfold.settings import Settings

            llm = make_chat_model(Settings(), cache=False)
        counter = HFChatModel(load_tokenizer(self.student_dir()))
        oracle = OracleTeacher(counter, oracle_plans(self.sft_qs, self.ds), slip_questions(self.sft_qs, a.oracle_slips))
        started = time.perf_counter()

        def show(tr: Any) -> None:
            v = judge(tr)
            print(f"[{tr.teacher}] {tr.question_id}: {'kept' if v.accepted else 'rejected'} ({v.reason}); "
                  f"{len(tr.run.steps)} steps, {tr.run.counters.folds} folds, {time.perf_counter() - started:.0f}s",
                  flush=True)

        trajs = mixed_trajectories(self.sft_qs, agent_run_fn(backend, self.options), llm=llm, llm_n=a.llm_teacher_n,
                                   oracle=oracle, fill="all", on_done=show)
        manifest = write_dataset(trajs, out, source=str(a.questions))
        self.results["manifest"] = manifest.model_dump(mode="json", exclude={"questions"})
        self.results.setdefault("timings", {})["teacher_s"] = time.perf_counter() - started
        self.save()

    def evaluate(self, name: str, model_dir: Path, backend: Any) -> None:
        if self.results.get(name, {}).get("n") == len(self.ev_qs):
            return
        started = time.perf_counter()
        gen = self.a.eval_generate or ("torch" if self.a.profile == "h200" else "llama_cpp")
        model = chat_model(model_dir, self.a.step_tokens, gen)
        self.results.setdefault("eval_generate", {})[name] = gen
        reward = self.rl_config().env.reward

        def show(s: EpisodeScore) -> None:
            print(f"[{name}] {s.qid}: reward {s.reward:+.2f} f1 {s.f1:.2f} answered {s.answered} folds {s.folds} "
                  f"guard {s.guard_folds} turns {s.turns} valid {s.valid_calls} peak {s.peak_context_tokens} "
                  f"{s.seconds:.0f}s", flush=True)

        scores = evaluate_policy(model, self.ev_qs, backend, self.options, reward,
                                 log_path=self.a.out / f"eval_{name}.jsonl", deadline=self.deadline, on_score=show)
        self.results[name] = summarize(scores)
        self.results.setdefault("timings", {})[f"eval_{name}_s"] = time.perf_counter() - started
        self.results.setdefault("reused_prompt_tokens", {})[name] = model.reused_tokens
        self.save()

    def sft(self) -> None:
        from training.sft.train import run_sft

        a = self.a
        if (a.out / "sft" / "final" / "config.json").is_file():
            return
        cfg = self.sft_config(self.student_dir())
        t = time.perf_counter()
        res = run_sft(cfg)
        self.results["sft"] = {**res.model_dump(mode="json"), "wall_s": time.perf_counter() - t, "seed": a.seed}
        self.save()

    def sft_config(self, student: Path) -> SFTRunConfig:
        a, pr = self.a, PROFILES[self.a.profile]
        return SFTRunConfig.model_validate({
            "model": {"path": str(student)}, "output_dir": str(a.out / "sft"),
            "data_dir": str(a.out / "sft_data"), "max_length": 3072, "resume": True,
            "lora": STUDENT_SFT_LORA,
            "optim": {"learning_rate": a.sft_lr, "num_train_epochs": a.sft_epochs,
                      "per_device_train_batch_size": pr["sft_batch"], "gradient_accumulation_steps": pr["sft_accum"],
                      "save_steps": 5 if a.profile == "cpu" else 50, "warmup_steps": 2, "seed": a.seed,
                      "bf16": pr["bf16"], "max_train_minutes": a.sft_minutes},
        })  # fmt: skip

    def dry_run(self) -> bool:
        """Validate both configs the way `eventfold train sft|rl --dry-run` does; print the plan."""
        from training.launch import check_rl_launch, check_sft

        a = self.a
        student = a.student if a.student.endswith(".gguf") or Path(a.student).is_dir() else None
        sft = self.sft_config(Path(student) if student else a.out / "student")
        sft = sft.model_copy(update={"model": sft.model.model_copy(
            update={"path": None, "packaged": a.student} if student is None else {})})
        rl = self.rl_config().model_copy(update={"model": sft.model})  # RL starts from sft/final, made by `sft`
        checks = {"sft": check_sft(sft), "rl": check_rl_launch(rl)}
        print(f"profile {a.profile}: {len(self.sft_qs)} SFT / {len(self.rl_qs)} RL / {len(self.ev_qs)} held-out questions")
        for name, c in checks.items():
            print(f"[{name}] {'ok' if c.ok else 'FAILED'}")
            for line in c.notes:
                print(f"  · {line}")
            for line in c.problems:
                print(f"  ✗ {line}")
        return all(c.ok for c in checks.values())

    def rl(self, backend: Any) -> None:
        from training.rl.run import run_rl

        a = self.a
        if (a.out / "rl" / "final" / "config.json").is_file():
            return
        t = time.perf_counter()
        res = run_rl(self.rl_config(), self.rl_qs, backend)
        wall = time.perf_counter() - t
        logs = [json.loads(x) for x in res.log_path.read_text().splitlines()]
        steps = [x for x in logs if "reward" in x]
        keys = ("reward", "reward_std", "episode/em", "episode/f1", "episode/answered", "episode/folds",
                "episode/unfolds", "episode/peak_context_tokens", "frac_reward_zero_std", "siras/degenerate_frac",
                "siras/shaping_ms", "entropy", "tools/call_frequency", "num_tokens", "step_time")
        self.results["rl"] = {
            "steps": res.global_step, "schedule_history": res.schedule_history, "wall_s": wall, "seed": a.seed,
            "s_per_step": wall / max(1, res.global_step),
            "tokens_per_s": (steps[-1].get("num_tokens", 0) / wall) if steps else None,
            "curve": [{k: s.get(k) for k in keys} for s in steps],
        }  # fmt: skip
        self.save()

    def report(self) -> None:
        cols = ("answered", "valid_call_rate", "folds", "fold_rate_under_pressure", "pressured_runs", "unfolds",
                "guard_folds", "em", "f1", "reward", "peak_context_tokens", "seconds", "n")
        names = [n for n in ("base", "eval-sft", "eval-rl") if n in self.results]
        common = self._common_ids(names)
        lines = [f"held-out questions evaluated by every column: {len(common)}", "",
                 "| metric | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
        scores = {n: self._scores(n, common) for n in names}
        summaries = {n: summarize(scores[n]) for n in names}
        for c in cols:
            lines.append(f"| {c} | " + " | ".join(f"{summaries[n].get(c, 0):.3g}" for n in names) + " |")
        self.results["table_common"] = summaries
        lines += ["", "What each column's model did with its turns (`!`: the call failed):", ""]
        for n in names:
            prof = call_profile(scores[n])
            self.results.setdefault("calls_common", {})[n] = prof
            lines.append(f"- {n}: " + (", ".join(f"{k} {v}" for k, v in prof["calls"].items()) or "no turns recorded"))
            lines += [f"  - opening `{k}` ×{v}" for k, v in prof["openings"].items()]
            lines += [f"  - error ×{v}: {k}" for k, v in prof["errors"].items()]
        (self.a.out / "results.md").write_text("\n".join(lines) + "\n")
        self.save()
        print("\n".join(lines))

    def _scores(self, name: str, ids: set[str]) -> list[EpisodeScore]:
        path = self.a.out / f"eval_{name}.jsonl"
        rows = [EpisodeScore.model_validate_json(x) for x in path.read_text().splitlines() if x.strip()]
        return [s for s in rows if s.qid in ids]

    def _common_ids(self, names: list[str]) -> set[str]:
        sets = [{s.qid for s in self._scores(n, {q.id for q in self.ev_qs})} for n in names]
        return set.intersection(*sets) if sets else set()


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    stages = [s for s in a.stages.split(",") if s]
    unknown = set(stages) - set(STAGES)
    if unknown:
        raise SystemExit(f"unknown stages {sorted(unknown)}; known: {', '.join(STAGES)}")
    import torch
    from transformers import set_seed

    set_seed(a.seed)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    ex = Experiment(a)
    if a.dry_run:
        raise SystemExit(0 if ex.dry_run() else 1)
    ex.results.setdefault("args", {k: str(v) for k, v in vars(a).items()})
    ex.results["eval_questions"] = [q.id for q in ex.ev_qs]
    rl_cfg = ex.rl_config()
    with open_backend(rl_cfg.corpus, ex.all_ds) as backend:
        for stage in stages:
            t = time.perf_counter()
            print(f"== {stage} (load {os.getloadavg()[0]:.1f})", flush=True)
            if stage == "data":
                ex.data(backend)
            elif stage == "base":
                ex.evaluate("base", ex.student_dir(), backend)
            elif stage == "sft":
                ex.sft()
            elif stage == "eval-sft":
                ex.evaluate("eval-sft", a.out / "sft" / "final", backend)
            elif stage == "rl":
                ex.rl(backend)
            elif stage == "eval-rl":
                ex.evaluate("eval-rl", a.out / "rl" / "final", backend)
            else:
                ex.report()
            ex.results.setdefault("timings", {})[f"{stage}_stage_s"] = time.perf_counter() - t
            ex.save()


if __name__ == "__main__":
    main()
