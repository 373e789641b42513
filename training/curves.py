"""Print a training run's speed and reward curve from its logs (``python -m training.curves OUT``).

Reads ``OUT/rl/log.jsonl`` (TRL's log history written by ``training.rl.run``) and, when present,
``OUT/results.json`` of ``training.experiment``: steps/s, tokens/s, and per step the reward, its
spread, the share of degenerate groups, answers, folds and peak context.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def rl_steps(out: Path) -> list[dict[str, Any]]:
    path = out / "rl" / "log.jsonl"
    if not path.is_file():
        return []
    return [r for r in (json.loads(x) for x in path.read_text().splitlines() if x.strip()) if "reward" in r]


def curve_lines(steps: list[dict[str, Any]]) -> list[str]:
    cols = ("step", "reward", "reward_std", "frac_reward_zero_std", "episode/answered", "episode/folds",
            "episode/peak_context_tokens", "step_time")
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
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        raise SystemExit("usage: python -m training.curves OUT_DIR")
    out = Path(args[0])
    steps = rl_steps(out)
    print("\n".join(summary_lines(out)))
    print(f"RL reward curve ({len(steps)} logged steps):")
    print("\n".join(curve_lines(steps)))


if __name__ == "__main__":
    main()
