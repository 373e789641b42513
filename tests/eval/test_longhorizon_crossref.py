"""Cross-reference items: deterministic, on a detail only the referenced item's gold passage holds; their
rows (plain vs cross-reference F1, unfold used on them) and the three-system table."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from agent.llm import Message, ToolCall
from agent.plan import Plan
from agent.plan import SubQuestion as Item
from agent.state import Counters, RunState, Step
from eval.longhorizon.crossref import BLANK, CROSS_REFERENCE, details, quote
from eval.longhorizon.runs import run_row
from eval.longhorizon.table import render_table, summary
from eval.longhorizon.tasks import build_tasks, load_tasks, save_tasks
from eval.multihop.metrics import normalize_answer
from eval.multihop.schema import Passage, QADataset, QAExample

CITIES = ["Arlen", "Brisk", "Corvo", "Dunmere", "Estry", "Falk", "Gorran", "Hale", "Istor", "Jarn"]


def make_set() -> QADataset:
    """Ten two-hop questions; each gold passage holds a founding year, a population and a founder's
    name of its own, and the town's name (the answer) that a shared passage repeats."""
    examples, passages = [], []
    for i, city in enumerate(CITIES):
        passages.append(
            Passage(
                passage_id=f"p{i}",
                title=f"{city} Museum",
                text=f"The {city} Museum was founded in {1801 + i} by Mara Quill{chr(97 + i)}son. "
                f"It lies in {city}, a town of {12000 + 37 * i} people.",
            )
        )
        passages.append(
            Passage(passage_id=f"s{i}", title=f"{city} river", text=f"The river runs past {city}.")
        )
        examples.append(
            QAExample(
                qid=f"q{i}",
                question=f"In which town is the museum on the river of town {i}?",
                answers=[city],
                gold_passage_ids=[f"p{i}", f"s{i}"],
                gold_titles=[f"{city} Museum", f"{city} river"],
            )  # fmt: skip
        )
    return QADataset(name="toy", examples=examples, passages=passages)


def test_details_are_years_numbers_and_names_in_order():
    text = "Arthur's Magazine (1844–1846) was printed in the 19th century by Timothy Shay Arthur in 1,200 copies."
    found = [(d.kind, d.text) for d in details(text)]
    assert found == [("year", "1844"), ("year", "1846"), ("name", "Timothy Shay Arthur"), ("number", "1,200")]
    first = details(text)[0]
    assert (
        quote(text, first)
        == f"Arthur's Magazine ({BLANK}–1846) was printed in the 19th century by Timothy Shay Arthur in"
    )


def test_names_stay_on_one_line_and_dates_give_only_their_year():
    text = "# The HT-Core Element\nDate: 2016-04-12\nOn 12 April 2016 Anna Berg met Ulla de Vries; 450 units."
    found = [(d.kind, d.text) for d in details(text)]
    assert found == [
        ("year", "2016"),
        ("year", "2016"),
        ("name", "Anna Berg"),
        ("name", "Ulla de Vries"),
        ("number", "450"),
    ]


def test_a_detail_the_quote_writes_again_is_not_asked():
    ds = make_set()
    for p in ds.passages:  # the founding year now also stands in the words right after it
        p.text = re.sub(r"founded in (\d{4})", r"founded in \1 (the charter says \1)", p.text)
    x = build_tasks(ds, [4], 1, seed=0, cross_refs=1)[0].sub_questions[-1]
    assert x.answers[0].startswith("Mara Quill") and BLANK in x.question


def test_cross_reference_items_are_deterministic_and_need_the_referenced_evidence():
    ds = make_set()
    tasks = build_tasks(ds, [4, 6], 3, seed=1, cross_refs=2)
    assert [t.model_dump() for t in tasks] == [
        t.model_dump() for t in build_tasks(ds, [4, 6], 3, seed=1, cross_refs=2)
    ]
    passages = {p.passage_id: p.text for p in ds.passages}
    for task in tasks:
        plain = [sq for sq in task.sub_questions if not sq.cross_reference]
        xrefs = [sq for sq in task.sub_questions if sq.cross_reference]
        assert len(plain) == task.k and len(xrefs) == 2 and task.qids == [sq.qid for sq in plain]
        assert [sq.n for sq in task.sub_questions] == list(
            range(1, task.k + 3)
        )  # numbered after the k questions
        assert len({x.refers_to for x in xrefs}) == 2
        for x in xrefs:
            ref = plain[x.refers_to - 1]
            assert x.refers_to <= (task.k + 1) // 2 and x.question_type == CROSS_REFERENCE
            assert (
                x.question.startswith(f"Question {x.refers_to} drew on the passage") and BLANK in x.question
            )
            detail = normalize_answer(x.answers[0])
            assert x.gold_passage_ids[0] in ref.gold_passage_ids and detail in normalize_answer(
                passages[x.gold_passage_ids[0]]
            )
            others = [pid for sq in plain if sq.n != ref.n for pid in sq.gold_passage_ids]
            assert all(detail not in normalize_answer(passages[pid]) for pid in others)
            assert all(detail not in normalize_answer(a) for sq in plain for a in sq.answers)
            assert f"{x.n}. {x.question}" in task.request


def test_the_earliest_usable_detail_is_taken_and_repeated_details_are_not():
    ds = make_set()
    for p in ds.passages:  # every museum now shares its founding year: the year is no longer only theirs
        p.text = re.sub(r"founded in \d{4}", "founded in 1800", p.text)
    task = build_tasks(ds, [4], 1, seed=0, cross_refs=1)[0]
    x = task.sub_questions[-1]
    assert x.answers[0].startswith("Mara Quill")  # the founder's name comes next in the passage


def test_cross_references_leave_the_plain_questions_and_survive_a_round_trip(tmp_path):
    ds = make_set()
    plain = build_tasks(ds, [4], 2, seed=3)
    crossed = build_tasks(ds, [4], 2, seed=3, cross_refs=1)
    assert [t.qids for t in plain] == [t.qids for t in crossed]
    assert [t.task_id for t in crossed] == ["toy-k4-s3-01-x1", "toy-k4-s3-02-x1"]
    save_tasks(crossed, tmp_path / "tasks.jsonl")
    assert load_tasks(tmp_path / "tasks.jsonl") == crossed


def _step(n: int, tool: str) -> Step:
    call = ToolCall(id=f"c{n}", name=tool, arguments={})
    return Step(n=n, assistant=Message(role="assistant", tool_calls=[call]))


def test_row_splits_plain_and_cross_reference_scores_and_sees_unfold_on_the_item():
    task = build_tasks(make_set(), [2], 1, seed=0, cross_refs=1)[0]
    q1, q2, x = task.sub_questions
    report = (f"## 1. {q1.question}\nAnswer: {q1.answers[0]}\n\n## 2. {q2.question}\nAnswer: wrong\n\n"
              f"## 3. {x.question}\nAnswer: {x.answers[0]}\n")  # fmt: skip
    plan = Plan(sub_questions=[Item(id=1, text="a", steps=[1, 2]), Item(id=2, text="b", steps=[3, 4]),
                               Item(id=3, text="c", steps=[5, 6, 7])])  # fmt: skip
    steps = [_step(1, "search"), _step(2, "answer"), _step(3, "fold"), _step(4, "answer"),
             _step(5, "unfold"), _step(6, "read"), _step(7, "answer")]  # fmt: skip
    run = RunState(
        question="q", steps=steps, plan=plan, status="answered", counters=Counters(peak_context_tokens=10)
    )
    row = run_row(task, "fold", SimpleNamespace(run=run, report=report, wall_s=1.0), window=None)
    assert (
        row["f1_plain"] == 0.5 and row["f1_xref"] == 1.0 and row["em_xref"] == 1.0 and row["xref_items"] == 1
    )
    assert row["xref_unfold_items"] == [3]
    steps[4] = _step(5, "search")  # researched again instead of unfolding
    row = run_row(
        task,
        "fold",
        SimpleNamespace(run=run.model_copy(update={"steps": steps}), report=report, wall_s=1.0),
        window=None,
    )
    assert row["xref_unfold_items"] == []


def row(task_id: str, system: str, f1_xref: float, peak: int, unfolded: list[int], model_folds: int) -> dict:
    return {
        "task_id": task_id, "k": 16, "system": system, "em": 0.5, "f1": 0.5, "f1_plain": 0.5, "f1_xref": f1_xref,
        "em_xref": f1_xref, "hit": 0.5, "found": 1.0, "citation_precision": None, "peak_ctx": peak,
        "mean_ctx": peak / 2, "prompt_tokens": 10 * peak, "evaluated_prompt_tokens": None, "wall_s": 10.0,
        "model_folds": model_folds, "guard_folds": 1, "unfolds": len(unfolded), "overflowed": False,
        "stopped_early": False, "xref_items": 1, "xref_unfold_items": unfolded,
    }  # fmt: skip


def test_table_compares_unfold_with_unfold_disabled_and_react():
    rows = [
        row("t1", "fold", 1.0, 2000, [17], 2), row("t2", "fold", 0.5, 2000, [], 0),
        row("t1", "fold-nounfold", 0.0, 2000, [], 2), row("t2", "fold-nounfold", 0.5, 2000, [], 1),
        row("t1", "react", 1.0, 8000, [], 0), row("t2", "react", 0.0, 8000, [], 0),
    ]  # fmt: skip
    fold = summary([r for r in rows if r["system"] == "fold"])
    assert fold["f1_xref"] == 0.75 and fold["xref_unfolded"] == 1 and fold["folded_tasks"] == 1
    text = render_table(rows, "title")
    assert "| 16 | fold/unfold | 2 | 0.500 | 0.500 | 0.500 | 0.750 |" in text
    assert "| 16 | fold, no unfold | 2 |" in text and "| 16 | ReAct (--no-fold) | 2 |" in text
    assert (
        "| 1/2 | 1/2 | 0/2 | 0/2 |" in text
    )  # folded on its own, unfold on x-ref, overflowed, stopped early
    assert "fold / ReAct peak context 0.25" in text and "cross-reference 25.0)" in text
    assert "cross-reference F1 with unfold − without 50.0 points" in text
    assert "unfold used on 1 of 2 cross-reference items; the model folded on its own in 1 of 2 tasks" in text


def test_table_of_fold_and_react_rows_only_still_pairs_them():
    rows = [row("t1", "fold", 1.0, 2000, [], 1), row("t1", "react", 0.0, 4000, [], 0)]
    text = render_table(rows, "title")
    assert (
        "fold, no unfold" not in text and "peak context 0.50" in text and "with unfold − without" not in text
    )


@pytest.mark.parametrize("cross_refs", [-1])
def test_negative_cross_reference_count_is_refused(cross_refs):
    from eval.longhorizon.tasks import TaskError

    with pytest.raises(TaskError, match="cannot be negative"):
        build_tasks(make_set(), [4], 1, cross_refs=cross_refs)
