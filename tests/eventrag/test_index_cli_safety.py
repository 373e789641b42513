"""`eventfold index` / `retrieve` / `ask` on hostile input: console markup in documents and
file names, a dead LLM in agentic retrieval, an index locked by another process. Real stores."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app import app

MARKUP = "[/x] closing tag, [bold red]alarm[/] and [link=file:///etc]x[/link]"


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



def test_markup_in_documents_and_names_and_a_dead_llm(env: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "c[" / "b]orpus"  # the path reads "c[/b]orpus"
    corpus.mkdir(parents=True)
    (corpus / "[").mkdir()
    (corpus / "[" / "red]odd[b].md").write_text(f"# Title [/i]\n\nMilo Vance rebuilt the tower of Vrana in 1887. {MARKUP}")
    (corpus / "plain.md").write_text("Nora Vance painted the tower of Vrana in 1901.")
    (corpus / "[" / "x]empty.txt").write_text("")  # skipped: its path "[/x]empty.txt" is in the message
    runner = CliRunner()
    out = runner.invoke(app, ["index", str(corpus), "--extract", "rules", "--index", "hostile-cli"])
    assert out.exit_code == 0, out.output  # was: MarkupError from the progress bar
    assert "[/x]empty.txt" in out.output  # the skipped file's name printed as written
    for mode in ("naive", "event"):  # one table printer for every mode
        res = runner.invoke(app, ["retrieve", "Who rebuilt the tower of Vrana?", "--mode", mode, "--index", "hostile-cli"])
        assert res.exit_code == 0, (mode, res.output)  # was: MarkupError
        assert "b_orpus/[/red]odd[b].md" in res.output and "[/x] closing" in res.output, res.output
    # agentic retrieval with an LLM that is down: said so, non-zero exit, no credentials printed
    monkeypatch.setenv("EVENTFOLD_LLM__BACKEND", "openai")
    monkeypatch.setenv("EVENTFOLD_LLM__BASE_URL", f"http://bob:hunter2secret@127.0.0.1:{_dead_port()}/v1")
    monkeypatch.setenv("EVENTFOLD_LLM__MAX_RETRIES", "1")
    res = runner.invoke(app, ["retrieve", "Who rebuilt the tower of Vrana?", "--mode", "agentic", "--llm",
                              "--index", "hostile-cli"])
    assert res.exit_code == 1, res.output  # was: exit 0 and "3 LLM calls"
    assert "0 LLM call(s), 1 failed" in res.output and "fell back to rules" in res.output
    assert "hunter2secret" not in res.output and "tower of Vrana" in res.output  # the rule results are shown


def test_ask_on_an_index_locked_by_another_process_is_a_message(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = env / "indexes" / "locked-index" / "milvus.db"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from eventrag.storage.vector_milvus import MilvusVectorStore
        store = MilvusVectorStore({str(db)!r})
        print("ready", flush=True)
        sys.stdin.read()
        store.close()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        monkeypatch.setenv("EVENTFOLD_LLM__BACKEND", "openai")  # no model load before the stores open
        monkeypatch.setenv("EVENTFOLD_LLM__BASE_URL", f"http://127.0.0.1:{_dead_port()}/v1")
        out = CliRunner().invoke(app, ["ask", "Who rebuilt the tower?", "--index", "locked-index"])
        assert out.exit_code == 1, out.output  # was: a StoreLocked traceback
        assert "in use by another process" in out.output and "Traceback" not in out.output
        res = CliRunner().invoke(app, ["retrieve", "tower", "--index", "locked-index"])
        assert res.exit_code == 1 and "in use by another process" in res.output
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
