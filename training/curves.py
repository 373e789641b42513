"""A training run's speed and reward curve from its logs, or several runs' curves side by side.

``python -m training.curves OUT`` prints a table: it reads the RL log (``log.jsonl``, TRL's log history
written by ``training.rl.run``, in ``OUT`` — an RL output folder — or ``OUT/rl`` of ``training.experiment``)
and, when present, ``OUT/results.json``: steps/s, tokens/s, and per step the reward, its spread, the share
of degenerate groups, answers, folds and peak context.

``python -m training.curves RUN [RUN ...] --out curves.png`` draws one panel per metric (reward,
valid-call rate, fold and unfold rates, KL, entropy, step time, and the reward's trailing mean over
``SMOOTH`` steps, which shows a trend through the step-to-step spread of one-question steps) against the
step, one line per run, labelled with the run's advantage method and seed (its saved ``run_config.json``; else its folder name).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from training.rl.result import RUN_CONFIG

# panel title -> the log key (TRL's names and training.rl.env's episode metrics)
CURVES: dict[str, str] = {
    "reward": "reward",
    "valid-call rate": "episode/valid_call_rate",
    "fold rate": "episode/fold_rate",
    "unfold rate": "episode/unfold_rate",
    "KL": "kl",
    "entropy": "entropy",
    "step time (s)": "step_time",
}

SMOOTH = 10  # steps in the reward's trailing mean
SMOOTHED = f"reward, mean of the last {SMOOTH} steps"

Line = tuple[list[float], list[float]]  # steps, values


def trailing_mean(ys: Sequence[float], window: int = SMOOTH) -> list[float]:
    """Mean of each value and the ``window - 1`` before it (fewer at the start)."""
    spans = (ys[max(0, i + 1 - window) : i + 1] for i in range(len(ys)))
    return [sum(span) / len(span) for span in spans]


def rl_dir(out: Path) -> Path:
    """The RL output folder of ``out``: itself when it holds the log, else ``out/rl`` (an experiment)."""
    return out if (out / "log.jsonl").is_file() else out / "rl"


def rl_steps(out: Path) -> list[dict[str, Any]]:
    path = rl_dir(out) / "log.jsonl"
    if not path.is_file():
        return []
    return [r for r in (json.loads(x) for x in path.read_text().splitlines() if x.strip()) if "reward" in r]


def run_label(out: Path) -> str:
    """``<advantage method> seed <seed>`` from the run's saved config, else the folder's name."""
    path = rl_dir(out) / RUN_CONFIG
    if not path.is_file():
        return out.name
    cfg = json.loads(path.read_text(encoding="utf-8"))
    method = (cfg.get("advantage") or {}).get("method", "?")
    return f"{method} seed {(cfg.get('grpo') or {}).get('seed', '?')}"


def run_curves(runs: Sequence[Path]) -> dict[str, dict[str, Line]]:
    """Per panel, per run label, the logged steps and values (a run without the metric has no line;
    runs of the same label are told apart by their folder names)."""
    labels = [run_label(r) for r in runs]
    labels = [f"{lab} ({r.name})" if labels.count(lab) > 1 else lab for lab, r in zip(labels, runs, strict=True)]
    out: dict[str, dict[str, Line]] = {title: {} for title in CURVES}
    for label, run in zip(labels, runs, strict=True):
        steps = rl_steps(run)
        for title, key in CURVES.items():
            points = [(float(s.get("step", i)), float(s[key])) for i, s in enumerate(steps, 1) if s.get(key) is not None]
            if points:
                out[title][label] = ([x for x, _ in points], [y for _, y in points])
    out[SMOOTHED] = {label: (xs, trailing_mean(ys)) for label, (xs, ys) in out["reward"].items()}
    return out


def plot_runs(runs: Sequence[Path], path: Path) -> dict[str, dict[str, Line]]:
    """Draw ``run_curves(runs)`` as a grid of panels into the PNG ``path``; returns what was drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = run_curves(runs)
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = 4
    rows = -(-len(curves) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.0 * cols, 3.2 * rows), squeeze=False)
    try:
        flat = list(axes.flat)
        for ax, (title, lines) in zip(flat, curves.items(), strict=False):
            for label, (xs, ys) in lines.items():
                ax.plot(xs, ys, marker="o" if len(xs) < 20 else None, markersize=3, label=label)
            ax.set_title(title)
            ax.set_xlabel("step")
            if not lines:
                ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
        for ax in flat[len(curves):]:
            ax.axis("off")
        handles, labels = flat[0].get_legend_handles_labels()
        if handles:  # above the panels: every slot of the grid may hold one
            fig.legend(handles, labels, loc="upper center", ncol=min(len(handles), 6), fontsize=8)
        fig.tight_layout(rect=(0.0, 0.0, 1.0, 0.93))
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return curves


def curve_lines(steps: list[dict[str, Any]]) -> list[str]:
    cols = ("step", "reward", "reward_std", "frac_reward_zero_std", "episode/answered", "episode/valid_call_rate",
            "episode/folds", "episode/peak_context_tokens", "step_time")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for i, s in enumerate(steps, 1):
        vals = [s.get("step", i) if c == "step" else s.get(c) for c in cols]
        lines.append("| " + " | ".join("-" if v is None else f"{v:.3g}" for v in vals) + " |")
    return lines


def summary_lines(out: Path) -> list[str]:
    lines = []
    results = out / "results.json"
    if results.is_file():
        r = json.loads(results.read_text())
        for key in ("sft", "rl"):
            if key in r:
                x = r[key]
                sps = x.get("seconds_per_step") or x.get("s_per_step")
                tps = x.get("tokens_per_second") or x.get("tokens_per_s")
                lines.append(f"{key}: {x.get('global_step', x.get('steps'))} steps, "
                             f"{sps:.2f} s/step ({1 / sps:.3f} steps/s), {tps or 0:.0f} tokens/s" if sps else f"{key}: -")
        for name in ("base", "eval-sft", "eval-rl"):
            if name in r:
                e = r[name]
                lines.append(f"{name}: n={e.get('n', 0):.0f} reward {e.get('reward', 0):+.3f} f1 {e.get('f1', 0):.3f} "
                             f"answered {e.get('answered', 0):.2f} valid calls {e.get('valid_call_rate', 0):.2f} "
                             f"folds {e.get('folds', 0):.2f}")
    return lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m training.curves", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="RL output folders (or experiment folders holding rl/)")
    p.add_argument("--out", type=Path, default=None, help="draw every run's curves into this PNG")
    a = p.parse_args(argv)
    if a.out is not None:
        curves = plot_runs(a.runs, a.out)
        print(f"{a.out}: {len(a.runs)} runs, {sum(1 for lines in curves.values() if lines)} of {len(curves)} metrics logged")
        return
    for out in a.runs:
        steps = rl_steps(out)
        print("\n".join(summary_lines(out)))
        print(f"RL reward curve of {out} ({len(steps)} logged steps):")
        print("\n".join(curve_lines(steps)))


if __name__ == "__main__":
    main()
