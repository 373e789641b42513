"""Benchmark rows from agent runs (overflow as failure, early stops) and the paired fold/ReAct table."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agent.state import Counters, Evidence, RunState
from eval.longhorizon.runs import overflowed, run_row, stopped_early
from eval.longhorizon.table import paired, render_table, summary
from eval.longhorizon.tasks import CompositeTask, SubQuestion, render_request


@pytest.fixture
def task() -> CompositeTask:
    subs = [
        SubQuestion(
            n=1,
            qid="a",
            question="Who founded Quillon Press?",
            answers=["Harriet Vance"],
            gold_passage_ids=["d1"],
        ),
        SubQuestion(
            n=2, qid="b", question="Where is the Velora Bridge?", answers=["Marnis"], gold_passage_ids=["d2"]
        ),
    ]
    return CompositeTask(
        task_id="t-k2-01", dataset="toy", k=2, seed=0, request=render_request(["x", "y"]), sub_questions=subs
    )


REPORT = "## 1. Who founded Quillon Press?\nAnswer: Harriet Vance [c:c1]\n\n## 2\nAnswer: Paris [c:c7]\n"


def result(
    status: str = "answered", stop: str = "answer tool", peak: int = 900, **counters: int
) -> SimpleNamespace:
    run = RunState(
        question="q",
        status=status,
        stop_reason=stop,
        evidence={"c1": Evidence(chunk_id="c1", doc_id="d1")},
        counters=Counters(peak_context_tokens=peak, context_samples=[peak // 2, peak], **counters),
    )
    return SimpleNamespace(run=run, report=REPORT, wall_s=12.5)


def test_row_scores_the_report_and_resolves_citations_through_the_backend(task):
    lookup = {"c7": SimpleNamespace(doc_id="d9")}.get
    row = run_row(task, "fold", result(folds=2, guard_folds=1, unfolds=1), window=1000, lookup=lookup)
    assert row["em"] == 0.5 and row["found"] == 1.0 and not row["overflowed"] and not row["stopped_early"]
    assert row["subs"][0]["cited"] == ["d1"] and row["subs"][1]["cited"] == ["d9"]
    assert row["citation_precision"] == 0.5 and row["report_citation_precision"] == 0.5
    assert (row["model_folds"], row["guard_folds"], row["unfolds"]) == (2, 1, 1)
    assert row["mean_ctx"] == 675 and row["wall_s"] == 12.5


def test_overflowed_run_counts_as_failure_but_keeps_its_raw_scores(task):
    row = run_row(
        task,
        "react",
        result(status="failed", stop="LLM error: exceed context window", peak=1200),
        window=1000,
    )
    assert row["overflowed"] and row["stopped_early"]
    assert row["em"] == 0.0 and row["f1"] == 0.0 and row["citation_precision"] is None
    assert row["raw_scores"]["em"] == 0.5


def test_overflow_and_early_stop_rules():
    assert overflowed(1200, 1000, "answered", "answer tool")
    assert overflowed(800, None, "failed", "LLM error: This model's maximum context length is 8192 tokens")
    assert not overflowed(800, 1000, "failed", "LLM error: connection refused")
    assert stopped_early("forced", "3 failed steps in a row") and stopped_early("failed", "LLM error")
    assert not stopped_early("forced", "step cap of 30 reached") and not stopped_early(
        "answered", "answer tool"
    )


def make_row(task_id: str, system: str, f1: float, peak: int, **extra: object) -> dict[str, object]:
    base = {
        "task_id": task_id, "k": 4, "system": system, "em": f1, "f1": f1, "hit": f1, "found": 1.0,
        "citation_precision": None, "peak_ctx": peak, "mean_ctx": peak / 2, "prompt_tokens": 10 * peak,
        "evaluated_prompt_tokens": None, "wall_s": 100.0, "model_folds": 0, "guard_folds": 0, "unfolds": 0,
        "overflowed": False, "stopped_early": False,
    }  # fmt: skip
    return base | extra


def test_table_pairs_tasks_and_reports_ratios():
    rows = [
        make_row("t1", "fold", 0.5, 2000, model_folds=3, guard_folds=1, citation_precision=1.0),
        make_row("t1", "react", 0.5, 8000, overflowed=True, stopped_early=True),
        make_row("t2", "fold", 0.3, 2000, model_folds=1, guard_folds=3, citation_precision=0.5),
        make_row("t2", "react", 0.4, 4000),
        make_row("t3", "fold", 1.0, 100),  # ReAct has not run t3 yet: left out of both
    ]
    pair = paired(rows, 4)
    assert [r["task_id"] for r in pair["fold"]] == ["t1", "t2"] == [r["task_id"] for r in pair["react"]]
    fold, react = summary(pair["fold"]), summary(pair["react"])
    assert fold["f1"] == pytest.approx(0.4) and fold["cite_p"] == 0.75 and fold["cited_runs"] == 2
    assert fold["model_fold_share"] == 0.5 and react["overflowed"] == 1 and react["stopped_early"] == 1
    assert fold["prompt_tokens_kind"] == "all"
    text = render_table(rows, "title")
    assert "| 4 | fold/unfold | 2 | 0.400 | 0.400 |" in text and "| 1/2 | 1/2 |" in text
    assert "peak context 0.33" in text and "F1 fold − ReAct -5.0 points" in text
    assert "model-initiated share of folds 0.50" in text


def test_evaluated_prompt_tokens_are_preferred_when_the_agent_counts_them():
    rows = [make_row("t1", "fold", 0.5, 2000, evaluated_prompt_tokens=700)]
    assert summary(rows)["prompt_tokens"] == 700 and summary(rows)["prompt_tokens_kind"] == "evaluated"
