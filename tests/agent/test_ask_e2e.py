"""End to end with the REAL local 0.5B model and the real EventRAG stack on examples/corpus (rule
extraction to keep the indexing short): the model policy chooses its calls itself (at least two) and
ends with its own `answer` citing a chunk it has seen; the report fits one screen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
MODEL = Path.home() / ".cache" / "eventfold" / "models" / "qwen2.5-coder-0.5b.gguf"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_real_small_model_chooses_its_calls_and_answers_citing_a_seen_chunk(tmp_path, monkeypatch):
    if not MODEL.is_file():
        pytest.fail(f"{MODEL} missing: run `eventfold model pull qwen2.5-coder-0.5b`")
    from app import app

    monkeypatch.setenv("EVENTFOLD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EVENTFOLD_LLM__CACHE", "false")
    args = ["ask", "When did the NMMB order the SeaGuard S2 recall?", "--corpus", str(ROOT / "examples" / "corpus"),
            "--model", str(MODEL), "--extract", "rules", "--max-steps", "4", "--fold-summary", "deterministic"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    runs = sorted((tmp_path / "home" / "runs").glob("*/report.md"))
    assert len(runs) == 1
    report = runs[0].read_text()
    state = json.loads((runs[0].parent / "trajectory.json").read_text())["state"]
    calls = [c["name"] for s in state["steps"] if s["kind"] == "action" for c in s["assistant"]["tool_calls"]]
    assert len(calls) >= 2 and calls[-1] == "answer", calls
    assert state["status"] == "answered" and state["answer_source"] == "model" and state["policy"] == "model"
    assert state["answer_citations"] and all(c in state["evidence"] for c in state["answer_citations"])
    assert len(report.splitlines()) <= 25 and "## Run" in report and "wall time" in report
