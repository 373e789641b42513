"""End to end: `eventfold ask --corpus examples/corpus` with the REAL local 0.5B model and the real
EventRAG stack (embedded graph store, Milvus Lite, MiniLM embeddings; rule extraction to keep the
indexing short). The run reaches `answer` or the reader fallback with at least one valid citation and
at most one tool error, and prints the multi-section report and the cost footer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
MODEL = Path.home() / ".cache" / "eventfold" / "models" / "qwen2.5-coder-0.5b.gguf"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_ask_produces_a_cited_report_with_the_real_local_model(tmp_path, monkeypatch):
    if not MODEL.is_file():
        pytest.fail(f"{MODEL} missing: run `eventfold model pull qwen2.5-coder-0.5b`")
    from app import app

    monkeypatch.setenv("EVENTFOLD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EVENTFOLD_LLM__CACHE", "false")
    question = (
        "Which company made the pressure element fitted in the SeaGuard S2 units recalled in January 2015?"
    )
    args = [
        "ask",
        question,
        "--corpus",
        str(ROOT / "examples" / "corpus"),
        "--model",
        str(MODEL),
        "--extract",
        "rules",
        "--max-steps",
        "4",
        "--fold-summary",
        "deterministic",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "peak" in result.output and "wall time" in result.output and "qwen2.5-coder-0.5b" in result.output
    assert "evaluated of" in result.output and "generated tokens" in result.output

    runs = sorted((tmp_path / "home" / "runs").glob("*/report.md"))
    assert len(runs) == 1
    report = runs[0].read_text()
    traj = json.loads((runs[0].parent / "trajectory.json").read_text())["state"]
    assert traj["answer"] and traj["steps"] and traj["answer_source"] in ("model", "reader")
    assert traj["counters"]["tool_errors"] <= 1, traj["counters"]
    cited = [c for c in traj["answer_citations"] if c in traj["evidence"]]
    assert cited, report  # at least one valid citation
    for section in ("**Answer:**", "## Findings", "## Sources", "## Open questions", "## Run"):
        assert section in report
    sources = re.findall(r"^- `\[c:(\S+)\]` \*(.*)\* · doc `([^`]+)`", report, flags=re.M)
    assert sources, report
    assert re.search(r"\*\*Answer:\*\* .+\[c:" + re.escape(cited[0]) + r"\]", report)
    _assert_sources_name_their_chunks(sources)
    _assert_final_context_is_counted_by_the_model(traj)


def _assert_sources_name_their_chunks(sources: list[tuple[str, str, str]]) -> None:
    """Each source line's chunk id resolves in the index to a chunk of that document and title."""
    from eventfold.settings import Settings
    from eventrag.stack import open_stack

    with open_stack(Settings(index="corpus"), extract="rules") as stack:
        for chunk_id, title, doc_id in sources:
            chunk = stack.retriever.get_chunk(chunk_id)
            assert chunk is not None and chunk.doc_id == doc_id and (chunk.title or "(untitled)") == title


def _assert_final_context_is_counted_by_the_model(traj: dict) -> None:
    """Token accounting: the recorded final context is what the model's own tokenizer counts for it."""
    from agent.graph import AgentDeps, AgentGraph
    from agent.state import RunState
    from eventfold.llm.local_backend import LlamaCppChatModel
    from eventfold.run_options import RunOptions

    run = RunState.model_validate(traj)
    model = LlamaCppChatModel(MODEL, n_ctx=2048)
    counted = AgentGraph(
        AgentDeps(model, backend=None), RunOptions(max_steps=1, fold_summary="deterministic")
    ).count(run)  # type: ignore[arg-type]
    assert counted == traj["counters"]["final_context_tokens"] > 0
    assert traj["counters"]["peak_context_tokens"] >= counted
