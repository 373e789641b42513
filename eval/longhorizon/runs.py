"""One benchmark row from one agent run on a composite task: the report's per-sub-question scores and
the run's cost and memory counters, read from `agent.runner.RunResult`.

Counters that only some agent versions keep are read when present and left None otherwise:
`evaluated_prompt_tokens` (prompt tokens the model evaluated, i.e. not reused from its KV cache; without
it the row falls back to all prompt tokens and says so), the plan's sub-questions and `answer_source`.

A run *overflowed* when a prompt it built was longer than the model's window (its peak context is over
the window, or the backend refused the prompt as too long); its scores count as zero (a failure). A run
*stopped early* when it ended on an error or on repeated failed steps, not on `answer` or the step cap.

Plain and cross-reference items are scored apart (`em_plain`/`f1_plain`, `em_xref`/`f1_xref`), and for
each cross-reference item the row says whether the run called `unfold` while that item was the one being
researched (its steps in the run's plan). `stats["trace"]` is the run's decision trace
(`eval.decisions.trace`), each turn marked with whether its item is a cross-reference item.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from typing import Any

from eval.decisions.trace import mark_crossref, trace_of
from eval.longhorizon.scoring import CHUNK_MARKER, ReportScore, score_report
from eval.longhorizon.tasks import CompositeTask

TOO_LONG = re.compile(r"context (window|length)|maximum context|too long|exceeds? ", re.I)
SCORE_KEYS = ("em", "f1", "hit", "mentioned", "found")


def chunk_docs_of(run: Any, report: str, lookup: Callable[[str], Any] | None = None) -> dict[str, str]:
    """chunk id -> doc id for every chunk the run saw, plus any other id the report cites that
    `lookup` (the backend's get_chunk) still finds."""
    out = {cid: ev.doc_id for cid, ev in run.evidence.items()}
    for cid in CHUNK_MARKER.findall(report):
        if cid not in out and lookup is not None:
            chunk = lookup(cid)
            if chunk is not None:
                out[cid] = chunk.doc_id
    return out


def overflowed(peak: int, window: int | None, status: str, stop_reason: str) -> bool:
    if window is not None and peak > window:
        return True
    return status == "failed" and bool(TOO_LONG.search(stop_reason))


def stopped_early(status: str, stop_reason: str) -> bool:
    return status == "failed" or (status == "forced" and "step cap" not in stop_reason)


def unfold_items(run: Any) -> list[int]:
    """The items (plan ids) during whose steps the run called `unfold`."""
    steps = {s.n for s in run.steps if any(c.name == "unfold" for c in s.assistant.tool_calls)}
    plan = getattr(run, "plan", None)
    subs = plan.sub_questions if plan is not None else []
    return [sq.id for sq in subs if steps & set(sq.steps)]


def split_scores(task: CompositeTask, score: ReportScore, over: bool) -> dict[str, Any]:
    """EM/F1 means over the plain items and over the cross-reference items (None: the task has none)."""
    xref = {sq.n for sq in task.sub_questions if sq.cross_reference}
    out: dict[str, Any] = {}
    for part, subs in (
        ("plain", [s for s in score.subs if s.n not in xref]),
        ("xref", [s for s in score.subs if s.n in xref]),
    ):
        for key in ("em", "f1"):
            out[f"{key}_{part}"] = (
                (0.0 if over else statistics.fmean(getattr(s, key) for s in subs)) if subs else None
            )
    out["xref_items"] = len(xref)
    return out


def counter_fields(run: Any) -> dict[str, Any]:
    c = run.counters
    return {
        "peak_ctx": c.peak_context_tokens,
        "mean_ctx": statistics.fmean(c.context_samples) if c.context_samples else 0.0,
        "prompt_tokens": c.prompt_tokens,
        "evaluated_prompt_tokens": getattr(c, "evaluated_prompt_tokens", None),
        "completion_tokens": c.completion_tokens,
        "llm_calls": c.llm_calls,
        "tool_calls": getattr(c, "tool_calls", None),
        "invalid_turns": getattr(c, "invalid_turns", None),
        "model_folds": c.folds,
        "guard_folds": c.guard_folds,
        "unfolds": c.unfolds,
        "tool_errors": c.tool_errors,
    }


def decision_trace(result: Any, xref: set[int]) -> list[dict[str, Any]]:
    """The run's decision trace, each turn marked with whether its item is a cross-reference item."""
    budget = getattr(getattr(result, "options", None), "context_budget", None)
    return mark_crossref(trace_of(result.run, budget), xref)


def run_row(
    task: CompositeTask,
    system: str,
    result: Any,
    *,
    window: int | None,
    lookup: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """The JSON row of one run (`result`: agent.runner.RunResult)."""
    run = result.run
    score: ReportScore = score_report(task, result.report, chunk_docs_of(run, result.report, lookup))
    over = overflowed(run.counters.peak_context_tokens, window, run.status, run.stop_reason)
    plan = getattr(run, "plan", None)
    xref = {sq.n for sq in task.sub_questions if sq.cross_reference}
    return {
        "task_id": task.task_id,
        "k": task.k,
        "system": system,
        "status": run.status,
        "stop_reason": run.stop_reason,
        "steps": len(run.steps),
        "overflowed": over,
        "stopped_early": stopped_early(run.status, run.stop_reason),
        **{key: 0.0 if over else getattr(score, key) for key in SCORE_KEYS},
        **split_scores(task, score, over),
        "xref_unfold_items": sorted(xref & set(unfold_items(run))),
        "citation_precision": None if over else score.citation_precision,
        "report_citation_precision": None if over else score.report_citation_precision,
        "cited_subs": score.cited_subs,
        "raw_scores": {key: getattr(score, key) for key in SCORE_KEYS},  # before the overflow rule
        **counter_fields(run),
        "plan_size": len(plan.sub_questions) if plan is not None else None,
        "answer_source": getattr(run, "answer_source", None),
        "reader_calls": getattr(run.counters, "reader_calls", None),
        "wall_s": result.wall_s,
        "stats": {"trace": decision_trace(result, xref)},
        "subs": [
            {"n": s.n, "answer": s.answer, "em": s.em, "f1": s.f1, "cited": s.cited_docs} for s in score.subs
        ],
    }
