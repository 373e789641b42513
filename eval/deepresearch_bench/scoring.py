"""DeepResearch Bench II scores, as the official `aggregate_scores.py` computes them.

Per task: for each dimension, the share of its judged items scored 1; `total` = share of 1s over all
judged items; `blocked_rate` = share of -1s over all judged items. Across tasks: the plain mean of the
per-task values (a dimension with no judged items is left out of that dimension's mean). Items the
judge never scored (None) are outside every denominator and reported as `unjudged`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from eval.deepresearch_bench.loader import DIMENSIONS

SCORE_KEYS = (*DIMENSIONS, "total", "blocked_rate")


def task_scores(items: Iterable[Mapping[str, Any]]) -> dict[str, float | int | None]:
    """Scores of one task from its item judgments ({"dimension", "score"} mappings)."""
    ones: dict[str, int] = defaultdict(int)
    judged: dict[str, int] = defaultdict(int)
    minus = unjudged = 0
    for it in items:
        score = it.get("score")
        if score is None:
            unjudged += 1
            continue
        if score not in (1, 0, -1):
            raise ValueError(f"rubric score must be 1, 0 or -1 (got {score!r})")
        dim = str(it["dimension"])
        judged[dim] += 1
        ones[dim] += score == 1
        minus += score == -1
    total = sum(judged.values())
    out: dict[str, float | int | None] = {d: (ones[d] / judged[d] if judged[d] else None) for d in DIMENSIONS}
    out["total"] = sum(ones.values()) / total if total else None
    out["blocked_rate"] = minus / total if total else None
    out["n_items"] = total + unjudged
    out["unjudged"] = unjudged
    return out


def _mean(values: Sequence[float | int | None]) -> float | None:
    nums = [float(v) for v in values if v is not None]
    return sum(nums) / len(nums) if nums else None


def mean_scores(tasks: Sequence[Mapping[str, Any]]) -> dict[str, float | int | None]:
    """Mean per score key over tasks ({"scores": {...}} records), with task and unjudged counts."""
    out: dict[str, float | int | None] = {k: _mean([t["scores"].get(k) for t in tasks]) for k in SCORE_KEYS}
    out["n_tasks"] = len(tasks)
    out["unjudged"] = sum(int(t["scores"].get("unjudged") or 0) for t in tasks)
    return out


def aggregate(tasks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Overall, per-theme and per-language means over task records ({idx, theme, language, scores})."""
    by_theme: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    by_lang: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for t in tasks:
        by_theme[str(t.get("theme", ""))].append(t)
        by_lang[str(t.get("language", ""))].append(t)
    return {
        "overall": mean_scores(tasks),
        "by_theme": {k: mean_scores(v) for k, v in sorted(by_theme.items())},
        "by_language": {k: mean_scores(v) for k, v in sorted(by_lang.items())},
    }
