"""The long-horizon benchmark table: fold with unfold, fold without the unfold tool, and plain ReAct, per k,
over the tasks every system present ran.

Scores and costs are means per task; F1 is given over all items, over the plain items and over the
cross-reference items; overflowed and early-stopped runs are counts out of the tasks; citation precision
is the mean over the runs whose sections cite anything (their number beside it); "unfold on x-ref" counts
the cross-reference items during which the run called unfold, out of all of them; "folded on its own" the
tasks with at least one model fold. Under each k: fold / ReAct ratios of the context and cost columns, the
F1 differences in points, and cross-reference F1 with unfold against the same tasks with unfold disabled.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

SYSTEMS = ("fold", "fold-nounfold", "react")
LABELS = {"fold": "fold/unfold", "fold-nounfold": "fold, no unfold", "react": "ReAct (--no-fold)"}


def _mean(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.fmean(vals) if vals else None


def _fmt(value: float | None, nd: int) -> str:
    return "–" if value is None else f"{value:.{nd}f}"


def paired(rows: Sequence[dict[str, Any]], k: int) -> dict[str, list[dict[str, Any]]]:
    """Rows of k for each system that has any, restricted to the tasks all of those have a row for."""
    by = {s: {r["task_id"]: r for r in rows if r["k"] == k and r["system"] == s} for s in SYSTEMS}
    present = {s: v for s, v in by.items() if v}
    common = set.intersection(*(set(v) for v in present.values())) if present else set()
    return {s: [v[t] for t in sorted(common)] for s, v in present.items()}


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means/counts of one system's rows (the table's cells, as numbers)."""
    cited = [r for r in rows if r.get("citation_precision") is not None]
    evaluated = _mean(rows, "evaluated_prompt_tokens")
    model, guard = sum(r["model_folds"] for r in rows), sum(r["guard_folds"] for r in rows)
    return {
        "tasks": len(rows),
        **{key: _mean(rows, key) for key in ("em", "f1", "f1_plain", "f1_xref", "em_xref", "hit", "found")},
        "cite_p": _mean(cited, "citation_precision"),
        "cited_runs": len(cited),
        "peak_ctx": _mean(rows, "peak_ctx"),
        "mean_ctx": _mean(rows, "mean_ctx"),
        "prompt_tokens": evaluated if evaluated is not None else _mean(rows, "prompt_tokens"),
        "prompt_tokens_kind": "evaluated" if evaluated is not None else "all",
        "wall_s": _mean(rows, "wall_s"),
        **{key: _mean(rows, key) for key in ("model_folds", "guard_folds", "unfolds")},
        "model_fold_share": model / (model + guard) if model + guard else None,
        "folded_tasks": sum(bool(r["model_folds"]) for r in rows),
        "xref_items": sum(r.get("xref_items") or 0 for r in rows),
        "xref_unfolded": sum(len(r.get("xref_unfold_items") or []) for r in rows),
        "overflowed": sum(bool(r["overflowed"]) for r in rows),
        "stopped_early": sum(bool(r["stopped_early"]) for r in rows),
    }


HEADER = (
    "| k | system | tasks | sub-q EM | F1 | F1 plain | F1 x-ref | answer hit | sections found "
    "| citation precision (runs) | peak ctx | mean ctx | prompt tokens | wall s / task | model folds "
    "| guard folds | unfolds | folded on its own | unfold on x-ref | overflowed | stopped early |"
)


def _line(k: int, system: str, s: dict[str, Any]) -> str:
    n = s["tasks"]
    cells = [
        str(k), LABELS[system], str(n), _fmt(s["em"], 3), _fmt(s["f1"], 3), _fmt(s["f1_plain"], 3),
        _fmt(s["f1_xref"], 3), _fmt(s["hit"], 3), _fmt(s["found"], 2), f"{_fmt(s['cite_p'], 3)} ({s['cited_runs']})",
        _fmt(s["peak_ctx"], 0), _fmt(s["mean_ctx"], 0), _fmt(s["prompt_tokens"], 0), _fmt(s["wall_s"], 1),
        _fmt(s["model_folds"], 2), _fmt(s["guard_folds"], 2), _fmt(s["unfolds"], 2), f"{s['folded_tasks']}/{n}",
        f"{s['xref_unfolded']}/{s['xref_items']}", f"{s['overflowed']}/{n}", f"{s['stopped_early']}/{n}",
    ]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a is not None and b else "–"


def _points(a: float | None, b: float | None) -> str:
    return _fmt((a - b) * 100, 1) if a is not None and b is not None else "–"


def note(k: int, sums: dict[str, dict[str, Any]]) -> str:
    """The line under k's rows: fold against ReAct, unfold against unfold disabled."""
    f, r, nu = sums.get("fold"), sums.get("react"), sums.get("fold-nounfold")
    parts: list[str] = []
    if f and r:
        parts.append(
            f"fold / ReAct peak context {_ratio(f['peak_ctx'], r['peak_ctx'])}, mean context "
            f"{_ratio(f['mean_ctx'], r['mean_ctx'])}, prompt tokens {_ratio(f['prompt_tokens'], r['prompt_tokens'])} "
            f"({f['prompt_tokens_kind']}), wall time {_ratio(f['wall_s'], r['wall_s'])}; F1 fold − ReAct "
            f"{_points(f['f1'], r['f1'])} points (plain {_points(f['f1_plain'], r['f1_plain'])}, "
            f"cross-reference {_points(f['f1_xref'], r['f1_xref'])})"
        )
    if f and nu:
        parts.append(
            f"cross-reference F1 with unfold − without {_points(f['f1_xref'], nu['f1_xref'])} points"
        )
    if f:
        parts.append(
            f"unfold used on {f['xref_unfolded']} of {f['xref_items']} cross-reference items; the model folded "
            f"on its own in {f['folded_tasks']} of {f['tasks']} tasks; model-initiated share of folds "
            f"{_fmt(f['model_fold_share'], 2)}"
        )
    return f"- k = {k}: " + "; ".join(parts) if parts else ""


def render_table(rows: Sequence[dict[str, Any]], title: str) -> str:
    ks = sorted({r["k"] for r in rows})
    lines = [title, "", HEADER, _rule()]
    notes: list[str] = []
    for k in ks:
        pair = paired(rows, k)
        sums = {s: summary(v) for s, v in pair.items() if v}
        lines += [_line(k, s, sums[s]) for s in SYSTEMS if s in sums]
        notes.append(note(k, sums))
    return "\n".join([*lines, "", *(n for n in notes if n)]) + "\n"


def _rule() -> str:
    return "|" + "---|" * 2 + "---:|" * (HEADER.count("|") - 3)
