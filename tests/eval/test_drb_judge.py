"""DRB II judge: parsing malformed judge output, batching, retries, and an end-to-end scripted run."""

from __future__ import annotations

import json

import pytest
from eval_scripted import ScriptedChat, batch_ids

from eval.deepresearch_bench.judge import RubricJudge, normalize_score, parse_batch
from eval.deepresearch_bench.loader import load_tasks
from eval.deepresearch_bench.runner import FolderReportWriter, run_drb

IDS = [1, 2, 3]


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            '{"results": [{"id": 1, "score": 1}, {"id": 2, "score": 0}, {"id": 3, "score": -1}]}',
            {1: 1, 2: 0, 3: -1},
        ),
        (
            'Sure! ```json\n{"results": [{"id": 1, "score": 1,}, {"id": 2, "score": 0},]}\n``` hope this helps',
            {1: 1, 2: 0},
        ),
        (
            '{"results": [{"id": "1", "score": "1"}, {"id": "#2", "score": "-1"}, {"id": 3, "score": True}]}',
            {1: 1, 2: -1, 3: 1},
        ),
        ('[{"id": 1, "score": "met"}, {"id": 2, "score": "not met"}]', {1: 1, 2: 0}),
        (
            '{"results": [{"id": 1, "score": 1, "reason": "ok"}, {"id": 2, "score": 0, "reason": "miss"}, {"id": 3, "sco',
            {1: 1, 2: 0},
        ),
        (
            '{"results": [{"id": 1, "score": 5}, {"id": 7, "score": 1}, {"id": 2, "score": 0}, {"id": 2, "score": 1}]}',
            {2: 0},
        ),
        ("I cannot grade this report.", {}),
        ("", {}),
    ],
)
def test_parse_batch_on_malformed_outputs(text, expected):
    scores, _ = parse_batch(None, text, IDS)
    assert {k: v[0] for k, v in scores.items()} == expected


def test_parse_batch_prefers_backend_parsed_object():
    scores, repaired = parse_batch(
        {"results": [{"id": 3, "score": -1, "reason": "cites blocked"}]}, "garbage", IDS
    )
    assert scores == {3: (-1, "cites blocked")} and not repaired


def test_normalize_score():
    assert [normalize_score(v) for v in (1, 0, -1, 1.0, "-1", "+1", True, "Blocked")] == [
        1,
        0,
        -1,
        1,
        -1,
        1,
        1,
        -1,
    ]
    assert [normalize_score(v) for v in (2, 0.5, "maybe", None, [1])] == [None] * 5


def _task(fixtures_dir):
    return load_tasks(fixtures_dir / "drb2" / "tasks_and_rubrics.jsonl", idx=[1])[0]


def test_batches_schema_and_retry_of_missing_items(fixtures_dir):
    task = _task(fixtures_dir)
    first_seen: set[int] = set()

    def script(messages, schema):
        ids = batch_ids(schema)
        # first time an id is asked, drop the last one of the batch (as a judge that stops early)
        fresh = [i for i in ids if i not in first_seen]
        first_seen.update(ids)
        answer = ids[:-1] if fresh and len(ids) > 1 else ids
        return {"results": [{"id": i, "score": 1 if i % 2 else 0, "reason": "r"} for i in answer]}

    chat = ScriptedChat(script, parse=True)
    judgment = RubricJudge(chat, batch_size=2, max_retries=2).judge_task(task, "A report.")
    assert [j.score for j in judgment.items] == [1, 0, 1, 0]
    assert [batch_ids(c["json_schema"]) for c in chat.calls] == [[1, 2], [2], [3, 4], [4]]
    assert judgment.calls == 4 and judgment.retries == 2
    schema = chat.calls[0]["json_schema"]["properties"]["results"]
    assert schema["minItems"] == schema["maxItems"] == 2
    user = chat.calls[0]["messages"][1].content
    assert "1. States that the council approved" in user and "blocked.example/tram-study" in user
    assert "Do not rely" not in user  # the judge sees content.task, not the writer's prompt


def test_judge_that_never_answers_leaves_items_unjudged(fixtures_dir):
    chat = ScriptedChat(lambda m, s: "no JSON here")
    judgment = RubricJudge(chat, batch_size=50, max_retries=1).judge_task(_task(fixtures_dir), "r")
    assert all(j.score is None for j in judgment.items)
    assert judgment.calls == 2 and judgment.repaired == 2


def test_end_to_end_one_task_with_scripted_judge(fixtures_dir, tmp_path):
    reports = tmp_path / "in"
    reports.mkdir()
    (reports / "1.md").write_text(
        "# Tram\nThe council approved the line 7 to 2. [source: blocked.example/tram-study]\n"
    )

    def script(messages, schema):
        # fenced, chatty output: the judge must repair it
        results = [{"id": i, "score": {1: -1, 2: 0, 3: 1, 4: 1}[i], "reason": "x"} for i in batch_ids(schema)]
        return "Here you go:\n```json\n" + json.dumps({"results": results}) + "\n```"

    chat = ScriptedChat(script)
    tasks = load_tasks(fixtures_dir / "drb2" / "tasks_and_rubrics.jsonl", idx=[1])
    out = tmp_path / "out"
    summary = run_drb(tasks, FolderReportWriter(reports), RubricJudge(chat), out)
    assert summary is not None and summary["judge"] == "scripted-judge"
    overall = summary["overall"]
    assert overall["info_recall"] == 0.0 and overall["analysis"] == 1.0 and overall["presentation"] == 1.0
    assert overall["total"] == pytest.approx(2 / 4) and overall["blocked_rate"] == pytest.approx(1 / 4)
    assert summary["by_theme"]["Transportation"]["n_tasks"] == 1 and summary["judge_repaired_batches"] == 1
    for name in ("summary.json", "table.md", "plot.png", "themes.png", "reports/1.md", "judgments.jsonl"):
        assert (out / name).is_file(), name
    assert "| overall | 1 |" in (out / "table.md").read_text()
    # resume: nothing is rewritten or judged again
    n_calls = len(chat.calls)
    again = run_drb(tasks, FolderReportWriter(reports), RubricJudge(chat), out)
    assert len(chat.calls) == n_calls and again["overall"] == summary["overall"]
    assert summary["valid_judge"] and "Not a valid" not in (out / "table.md").read_text()
    # a judge that cannot give a valid score (a small local model) is said so in the table and summary
    warned = run_drb(tasks, FolderReportWriter(reports), RubricJudge(chat), out, judge_warning="Small judge.")
    table = (out / "table.md").read_text()
    assert table.splitlines()[2] == "> **Not a valid DRB II score.** Small judge."
    assert not warned["valid_judge"] and warned["judge_warning"] == "Small judge."


def test_failed_report_is_recorded_and_retried(fixtures_dir, tmp_path):
    tasks = load_tasks(fixtures_dir / "drb2" / "tasks_and_rubrics.jsonl", idx=[1])
    src = tmp_path / "in"
    src.mkdir()
    out = tmp_path / "out"
    chat = ScriptedChat(lambda m, s: {"results": [{"id": i, "score": 1} for i in batch_ids(s)]}, parse=True)
    summary = run_drb(tasks, FolderReportWriter(src), RubricJudge(chat), out)
    assert summary["overall"]["n_tasks"] == 0 and not chat.calls
    assert "FileNotFoundError" in (out / "reports.jsonl").read_text()
    (src / "1.md").write_text("now it exists")
    summary = run_drb(tasks, FolderReportWriter(src), RubricJudge(chat), out)
    assert summary["overall"]["total"] == 1.0


def test_cli_drb_argument_checks_and_reports_only(fixtures_dir, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from app import app

    monkeypatch.setenv("EVENTFOLD_HOME", str(tmp_path / "home"))
    tasks = str(fixtures_dir / "drb2" / "tasks_and_rubrics.jsonl")
    runner = CliRunner()
    none = runner.invoke(app, ["eval", "drb", "--tasks", tasks])
    assert none.exit_code == 2 and "exactly one of" in none.output
    reports = tmp_path / "in"
    reports.mkdir()
    (reports / "1.md").write_text("# r\n")
    both = runner.invoke(app, ["eval", "drb", "--tasks", tasks, "--reports", str(reports), "--index", "x"])
    assert both.exit_code == 2
    nomatch = runner.invoke(
        app, ["eval", "drb", "--tasks", tasks, "--language", "fr", "--reports", str(reports)]
    )
    assert nomatch.exit_code == 2 and "no task" in nomatch.output
    out = tmp_path / "out"
    ok = runner.invoke(
        app,
        [
            "eval",
            "drb",
            "--tasks",
            tasks,
            "--idx",
            "1",
            "--reports",
            str(reports),
            "--no-judge",
            "--out",
            str(out),
        ],
    )
    assert ok.exit_code == 0, ok.output
    assert (out / "reports" / "1.md").read_text() == "# r\n" and "folder:in" in (
        out / "reports.jsonl"
    ).read_text()
