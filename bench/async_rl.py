"""Async RL pipeline vs the synchronous loop on the credit-assignment toy, side by side (CPU).

    python bench/async_rl.py [--steps 20] [--advantage siras] [--max-lag 1] [--out runs/async_rl]

Same warm start (bench/toy_task.py), same prompts, estimator, learner, seeds and step count; the
only difference is the schedule: sync = generate → verify → update one after another in one
process; async = rollout worker processes ‖ verification threads ‖ learner, joined by bounded-
staleness queues (max lag k policy versions, importance-weighted). Prints throughput (samples
trained per second, worker start-up excluded), the ratio async/sync, final reward (mean of the last
5 steps) for both, the lag histogram and drops; writes bench/results/async_rl.json and a PNG of
reward vs wall-clock time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.toy_task import build_warm_start, fit_steps, prompts, seconds_left, toy_reward  # noqa: E402
from training.rl.pipeline import PipelineConfig  # noqa: E402
from training.rl.pipeline.loop import run_pipeline  # noqa: E402


def plot(results: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for mode, color in (("sync", "tab:blue"), ("async", "tab:red")):
        r = results[mode]
        ax.plot(np.cumsum(r["step_s"]), r["rewards"], color=color, marker=".",
                label=f"{mode}: {r['samples_per_s']:.1f} samples/s")  # fmt: skip
    ax.set_xlabel("wall-clock seconds (after start-up)")
    ax.set_ylabel("mean reward of the step's samples")
    ax.set_title("Async pipeline vs synchronous loop (toy task, tiny Qwen3, CPU)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


@dataclass
class AsyncBench:
    """The benchmark's options (see ``parse_args``); ``steps`` is cut to fit a deadline."""

    steps: int
    advantage: str
    max_lag: int
    rollout_workers: int
    verify_workers: int
    groups_per_step: int
    seed: int
    deadline: str | None
    est_step_s: float
    out: Path
    results: Path


def parse_args(argv: list[str] | None = None) -> AsyncBench:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--advantage", default="siras")
    ap.add_argument("--max-lag", type=int, default=1)
    ap.add_argument("--rollout-workers", type=int, default=1)
    ap.add_argument("--verify-workers", type=int, default=2)
    ap.add_argument("--groups-per-step", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--deadline", help="UTC HH:MM to finish by (default: <out>/deadline.async if present)")
    ap.add_argument(
        "--est-step-s", type=float, default=15.0, help="seconds per learner step (2-core box, load ~10)"
    )
    ap.add_argument("--out", type=Path, default=Path("runs/siras_toy"))
    ap.add_argument("--results", type=Path, default=Path("bench/results"))
    return AsyncBench(**vars(ap.parse_args(argv)))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start = build_warm_start(args.out)
    left = seconds_left(args.out, args.deadline, "deadline.async")
    steps = fit_steps(args.steps, None if left is None else left - 60, 2, args.est_step_s, 0.0, floor=4)
    if steps != args.steps:
        print(f"{left:.0f}s to the deadline: {steps} steps per mode instead of {args.steps}", flush=True)
    args.steps = steps
    cfg = PipelineConfig(
        max_lag=args.max_lag, rollout_workers=args.rollout_workers, verify_workers=args.verify_workers,
        groups_per_step=args.groups_per_step, queue_size=args.groups_per_step, num_generations=8,
        max_new_tokens=72, learning_rate=5e-4,
    )  # fmt: skip
    results: dict = {mode: run_mode(mode, start, cfg, args) for mode in ("sync", "async")}
    ratio = results["async"]["samples_per_s"] / results["sync"]["samples_per_s"]
    results["config"] = cfg.model_dump() | {"advantage": args.advantage, "steps": args.steps}
    results["throughput_ratio"] = ratio
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "async_rl.json").write_text(json.dumps(results, indent=1))
    plot(results, args.results / "async_rl_reward_vs_time.png")
    print(
        "\n| mode | samples/s | wall s | final reward (last 5) | groups generated | dropped | lag histogram |"
    )
    print("|---|---|---|---|---|---|---|")
    for mode in ("sync", "async"):
        r = results[mode]
        print(f"| {mode} | {r['samples_per_s']:.2f} | {r['wall_s']:.0f} | {r['final5']:.3f} | "
              f"{r['generated_groups']} | {r['dropped_groups']} | {r['lags']} |")  # fmt: skip
    print(f"\nthroughput ratio async/sync: {ratio:.2f}x")


def run_mode(mode: str, start: Path, cfg: PipelineConfig, args: AsyncBench) -> dict:
    """One schedule (sync or async) from the warm start; its throughput, rewards, lags and step times."""
    stamps = [time.perf_counter()]

    def on_step(step: int, m: dict) -> None:
        stamps.append(time.perf_counter())
        print(f"{mode} step {step + 1}/{args.steps}: reward {m['reward']:.3f} lag {m['mean_lag']:.2f}", flush=True)

    res = run_pipeline(start, iter(prompts(10_000, 1000 + args.seed)), toy_reward, args.steps, cfg,
                       args.advantage, mode=mode, seed=args.seed, on_step=on_step)  # fmt: skip
    return {
        "samples_per_s": res.samples_per_s, "wall_s": res.wall_s, "samples": res.samples,
        "rewards": res.rewards, "final5": float(np.mean(res.rewards[-5:])), "generated_groups": res.generated,
        "dropped_groups": res.dropped, "lags": res.lags, "step_s": list(np.diff(stamps)),
        "clip_frac": [m["clip_frac"] for m in res.metrics],
    }  # fmt: skip


if __name__ == "__main__":
    main()
