"""Credit-assignment toy: GRPO vs SIRAS and its ablations, same warm start, several seeds (CPU).

    python bench/siras_toy.py [--seeds 0 1 2 3 4] [--steps 20] [--workers 2] [--out runs/siras_toy]

Task and warm start: bench/toy_task.py (long shared scaffold, one decisive span, reward 1 iff the
answer is a + b). Every arm (a registered advantage estimator, training.rl.advantages) trains the
same ``SirasGRPOTrainer`` from the same warm-start checkpoint with the same seeds, data order and
budget; only the advantages differ. Output: per-run JSON, reward curves (mean over seeds with a 95%
t-interval band) as PNG, and a table: final reward (mean of the last 5 steps), steps for the
seed-mean curve (moving average over 5 steps) to reach GRPO's final reward, and the ratio to GRPO's
own steps (goal from the seed: SIRAS <= 0.70). Runs go to ``--workers`` processes of one thread each.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.toy_task import build_warm_start, fit_steps, prompts, seconds_left, seed_all, toy_reward  # noqa: E402

METHODS = ("grpo", "siras", "siras_no_dtw", "siras_no_residual", "siras_no_softclip")
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}


def train_arm(job: tuple[str, int, int, str, str, float]) -> dict:
    method, seed, steps, start, out, deadline = job
    if time.time() > deadline:  # wall-clock budget spent: later seeds are skipped, not half-run
        return {"method": method, "seed": seed, "skipped": True}
    import torch
    from datasets import Dataset
    from trl import GRPOConfig

    from training.common.loading import load_model_and_tokenizer
    from training.rl.siras import SirasConfig
    from training.rl.trainer import SirasGRPOTrainer

    torch.set_num_threads(1)
    seed_all(seed)
    model, tok = load_model_and_tokenizer(Path(start), dtype=torch.float32)
    rows = [{"prompt": p} for p in prompts(8 * steps, 1000 + seed)]
    args = GRPOConfig(
        output_dir=out, use_cpu=True, per_device_train_batch_size=32, num_generations=8,
        max_completion_length=72, max_steps=steps, learning_rate=5e-4, lr_scheduler_type="constant",
        beta=0.0, temperature=1.0, logging_steps=1, report_to=[], save_strategy="no", seed=seed,
        dataloader_num_workers=0, disable_tqdm=True,
    )  # fmt: skip
    trainer = SirasGRPOTrainer(
        model=model, reward_funcs=[toy_reward], args=args, train_dataset=Dataset.from_list(rows),
        processing_class=tok, advantage=method, siras_config=SirasConfig(),
    )  # fmt: skip
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    hist = [h for h in trainer.state.log_history if "reward" in h]
    return {
        "method": method, "seed": seed, "reward": [h["reward"] for h in hist],
        "shaping_ms": [h.get("siras/shaping_ms", 0.0) for h in hist],
        "completion_len": [h.get("completions/mean_length", 0.0) for h in hist],
        "wall_s": wall, "step_s": wall / max(1, len(hist)),
    }  # fmt: skip


def moving(curve: np.ndarray, window: int = 5) -> np.ndarray:
    c = np.cumsum(np.insert(curve, 0, 0.0))
    out = np.empty(curve.size)
    for i in range(curve.size):
        lo = max(0, i - window + 1)
        out[i] = (c[i + 1] - c[lo]) / (i + 1 - lo)
    return out


def steps_to(curve: np.ndarray, threshold: float, window: int = 5) -> int | None:
    ma = moving(curve, window)
    hit = np.flatnonzero((ma >= threshold - 1e-12) & (np.arange(ma.size) + 1 >= window))
    return int(hit[0]) + 1 if hit.size else None


def band(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = curves.mean(0)
    n = curves.shape[0]
    half = T95.get(n - 1, 1.96) * curves.std(0, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(mean)
    return mean, half


def plot(curves: dict[str, np.ndarray], out: Path, threshold: float, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    colors = dict(zip(METHODS, ("tab:blue", "tab:red", "tab:green", "tab:purple", "tab:orange"), strict=True))
    for m, c in curves.items():
        mean, half = band(c)
        x = np.arange(1, mean.size + 1)
        ax.plot(x, moving(mean), color=colors.get(m), label=f"{m} (n={c.shape[0]} seeds, MA5)")
        ax.fill_between(x, moving(mean - half), moving(mean + half), color=colors.get(m), alpha=0.12)
    ax.axhline(threshold, color="grey", ls="--", lw=0.8, label="GRPO final reward")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("mean reward (accuracy)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def table(results: dict[str, dict[int, dict]], methods: list[str]) -> tuple[str, float]:
    curves = {m: np.array([r["reward"] for r in results[m].values()]) for m in methods}
    final = {m: float(c[:, -5:].mean()) for m, c in curves.items()}
    threshold = final["grpo"]
    g_steps = steps_to(curves["grpo"].mean(0), threshold)
    lines = [
        "| method | seeds | final reward (last 5, mean ± 95% CI) | steps to GRPO final (seed-mean MA5) "
        "| ratio vs GRPO | per-seed steps | s/step |",
        "|---|---|---|---|---|---|---|",
    ]
    for m, c in curves.items():
        s = steps_to(c.mean(0), threshold)
        per_seed = [steps_to(row, threshold) for row in c]
        lasts = c[:, -5:].mean(1)
        ci = (
            T95.get(len(lasts) - 1, 1.96) * lasts.std(ddof=1) / np.sqrt(len(lasts)) if len(lasts) > 1 else 0.0
        )
        ratio = f"{s / g_steps:.2f}" if s is not None and g_steps else "—"
        sps = np.mean([r["step_s"] for r in results[m].values()])
        lines.append(
            f"| {m} | {c.shape[0]} | {final[m]:.3f} ± {ci:.3f} | {s if s is not None else '—'} | {ratio} "
            f"| {', '.join('—' if x is None else str(x) for x in per_seed)} | {sps:.2f} |"
        )
    return "\n".join(lines), threshold


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--warm-steps", type=int, default=150)
    ap.add_argument("--warm-correct", type=float, default=0.3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--budget-s", type=float, default=1800.0, help="no run starts after this many seconds")
    ap.add_argument(
        "--deadline", help="UTC HH:MM to finish by (default: <out>/deadline if present): fewer steps"
    )
    ap.add_argument(
        "--est-step-s", type=float, default=5.5, help="seconds per step per worker (2-core box, load ~10)"
    )
    ap.add_argument("--out", type=Path, default=Path("runs/siras_toy"))
    ap.add_argument("--results", type=Path, default=Path("bench/results"))
    ap.add_argument(
        "--merge", type=Path, nargs="+", help="only tabulate/plot these results.json files together"
    )
    args = ap.parse_args()
    if args.merge:
        return report(merge(args.merge, args.methods), args)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    start = build_warm_start(args.out, 0, args.warm_steps, args.warm_correct)
    print(f"warm start: {time.perf_counter() - t0:.0f}s ({start})", flush=True)
    left = seconds_left(args.out, args.deadline)
    rounds = -(-len(args.seeds) * len(args.methods) // args.workers)  # runs per worker
    steps = fit_steps(args.steps, left, rounds, args.est_step_s, 10.0)
    if steps != args.steps:
        print(f"{left:.0f}s to the deadline: {steps} steps per run instead of {args.steps}", flush=True)
    args.steps = steps
    deadline = time.time() + min(args.budget_s, left if left is not None else args.budget_s)
    jobs = [
        (m, s, args.steps, str(start), str(args.out / f"{m}{s}"), deadline)
        for s in args.seeds
        for m in args.methods
    ]
    results: dict[str, dict[int, dict]] = {m: {} for m in args.methods}
    spawn = multiprocessing.get_context("spawn")  # torch is already initialised here: no fork
    with ProcessPoolExecutor(max_workers=args.workers, mp_context=spawn) as pool:
        for done, r in enumerate(pool.map(train_arm, jobs), 1):
            if r.get("skipped"):
                print(f"[{done}/{len(jobs)}] {r['method']} seed {r['seed']}: skipped (budget)", flush=True)
                continue
            results[r["method"]][r["seed"]] = r
            print(f"[{done}/{len(jobs)}] {r['method']} seed {r['seed']}: final-5 "
                  f"{np.mean(r['reward'][-5:]):.3f}, {r['step_s']:.2f}s/step", flush=True)  # fmt: skip
            (args.out / "results.json").write_text(json.dumps(results, indent=1))
    report(results, args)


def merge(paths: list[Path], methods: list[str]) -> dict[str, dict[int, dict]]:
    """Runs of several invocations (e.g. seeds run in two processes), keyed by method and seed."""
    out: dict[str, dict[int, dict]] = {m: {} for m in methods}
    for p in paths:
        for m, runs in json.loads(p.read_text()).items():
            if m in out:
                out[m].update({int(k): v for k, v in runs.items()})
    return out


def report(results: dict[str, dict[int, dict]], args: argparse.Namespace) -> None:
    """Table (markdown) + PNG over the seeds complete for every method; results JSON beside them."""
    seeds = sorted(set.intersection(*(set(results[m]) for m in args.methods)))
    results = {m: {s: results[m][s] for s in seeds} for m in args.methods}  # equal seeds per arm
    md, threshold = table(results, args.methods)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "siras_toy.json").write_text(json.dumps(results, indent=1))
    curves = {m: np.array([r["reward"] for r in results[m].values()]) for m in args.methods}
    png = args.results / "siras_toy_reward_curves.png"
    steps = curves[args.methods[0]].shape[1]
    plot(
        curves, png, threshold, f"Credit-assignment toy: {len(seeds)} seeds × {steps} steps (tiny Qwen3, CPU)"
    )
    print(md)
    print(f"seeds {seeds}; curves: {png}")


if __name__ == "__main__":
    main()
