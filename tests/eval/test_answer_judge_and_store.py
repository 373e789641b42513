"""RAGAS-style answer judge (parsing, retries), the JSONL results store and the table helper."""

from __future__ import annotations

import json

import pytest
from eval_scripted import ScriptedChat

from eval.multihop.judge import AnswerJudge, parse_judge_scores
from eval.multihop.loaders import load_folder
from eval.multihop.runner import run_multihop
from eval.multihop.systems import Prediction
from eval.report import markdown_table
from eval.results import ResultsStore, write_json


@pytest.mark.parametrize(
    "parsed, text, expected",
    [
        ({"correctness": 5, "relevancy": 3, "similarity": 1}, "", (1.0, 0.5, 0.0)),
        (
            None,
            'Scores: ```json\n{"correctness": "4", "relevancy": 5, "similarity": 2,}\n```',
            (0.75, 1.0, 0.25),
        ),
        (None, '{"correctness": 6, "relevancy": 5, "similarity": 2}', None),  # out of range
        (None, '{"correctness": 4, "relevancy": 5}', None),  # missing key
        (None, "the answer looks right", None),
    ],
)
def test_parse_judge_scores(parsed, text, expected):
    scores = parse_judge_scores(parsed, text)
    if expected is None:
        assert scores is None
    else:
        assert (
            scores["judge_correctness"],
            scores["judge_relevancy"],
            scores["judge_similarity"],
        ) == expected


def test_answer_judge_retries_then_gives_up():
    replies = iter(["garbage", '{"correctness": 5, "relevancy": 5, "similarity": 4}'])
    chat = ScriptedChat(lambda m, s: next(replies), name="judge-x")
    judge = AnswerJudge(chat, retries=1)
    assert judge.judge("q?", "Paris", ["Paris"]) == {
        "judge_correctness": 1.0,
        "judge_relevancy": 1.0,
        "judge_similarity": 0.75,
    }
    assert "Reference answer: Paris" in chat.calls[0]["messages"][1].content
    never = AnswerJudge(ScriptedChat(lambda m, s: "no"), retries=2)
    assert set(never.judge("q?", "x", ["y"]).values()) == {None}
    assert len(never.chat_model.calls) == 3
    assert AnswerJudge(chat).judge("q?", "x", []) == dict.fromkeys(
        ("judge_correctness", "judge_relevancy", "judge_similarity")
    )


def test_runner_with_judge_names_it(fixtures_dir, tmp_path):
    ds = load_folder(fixtures_dir / "multihoprag").select(1)

    class Fixed:
        name = "fixed"

        def predict(self, example):
            return Prediction(answer="Northwind Robotics")

    chat = ScriptedChat(
        lambda m, s: {"correctness": 5, "relevancy": 4, "similarity": 5}, parse=True, name="judge-y"
    )
    summary = run_multihop(ds, Fixed(), tmp_path, judge=AnswerJudge(chat))
    assert summary["judge"] == "judge-y"
    assert summary["runs"]["fixed"]["overall"]["judge_relevancy"] == 0.75
    assert "LLM judge: judge-y" in (tmp_path / "table.md").read_text()


def test_results_store_resume_torn_line_and_latest_wins(tmp_path):
    store = ResultsStore(tmp_path / "r.jsonl", key_fn=lambda r: (r["k"],))
    store.append({"k": "a", "error": "boom"})
    store.append({"k": "b", "v": 1})
    with (tmp_path / "r.jsonl").open("a") as fh:
        fh.write('{"k": "c", "v": ')  # killed mid-write
    assert store.done_keys() == {("b",)}
    store.append({"k": "a", "v": 2})  # the retry of a failed unit
    assert store.done_keys() == {("a",), ("b",)}
    assert {r["k"]: r.get("v") for r in store.records()} == {"a": 2, "b": 1}
    path = write_json(tmp_path / "s" / "summary.json", {"x": 1})
    assert json.loads(path.read_text()) == {"x": 1} and not path.with_suffix(".json.tmp").exists()


def test_markdown_table_formats_and_escapes():
    text = markdown_table([{"a": 0.12345, "b": None, "c": "x|y"}], ["a", "b", "c"], headers=["A", "B", "C"])
    assert text.splitlines() == ["| A | B | C |", "|---|---|---|", "| 0.123 | – | x\\|y |"]
    with pytest.raises(ValueError):
        markdown_table([], ["a"], headers=["A", "B"])
