"""Composite-task builder: deterministic in the seed, k questions each, no repeats, gold carried."""

from __future__ import annotations

import pytest

from eval.longhorizon.tasks import TaskError, build_tasks, eligible, load_tasks, save_tasks
from eval.multihop.loaders import resolve_dataset
from eval.multihop.schema import Passage, QADataset, QAExample


def make_set(n: int = 30) -> QADataset:
    examples = [
        QAExample(
            qid=f"q{i}",
            question=f"Which river flows past town number {i}?",
            answers=[f"River {i}", f"R{i}"],
            gold_titles=[f"Town {i}", f"River {i}"],
            gold_passage_ids=[f"p{i}a", f"p{i}b"],
            passage_ids=[f"p{i}a", f"p{i}b", f"p{i}x"],
        )
        for i in range(n)
    ]
    examples += [
        QAExample(qid="yn", question="Is town 1 older than town 2?", answers=["yes"], gold_titles=["Town 1"]),
        QAExample(qid="noans", question="Unanswerable?", answers=[], gold_titles=["Town 3"]),
        QAExample(
            qid="dup", question="which river flows past town number 3 ?", answers=["x"], gold_titles=["t"]
        ),
    ]
    passages = [Passage(passage_id=f"p{i}a", title=f"Town {i}", text=f"Town {i}.") for i in range(n)]
    return QADataset(name="toy", examples=examples, passages=passages)


def test_same_seed_same_tasks_other_seed_other_tasks():
    ds = make_set()
    a = build_tasks(ds, [4, 8], 10, seed=7)
    b = build_tasks(ds, [4, 8], 10, seed=7)
    assert [t.model_dump() for t in a] == [t.model_dump() for t in b]
    c = build_tasks(ds, [4, 8], 10, seed=8)
    assert [t.qids for t in a] != [t.qids for t in c]
    # the tasks of one k do not depend on the other ks asked for
    only8 = build_tasks(ds, [8], 10, seed=7)
    assert [t.qids for t in only8] == [t.qids for t in a if t.k == 8]


def test_k_questions_per_task_none_repeated_and_ids_stable():
    tasks = build_tasks(make_set(), range(4, 9), 10, seed=0)
    assert len(tasks) == 50
    for k in range(4, 9):
        of_k = [t for t in tasks if t.k == k]
        assert len(of_k) == 10
        assert len({t.task_id for t in of_k}) == 10
        for t in of_k:
            assert len(t.sub_questions) == k and len(set(t.qids)) == k
            assert [sq.n for sq in t.sub_questions] == list(range(1, k + 1))
    # k = 4: 40 questions from a pool of 30 -> the pool is dealt out fully before any repeats across tasks
    first = [q for t in tasks if t.k == 4 for q in t.qids][:30]
    assert len(set(first)) == 30


def test_gold_carried_and_request_lists_the_questions_in_order():
    ds = make_set()
    by_qid = {ex.qid: ex for ex in ds.examples}
    for t in build_tasks(ds, [5], 10, seed=3):
        for line_no, sq in enumerate(t.sub_questions, 1):
            ex = by_qid[sq.qid]
            assert sq.answers == ex.answers and sq.gold_passage_ids == ex.gold_passage_ids
            assert sq.gold_titles == ex.gold_titles and sq.question == ex.question
            assert f"\n{line_no}. {sq.question}" in t.request
        assert t.gold_passage_ids == {p for sq in t.sub_questions for p in sq.gold_passage_ids}


def test_eligibility_excludes_unanswerable_duplicates_and_yes_no():
    ds = make_set()
    ids = {ex.qid for ex in eligible(ds)}
    assert "noans" not in ids and "dup" not in ids and "yn" not in ids and len(ids) == 30
    assert "yn" in {ex.qid for ex in eligible(ds, include_yes_no=True)}


def test_small_pool_never_repeats_within_a_task():
    ds = make_set(5)
    for t in build_tasks(ds, [4, 5], 12, seed=1):
        assert len(set(t.qids)) == t.k


def test_bad_requests_are_refused():
    ds = make_set(2)  # q0, q1 and "dup" (no town 3 here, so no duplicate): 3 eligible
    with pytest.raises(TaskError, match="fewer than k"):
        build_tasks(ds, [4], 10)
    with pytest.raises(TaskError, match="between"):
        build_tasks(make_set(), [1], 10)
    with pytest.raises(TaskError, match="at least 1"):
        build_tasks(make_set(), [4], 0)


def test_save_load_round_trip(tmp_path):
    tasks = build_tasks(make_set(), [4], 3, seed=0)
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks, path)
    assert load_tasks(path) == tasks
    path.write_text("{not json}\n")
    with pytest.raises(TaskError, match=":1 "):
        load_tasks(path)


def test_bundled_sets_give_ten_tasks_per_k(bundled_data):
    for name in ("hotpotqa", "musique"):
        ds = resolve_dataset(name, bundled_data)
        corpus_ids = {p.passage_id for p in ds.passages}
        tasks = build_tasks(ds, range(4, 9), 10, seed=0)
        assert len(tasks) == 50
        for t in tasks:
            assert len(set(t.qids)) == t.k
            assert all(sq.answers and sq.gold_passage_ids for sq in t.sub_questions)
            assert t.gold_passage_ids <= corpus_ids  # gold passages are in the corpus the agent searches
