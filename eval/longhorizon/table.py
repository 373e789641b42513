"""The long-horizon benchmark table: fold/unfold vs plain ReAct per k, over the tasks both ran.

Scores and costs are means per task; overflowed and early-stopped runs are counts out of the tasks;
citation precision is the mean over the runs whose sections cite anything (their number beside it).
Under each k: fold / ReAct ratios of the context and cost columns, and the F1 difference in points.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

SYSTEMS = ("fold", "react")
LABELS = {"fold": "fold/unfold", "react": "ReAct (--no-fold)"}


def _mean(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.fmean(vals) if vals else None


def _fmt(value: float | None, nd: int) -> str:
    return "–" if value is None else f"{value:.{nd}f}"


def paired(rows: Sequence[dict[str, Any]], k: int) -> dict[str, list[dict[str, Any]]]:
    """Rows of k for each system, restricted to the tasks every system has a row for."""
    by = {s: {r["task_id"]: r for r in rows if r["k"] == k and r["system"] == s} for s in SYSTEMS}
    common = set.intersection(*(set(v) for v in by.values()))
    return {s: [by[s][t] for t in sorted(common)] for s in SYSTEMS}


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means/counts of one system's rows (the table's cells, as numbers)."""
    cited = [r for r in rows if r.get("citation_precision") is not None]
    evaluated = _mean(rows, "evaluated_prompt_tokens")
    model, guard = sum(r["model_folds"] for r in rows), sum(r["guard_folds"] for r in rows)
    return {
        "tasks": len(rows),
        "em": _mean(rows, "em"),
        "f1": _mean(rows, "f1"),
        "hit": _mean(rows, "hit"),
        "found": _mean(rows, "found"),
        "cite_p": _mean(cited, "citation_precision"),
        "cited_runs": len(cited),
        "peak_ctx": _mean(rows, "peak_ctx"),
        "mean_ctx": _mean(rows, "mean_ctx"),
        "prompt_tokens": evaluated if evaluated is not None else _mean(rows, "prompt_tokens"),
        "prompt_tokens_kind": "evaluated" if evaluated is not None else "all",
        "wall_s": _mean(rows, "wall_s"),
        "model_folds": _mean(rows, "model_folds"),
        "guard_folds": _mean(rows, "guard_folds"),
        "model_fold_share": model / (model + guard) if model + guard else None,
        "unfolds": _mean(rows, "unfolds"),
        "overflowed": sum(bool(r["overflowed"]) for r in rows),
        "stopped_early": sum(bool(r["stopped_early"]) for r in rows),
    }


HEADER = (
    "| k | system | tasks | sub-q EM | sub-q F1 | answer hit | sections found | citation precision (runs) "
    "| peak ctx | mean ctx | prompt tokens | wall s / task | model folds | guard folds | unfolds "
    "| overflowed | stopped early |"
)


def _line(k: int, system: str, s: dict[str, Any]) -> str:
    n = s["tasks"]
    cells = [
        str(k), LABELS[system], str(n), _fmt(s["em"], 3), _fmt(s["f1"], 3), _fmt(s["hit"], 3),
        _fmt(s["found"], 2), f"{_fmt(s['cite_p'], 3)} ({s['cited_runs']})", _fmt(s["peak_ctx"], 0),
        _fmt(s["mean_ctx"], 0), _fmt(s["prompt_tokens"], 0), _fmt(s["wall_s"], 1),
        _fmt(s["model_folds"], 2), _fmt(s["guard_folds"], 2), _fmt(s["unfolds"], 2),
        f"{s['overflowed']}/{n}", f"{s['stopped_early']}/{n}",
    ]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a is not None and b else "–"


def render_table(rows: Sequence[dict[str, Any]], title: str) -> str:
    ks = sorted({r["k"] for r in rows})
    lines = [title, "", HEADER, _rule()]
    notes: list[str] = []
    for k in ks:
        pair = paired(rows, k)
        sums = {s: summary(pair[s]) for s in SYSTEMS}
        lines += [_line(k, s, sums[s]) for s in SYSTEMS]
        f, r = sums["fold"], sums["react"]
        if f["tasks"]:
            share = _fmt(f["model_fold_share"], 2)
            f1_delta = (f["f1"] - r["f1"]) * 100 if f["f1"] is not None and r["f1"] is not None else None
            notes.append(
                f"- k = {k}: fold / ReAct peak context {_ratio(f['peak_ctx'], r['peak_ctx'])}, "
                f"mean context {_ratio(f['mean_ctx'], r['mean_ctx'])}, prompt tokens "
                f"{_ratio(f['prompt_tokens'], r['prompt_tokens'])} ({f['prompt_tokens_kind']}), wall time "
                f"{_ratio(f['wall_s'], r['wall_s'])}; sub-question F1 fold − ReAct "
                f"{_fmt(f1_delta, 1)} points; model-initiated share of folds {share}"
            )
    return "\n".join([*lines, "", *notes]) + "\n"


def _rule() -> str:
    return "|" + "---|" * 2 + "---:|" * (HEADER.count("|") - 3)
