"""The budget guard: the safety net that folds when the model does not.

With folding on, while the rendered context exceeds the budget the guard folds the oldest unfolded
span (never the newest `keep_recent_steps`, never steps the model has just unfolded), else merges the
two oldest active folds; each is counted as a guard fold, apart from the model's own folds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.state import RunState
from agent.tools import ToolContext
from agent.tools.fold import apply_fold
from eventfold.run_options import RunOptions


def guard_folds(
    run: RunState, ctx: ToolContext, count: Callable[[], int], options: RunOptions, emit: Callable[[dict[str, Any]], None]
) -> bool:
    """Fold until `count()` fits `options.context_budget` or nothing is left to fold; True if it folded."""
    tokens = count()
    changed = False
    while tokens > options.context_budget:
        last = len(run.steps) - options.keep_recent_steps
        spans = spare_fresh_unfolds(run, run.memory.uncovered_spans(last))
        if spans:
            start, end = spans[0]
        else:
            active = [f for f in run.memory.active() if f.end <= last]
            if len(active) < 2:
                break  # nothing left to fold: the prompt stays over budget
            start, end = active[0].start, active[1].end
        block = apply_fold(ctx, start, end, granularity="subtask", origin="guard")
        run.counters.guard_folds += 1
        changed = True
        before, tokens = tokens, count()
        emit({"type": "guard_fold", "fold_id": block.fold_id, "start": block.start, "end": block.end,
              "tokens_before": before, "tokens_after": tokens})  # fmt: skip
    return changed


def spare_fresh_unfolds(run: RunState, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Cut out of the guard's candidate spans the steps the model unfolded in its latest step, so it
    gets to read them before the guard may fold them again (partial reveals are never guard-folded
    either: they sit inside an active fold)."""
    fresh = [
        f for f in run.memory.folds.values() if f.status == "unfolded" and f.unfolded_at == len(run.steps)
    ]
    out: list[tuple[int, int]] = []
    for start, end in spans:
        for f in sorted(fresh, key=lambda f: f.start):
            if f.end < start or f.start > end:
                continue
            if start < f.start:
                out.append((start, f.start - 1))
            start = f.end + 1
        if start <= end:
            out.append((start, end))
    return out
