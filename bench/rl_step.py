"""Where an RL step's time goes on CPU: rollouts through transformers' generate vs llama.cpp with the LoRA
adapter exported each step, side by side on the same config, questions and batch.

    python bench/rl_step.py --config training/configs/rl_qwen05b.toml --engines llama_cpp,hf_generate \
        --steps 2 --prompts 4 --rollouts 4 --turns 8 --packaged qwen2.5-coder-0.5b

Each engine trains its own copy for ``--steps`` steps (the first step also pays one-time costs: the base
GGUF export, the index, loading); the table reports the mean of the steps after the first when there
are several. Columns: seconds per step, rollout generation, adapter export (save + convert + load),
the rest (tool calls, log-probs, backward, optimiser), generated tokens and tokens/s, and the step time
as a ratio of the first engine listed. Run it alone: on 2 cores any other job changes every number.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from training.config import RLRunConfig, load_config  # noqa: E402


@dataclass
class StepTimes:
    engine: str
    steps: int
    step_s: float
    generate_s: float
    adapter_s: float
    tokens: float
    reward: float

    @property
    def rest_s(self) -> float:
        return max(0.0, self.step_s - self.generate_s - self.adapter_s)


def _config(args: argparse.Namespace, engine: str, out: Path) -> RLRunConfig:
    cfg = load_config(args.config, RLRunConfig)
    grpo = cfg.grpo.model_copy(update={
        "num_generations": args.rollouts, "per_device_train_batch_size": args.prompts * args.rollouts,
        "gradient_accumulation_steps": 1, "max_steps": args.steps, "max_tool_calling_iterations": args.turns,
        "save_steps": 10_000, "max_train_minutes": None,
    })  # fmt: skip
    lora = cfg.lora.model_copy(update={"enabled": True, "modules_to_save": None})
    if args.top_layers:
        lora = lora.model_copy(update={"layers": list(range(24 - args.top_layers, 24))})
    model = cfg.model.model_copy(update={"packaged": args.packaged, "path": None}) if args.packaged else cfg.model
    launch = cfg.launch.model_copy(update={"rollout": engine})
    schedule = cfg.schedule.model_copy(update={"enabled": False})
    questions = cfg.questions.model_copy(update={"limit": args.prompts * args.steps})
    return cfg.model_copy(update={"grpo": grpo, "lora": lora, "model": model, "launch": launch,
                                  "schedule": schedule, "questions": questions, "output_dir": out,
                                  "resume": False})  # fmt: skip


def _times(engine: str, log: list[dict]) -> StepTimes:
    rows = [r for r in log if "reward" in r]
    timed = rows[1:] or rows  # the first step pays the one-time costs
    gaps = [b["_t"] - a["_t"] for a, b in zip(rows, rows[1:], strict=False)] or [rows[0]["_t"] - rows[0]["_t0"]]

    def mean(key: str) -> float:
        vals = [float(r.get(key, 0.0)) for r in timed]
        return sum(vals) / max(1, len(vals))

    adapter = mean("rollout/adapter_save_s") + mean("rollout/adapter_convert_s") + mean("rollout/adapter_load_s")
    return StepTimes(engine, len(rows), sum(gaps) / len(gaps), mean("rollout/generate_s"), adapter,
                     mean("rollout/generated_tokens"), mean("reward"))  # fmt: skip


def run_engine(args: argparse.Namespace, engine: str) -> StepTimes:
    from transformers import TrainerCallback

    import training.rl.run as rl_run
    from training.launch import train_rl

    stamps: list[float] = [time.perf_counter()]

    class Clock(TrainerCallback):
        def on_log(self, _args, state, control, logs=None, **kw):  # type: ignore[no-untyped-def]
            if logs is not None and "reward" in logs:
                logs["_t"], logs["_t0"] = time.perf_counter(), stamps[0]

    build = rl_run.build_rl_trainer

    def with_clock(*a, **kw):  # type: ignore[no-untyped-def]
        trainer = build(*a, **kw)
        trainer.add_callback(Clock())
        stamps[0] = time.perf_counter()
        return trainer

    rl_run.build_rl_trainer = with_clock
    try:
        res = train_rl(_config(args, engine, args.out / engine))
    finally:
        rl_run.build_rl_trainer = build
    log = [json.loads(x) for x in res.log_path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return _times(engine, log)


def table(rows: list[StepTimes]) -> str:
    base = rows[0].step_s
    head = "| engine | steps | s/step | generate s | adapter export s | rest s | tokens | tokens/s | vs first |"
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        tps = r.tokens / r.generate_s if r.generate_s else float("nan")
        lines.append(f"| {r.engine} | {r.steps} | {r.step_s:.1f} | {r.generate_s:.1f} | {r.adapter_s:.1f} | "
                     f"{r.rest_s:.1f} | {r.tokens:.0f} | {tps:.1f} | {r.step_s / base:.2f} |")  # fmt: skip
    return "\n".join(lines)


def add_step_args(ap: argparse.ArgumentParser, config: str, out: str) -> None:
    """The arguments every RL step bench takes: the config, the batch, the model, the output folder."""
    ap.add_argument("--config", type=Path, default=ROOT / config)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--rollouts", type=int, default=4)
    ap.add_argument("--packaged", default=None, help="train a packaged model instead of the config's")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / out)


def save_table(text: str, out: Path) -> None:
    """Print ``text`` with the load average it was measured under, and keep it as ``out/table.md``."""
    load = os.getloadavg()
    text += f"\n\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(text + "\n", encoding="utf-8")
    print(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_step_args(ap, "training/configs/rl_qwen05b.toml", "eventfold-rl-step")
    ap.add_argument("--engines", default="llama_cpp,hf_generate", help="rollout configs, first is the baseline")
    ap.add_argument("--turns", type=int, default=8, help="tool-calling turns per rollout at most")
    ap.add_argument("--top-layers", type=int, default=4, help="LoRA on the top N decoder layers only (0: all)")
    args = ap.parse_args()
    save_table(table([run_engine(args, e) for e in args.engines.split(",")]), args.out)


if __name__ == "__main__":
    main()
