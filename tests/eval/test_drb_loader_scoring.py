"""DeepResearch Bench II: task loading and filtering, and scoring of hand-written judgments."""

from __future__ import annotations

import pytest

from eval.deepresearch_bench.loader import TaskFormatError, load_tasks
from eval.deepresearch_bench.scoring import aggregate, task_scores


def test_fixture_tasks_and_filters(fixtures_dir):
    path = fixtures_dir / "drb2" / "tasks_and_rubrics.jsonl"
    tasks = load_tasks(path)
    assert [t.idx for t in tasks] == [1, 2]
    a = tasks[0]
    assert a.blocked is not None and a.blocked.urls == ["https://blocked.example/tram-study"]
    assert "blocked" in a.prompt and "blocked" not in a.task  # writer gets the notice, judge the task
    assert a.rubric.items()[0] == ("info_recall", "States that the council approved the line 7 to 2.")
    assert a.n_items == 4 and tasks[1].blocked is None
    assert a.license == "CC BY 4.0" and tasks[1].license == ""  # the per-task field of newer releases
    assert [t.idx for t in load_tasks(path, language="zh")] == [2]
    assert [t.idx for t in load_tasks(path, themes=["transportation"])] == [1]
    assert [t.idx for t in load_tasks(path, idx=[2])] == [2]
    assert len(load_tasks(path, limit=1)) == 1
    with pytest.raises(TaskFormatError, match="idx"):
        load_tasks(path, idx=[99])


def test_bad_task_file(tmp_path):
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"id": "x", "idx": 1}\n')
    with pytest.raises(TaskFormatError, match="content"):
        load_tasks(bad)
    bad.write_text("not json\n")
    with pytest.raises(TaskFormatError, match="valid JSON"):
        load_tasks(bad)


def test_bundled_tasks_are_the_official_set_split_by_licence():
    from eval.bundled_data import DRB2_TASKS, DRB2_TASKS_NONCOMMERCIAL

    shipped = load_tasks(DRB2_TASKS)
    noncommercial = load_tasks(DRB2_TASKS_NONCOMMERCIAL)
    assert len(shipped) == 130 and [t.idx for t in noncommercial] == [26, 110]
    every = shipped + noncommercial
    assert sorted(t.idx for t in every) == list(range(1, 133))
    assert sum(t.language == "en" for t in every) == 66
    assert sum(t.blocked is None for t in every) == 1
    assert sum(t.n_items for t in every) == 9415
    en = load_tasks(DRB2_TASKS, language="en", limit=3)
    assert [t.idx for t in en] == [2, 4, 6]


def _items(dim_scores):
    return [{"dimension": d, "score": s} for d, scores in dim_scores.items() for s in scores]


def test_task_scores_hand_computed():
    s = task_scores(_items({"info_recall": [1, 1, 0, -1], "analysis": [1, 0], "presentation": [0]}))
    assert s["info_recall"] == pytest.approx(2 / 4)
    assert s["analysis"] == pytest.approx(1 / 2)
    assert s["presentation"] == 0.0
    assert s["total"] == pytest.approx(3 / 7)
    assert s["blocked_rate"] == pytest.approx(1 / 7)
    assert s["n_items"] == 7 and s["unjudged"] == 0


def test_unjudged_items_leave_the_denominators():
    s = task_scores(_items({"info_recall": [1, None], "analysis": [None], "presentation": [0]}))
    assert s["info_recall"] == 1.0 and s["analysis"] is None
    assert s["total"] == pytest.approx(1 / 2) and s["unjudged"] == 2 and s["n_items"] == 4
    with pytest.raises(ValueError, match="1, 0 or -1"):
        task_scores([{"dimension": "analysis", "score": 2}])


def test_aggregate_means_over_tasks_by_theme_and_language():
    t1 = {
        "idx": 1,
        "theme": "Health",
        "language": "en",
        "scores": task_scores(_items({"info_recall": [1, 1], "analysis": [0, 0]})),
    }
    t2 = {
        "idx": 2,
        "theme": "Health",
        "language": "zh",
        "scores": task_scores(_items({"info_recall": [0], "presentation": [1]})),
    }
    t3 = {
        "idx": 3,
        "theme": "History",
        "language": "en",
        "scores": task_scores(_items({"info_recall": [-1, 1]})),
    }
    agg = aggregate([t1, t2, t3])
    # per-task totals 0.5, 0.5, 0.5; info_recall 1.0, 0.0, 0.5; analysis only in t1
    assert agg["overall"]["total"] == pytest.approx(0.5)
    assert agg["overall"]["info_recall"] == pytest.approx(0.5)
    assert agg["overall"]["analysis"] == 0.0
    assert agg["overall"]["blocked_rate"] == pytest.approx((0 + 0 + 0.5) / 3)
    assert agg["by_theme"]["Health"]["n_tasks"] == 2 and agg["by_theme"]["History"]["info_recall"] == 0.5
    assert agg["by_language"]["en"]["total"] == pytest.approx(0.5)
