"""Where an agent-turn RL step's time goes on CPU (``launch.rollout = "agent"``), side by side over values
of a ``[grpo]`` field on the same config, questions, seeds and batch.

    python bench/rl_agent_step.py --config training/configs/rl_workflow_informative.toml \
        --variants config,prompt_grad=true --steps 2 --prompts 4 --rollouts 4 --model DIR

A variant is ``config`` (the config as written) or one ``[grpo]`` field set to a value
(``prompt_grad=true``, ``temperature=1.0``). Each variant trains its own fresh copy for ``--steps`` steps from the same start (no resampling of flat
groups, so every step is exactly prompts x rollouts runs); the table reports per-step means from the
run's ``log.jsonl``: the step, rollouts (llama.cpp generation and tools), prompt tokens llama.cpp
evaluated (beside those its cache served), the update (log-probs, backward, optimiser), the
adapter export, and the step time as a ratio of the first variant. Run it alone: on 2 cores any other
job changes every number.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rl_step import add_step_args, save_table  # noqa: E402
from training.config import RLRunConfig, load_config  # noqa: E402


@dataclass
class AgentStepTimes:
    variant: str
    steps: int
    step_s: float
    rollout_s: float
    evaluated: float
    reused: float
    update_s: float
    export_s: float
    tokens: float
    reward: float


def _config(args: argparse.Namespace, variant: str, out: Path) -> RLRunConfig:
    cfg = load_config(args.config, RLRunConfig)
    fields = cfg.grpo.model_dump()
    if variant != "config":
        key, _, value = variant.partition("=")
        if key not in fields or not value:
            raise SystemExit(
                f"variant {variant!r}: expected config or FIELD=VALUE of [grpo] ({', '.join(fields)})"
            )
        fields[key] = value
    fields.update({
        "num_generations": args.rollouts, "per_device_train_batch_size": args.prompts * args.rollouts,
        "max_steps": args.steps, "resample_flat": 0, "save_steps": 10_000, "max_train_minutes": None,
    })  # fmt: skip
    grpo = type(cfg.grpo).model_validate(fields)  # "true", "4" and "0.7" become the field's type
    model = cfg.model
    if args.packaged or args.model:
        model = model.model_copy(update={"packaged": args.packaged, "path": args.model})
    run = cfg.env.run.model_copy(update={"max_steps": args.turns}) if args.turns else cfg.env.run
    env = cfg.env.model_copy(update={"run": run})
    return cfg.model_copy(update={"grpo": grpo, "model": model, "env": env, "output_dir": out, "resume": False,
                                  "report_to": "none"})  # fmt: skip


def run_variant(args: argparse.Namespace, variant: str) -> AgentStepTimes:
    from training.launch import train_rl

    out = args.out / variant.replace("=", "-")
    if out.exists():
        raise SystemExit(f"{out} exists: pass another --out (each variant trains from a fresh start)")
    res = train_rl(_config(args, variant, out))
    rows = [json.loads(x) for x in res.log_path.read_text(encoding="utf-8").splitlines() if x.strip()]

    def mean(key: str) -> float:
        return sum(float(r.get(key) or 0.0) for r in rows) / max(1, len(rows))

    export = (
        mean("rollout/adapter_save_s") + mean("rollout/adapter_convert_s") + mean("rollout/adapter_load_s")
    )
    return AgentStepTimes(variant, len(rows), mean("step_time"), mean("rollout/agent_s"),
                          mean("rollout/prompt_evaluated"), mean("rollout/prompt_reused"), mean("train_s"),
                          export, mean("rollout/generated_tokens"), mean("reward"))  # fmt: skip


def table(rows: list[AgentStepTimes]) -> str:
    base = rows[0].step_s
    head = ("| variant | steps | s/step | rollouts s | prompt tokens evaluated | served by the cache | "
            "update s | export s | generated tokens / rollout | reward | vs first |")  # fmt: skip
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        lines.append(f"| {r.variant} | {r.steps} | {r.step_s:.1f} | {r.rollout_s:.1f} | {r.evaluated:,.0f} | "
                     f"{r.reused:,.0f} | {r.update_s:.1f} | {r.export_s:.1f} | {r.tokens:.0f} | {r.reward:.3f} | "
                     f"{r.step_s / base:.2f} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_step_args(ap, "training/configs/rl_workflow_informative.toml", "eventfold-rl-agent-step")
    ap.add_argument("--variants", default="config", help="comma-separated; the first is the baseline")
    ap.add_argument(
        "--turns", type=int, default=None, help="agent steps per rollout at most (default: the config's)"
    )
    ap.add_argument(
        "--model", type=Path, default=None, help="train this model directory instead of the config's"
    )
    args = ap.parse_args()
    save_table(table([run_variant(args, v) for v in args.variants.split(",")]), args.out)


if __name__ == "__main__":
    main()
