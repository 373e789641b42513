"""Multi-hop runner: scoring, resume, summaries; then a real EventRAG stack on the MultiHopRAG fixture."""

from __future__ import annotations

import json

import pytest
from eval_scripted import ScriptedChat
from typer.testing import CliRunner

from eval.multihop.loaders import load_folder
from eval.multihop.runner import run_multihop, score
from eval.multihop.systems import Prediction, RetrieveAndRead
from eventrag.schema import RetrievedChunk


def _chunk(title: str, text: str) -> RetrievedChunk:
    return RetrievedChunk(chunk_id=f"c-{title}", doc_id=title, title=title, text=text, score=1.0)


class TextSystem:
    """Test double: returns the dataset's own passages in a fixed order and a fixed answer."""

    def __init__(self, ds, name="fixed", fail_on=()):
        self.name = name
        self.passages = ds.passages
        self.fail_on = set(fail_on)
        self.calls = 0

    def predict(self, example):
        self.calls += 1
        if example.qid in self.fail_on:
            raise RuntimeError("boom")
        return Prediction(
            answer="Northwind Robotics", retrieved=[_chunk(p.title, p.text) for p in self.passages]
        )


@pytest.fixture
def mhr(fixtures_dir):
    return load_folder(fixtures_dir / "multihoprag")


def test_score_skips_null_query_retrieval_but_scores_its_answer(mhr):
    null = mhr.examples[3]
    m = score(null, Prediction(answer="Insufficient information.", retrieved=[_chunk("x", "y")]))
    assert m == {"em": 1.0, "f1": 1.0, "acc": 1.0}
    first = mhr.examples[0]
    m = score(first, Prediction(answer=None, retrieved=[_chunk(p.title, p.text) for p in mhr.passages]))
    # gold facts are in passages 1 and 3 (ranks 1 and 3): AP = (1/1 + 1/3) / 2
    assert m["hits@4"] == 1.0 and m["mrr@10"] == 1.0 and m["map@10"] == pytest.approx((1 + 1 / 3) / 2)
    assert m["recall@2"] == 0.5 and m["recall@5"] == 1.0 and "em" not in m


def test_run_resume_errors_and_outputs(mhr, tmp_path):
    flaky = TextSystem(mhr, fail_on={"mhr-1"})
    summary = run_multihop(mhr, flaky, tmp_path, concurrency=2)
    run = summary["runs"]["fixed"]
    assert run["n"] == 3 and run["n_errors"] == 1
    assert run["overall"]["n_hits@10"] == 2  # the null query is not in the retrieval means
    assert set(run["by_type"]) == {"inference_query", "temporal_query", "null_query"}
    fixed = TextSystem(mhr)
    summary = run_multihop(mhr, fixed, tmp_path)
    assert fixed.calls == 1  # only the failed question is redone
    assert summary["runs"]["fixed"]["n_errors"] == 0 and summary["runs"]["fixed"]["n"] == 4
    other = TextSystem(mhr, name="other")
    summary = run_multihop(mhr.select(2), other, tmp_path)
    assert set(summary["runs"]) == {"fixed", "other"}
    assert summary["runs"]["fixed"]["n"] == 2  # the summary covers the selected questions only
    table = (tmp_path / "table.md").read_text()
    assert "| fixed |" in table and "| other |" in table and "hits@4" in table
    assert (tmp_path / "plot.png").stat().st_size > 1000 and (tmp_path / "by_type.md").is_file()
    assert json.loads((tmp_path / "summary.json").read_text())["dataset"] == "multihoprag"


def _reader(messages, schema):
    prompt = messages[-1].content
    return "Northwind Robotics" if "Gripper-7" in prompt else "Insufficient information."


def test_real_stack_naive_and_event_modes(indexed, tmp_path):
    home, ds, stack, summary = indexed
    assert summary.docs_indexed == 4 and summary.chunks >= 4
    reader = ScriptedChat(_reader, name="scripted-reader")
    for mode in ("naive", "event"):
        result = run_multihop(ds, RetrieveAndRead(stack.retriever, mode, reader), tmp_path)
    runs = result["runs"]
    assert set(runs) == {"naive", "event"}
    for run in runs.values():
        assert run["n"] == 4 and run["n_errors"] == 0
        assert run["overall"]["hits@10"] == 1.0  # every article is within the top 10 of a 4-article corpus
        assert 0.0 < run["overall"]["map@10"] <= 1.0
    calls = len(reader.calls)
    run_multihop(ds, RetrieveAndRead(stack.retriever, "naive", reader), tmp_path)
    assert len(reader.calls) == calls  # resumed: nothing redone
    rec = json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])
    assert rec["retrieved"] and rec["answer"] in ("Northwind Robotics", "Insufficient information.")


def test_cli_multihop_retrieval_only(indexed, tmp_path, monkeypatch):
    from app import app

    home, ds, _stack, _ = indexed
    monkeypatch.setenv("EVENTFOLD_HOME", str(home))
    fixture = str(tmp_path.parent)  # any folder that is not a dataset must fail cleanly
    runner = CliRunner()
    bad = runner.invoke(app, ["eval", "multihop", "--dataset", fixture, "--mode", "naive"])
    assert bad.exit_code == 2
    wrong = runner.invoke(app, ["eval", "multihop", "--dataset", "x", "--mode", "naive", "--no-fold"])
    assert wrong.exit_code == 2
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "fixtures" / "multihoprag"
    res = runner.invoke(
        app,
        ["eval", "multihop", "--dataset", str(folder), "--mode", "naive", "--no-answer", "--extract", "rules",
         "--out", str(tmp_path / "out")],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["runs"]["naive"]["overall"]["hits@10"] == 1.0
    assert "em" not in summary["runs"]["naive"]["overall"]
