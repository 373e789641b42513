"""The agent benchmark's table, read from the harness's result rows (`results.jsonl` of a set).

One row per system: EM, F1, the policy's tool calls and distinct tools per question, the share of final
answers given by the model policy's own `answer` action, valid calls (turns with a usable call among all
turns), invalid turns, model folds, guard folds, unfolds per question, evaluated prompt tokens per
question, seconds per question (mean and median) and, where a suggestion was shown, how many the model
followed. Means are over the questions answered without an error; errors are counted beside them.

Per question type (causal, temporal, bridge, comparison, other), EM and F1 of each system, and the gap
of the model policy to the workflow policy (model − workflow, in points) on each type.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

CATEGORIES = ("causal", "temporal", "bridge", "comparison", "other")
# question types written otherwise in question files (HotpotQA's "bridge" / "comparison" are as they are)
ALIASES = {
    "cause": "causal",
    "why": "causal",
    "time": "temporal",
    "date": "temporal",
    "compare": "comparison",
}

Row = dict[str, Any]


def category(question_type: str | None) -> str:
    """The benchmark's type of a question, from the set's own type field."""
    kind = (question_type or "").strip().lower()
    kind = ALIASES.get(kind, kind)
    if kind in CATEGORIES:
        return kind
    if (
        kind[:1].isdigit() and "hop" in kind
    ):  # MuSiQue's "2hop", "3hop1"…: single hops chained by a bridge entity
        return "bridge"
    return "other"


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return statistics.fmean(vals) if vals else None


def _stat(rows: Sequence[Row], key: str) -> float | None:
    return _mean((r.get("stats") or {}).get(key) for r in rows)


def _metric(rows: Sequence[Row], key: str) -> float | None:
    return _mean((r.get("metrics") or {}).get(key) for r in rows)


def _total(rows: Sequence[Row], key: str) -> int:
    return int(sum((r.get("stats") or {}).get(key) or 0 for r in rows))


def summarize_run(rows: Sequence[Row]) -> dict[str, Any]:
    """The table's numbers for one system's rows (errors left out of the means, counted)."""
    ok = [r for r in rows if not r.get("error")]
    calls, invalid = _total(ok, "tool_calls"), _total(ok, "invalid_turns")
    has_policy = any("tool_calls" in (r.get("stats") or {}) for r in ok)
    elapsed = [float(r["elapsed_s"]) for r in ok if r.get("elapsed_s") is not None]
    evaluated = _stat(ok, "evaluated_prompt_tokens")
    return {
        "n": len(ok),
        "errors": len(rows) - len(ok),
        "em": _metric(ok, "em"),
        "f1": _metric(ok, "f1"),
        "tool_calls": _stat(ok, "tool_calls"),
        "distinct_tools": _stat(ok, "distinct_tools"),
        "model_answers": _stat(ok, "model_answer"),
        "valid_calls": calls / (calls + invalid) if has_policy and calls + invalid else None,
        "invalid_turns": _stat(ok, "invalid_turns"),
        "model_folds": _stat(ok, "folds"),
        "guard_folds": _stat(ok, "guard_folds"),
        "unfolds": _stat(ok, "unfolds"),
        "evaluated_tokens": evaluated if evaluated is not None else _stat(ok, "prompt_tokens"),
        "s_per_q": _mean(elapsed),
        "median_s": statistics.median(elapsed) if elapsed else None,
        "suggestions": (_total(ok, "suggestions_followed"), _total(ok, "suggestions_shown")),
    }


COLUMNS = (  # (header, summary key, decimals); percentages are shares × 100
    ("EM", "em", 3), ("F1", "f1", 3), ("tool calls/q", "tool_calls", 2), ("distinct tools/q", "distinct_tools", 2),
    ("answers by model %", "model_answers", -1), ("valid calls %", "valid_calls", -1),
    ("invalid/q", "invalid_turns", 2), ("model folds/q", "model_folds", 2), ("guard folds/q", "guard_folds", 2),
    ("unfolds/q", "unfolds", 2), ("evaluated tok/q", "evaluated_tokens", 0), ("s/q", "s_per_q", 1),
    ("median s/q", "median_s", 1),
)  # fmt: skip


def _cell(value: float | None, digits: int) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.0f}" if digits < 0 else f"{value:.{digits}f}"


def by_run(records: Iterable[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in records:
        out.setdefault(str(r["run"]), []).append(r)
    return out


def render_table(records: Sequence[Row], order: Sequence[str] = ()) -> str:
    """The systems side by side (in `order`, then any other run of the rows)."""
    runs = by_run(records)
    names = [n for n in order if n in runs] + sorted(set(runs) - set(order))
    header = ["system", "n", "errors", *(h for h, _, _ in COLUMNS), "suggestions followed/shown"]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for name in names:
        s = summarize_run(runs[name])
        followed, shown = s["suggestions"]
        cells = [name, str(s["n"]), str(s["errors"]), *(_cell(s[key], d) for _, key, d in COLUMNS)]
        cells.append(f"{followed}/{shown}" if shown else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def type_scores(records: Sequence[Row]) -> dict[str, dict[str, dict[str, Any]]]:
    """run -> type -> {n, em, f1} over the rows answered without an error."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for run, rows in by_run(records).items():
        ok = [r for r in rows if not r.get("error")]
        for kind in CATEGORIES:
            of_kind = [r for r in ok if category(r.get("question_type")) == kind]
            if of_kind:
                out.setdefault(run, {})[kind] = {
                    "n": len(of_kind),
                    "em": _metric(of_kind, "em"),
                    "f1": _metric(of_kind, "f1"),
                }
    return out


def type_gaps(
    records: Sequence[Row], model: str = "model", workflow: str = "workflow"
) -> list[dict[str, Any]]:
    """Per type both runs answered: EM and F1 of each, and model − workflow in points (None: a side
    has no score). Types neither run has are left out."""
    scores = type_scores(records)
    mine, base = scores.get(model, {}), scores.get(workflow, {})
    gaps = []
    for kind in CATEGORIES:
        if kind not in mine or kind not in base:
            continue
        row: dict[str, Any] = {"type": kind, "n": mine[kind]["n"]}
        for key in ("em", "f1"):
            a, b = mine[kind][key], base[kind][key]
            row[f"{model}_{key}"], row[f"{workflow}_{key}"] = a, b
            row[f"gap_{key}"] = None if a is None or b is None else 100 * (a - b)
        gaps.append(row)
    return gaps


def render_by_type(
    records: Sequence[Row], order: Sequence[str] = (), model: str = "model", workflow: str = "workflow"
) -> str:
    """EM / F1 per question type for every system, then the model policy's gap to the workflow policy."""
    scores = type_scores(records)
    names = [n for n in order if n in scores] + sorted(set(scores) - set(order))
    kinds = [k for k in CATEGORIES if any(k in scores[n] for n in names)]
    lines = [
        "| system | " + " | ".join(f"{k} EM / F1 (n)" for k in kinds) + " |",
        "|---|" + "---:|" * len(kinds),
    ]
    for name in names:
        cells = [
            f"{_cell(v['em'], 2)} / {_cell(v['f1'], 2)} ({v['n']})" if (v := scores[name].get(k)) else "–"
            for k in kinds
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    gaps = type_gaps(records, model, workflow)
    if gaps:
        lines += ["", f"Gap {model} − {workflow} per type (points): "
                  + "; ".join(f"{g['type']} EM {_cell(g['gap_em'], 0)}, F1 {_cell(g['gap_f1'], 0)} (n {g['n']})" for g in gaps)]  # fmt: skip
    return "\n".join(lines) + "\n"
