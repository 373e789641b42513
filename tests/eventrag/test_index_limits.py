"""`eventfold index` at the machine's limits and on a user's slip: a full disk (graph store or vector
store) and an over-long index name are clear errors, never tracebacks; a run after space is freed
finishes the job. Real stores; the full disk is simulated by making one store write fail as a full disk does."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from app import app
from eventrag.storage.graph_sqlite import SqliteGraphStore
from eventrag.storage.vector_milvus import MilvusVectorStore


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"n{i}.md").write_text(f"Nora{i} Vance painted the tower of Vrana in {1900 + i}.", encoding="utf-8")
    return corpus


def test_a_full_disk_names_the_store_and_the_space_needed(env: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = _corpus(tmp_path)
    runner = CliRunner()
    real_edges = SqliteGraphStore.upsert_edges

    def full_graph(self: SqliteGraphStore, edges: Any) -> int:
        with self._sql("upsert_edges"):  # the store's own handling of what SQLite raises
            raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(SqliteGraphStore, "upsert_edges", full_graph)
    out = runner.invoke(app, ["index", str(corpus), "--extract", "rules", "--index", "full"])
    assert out.exit_code == 1 and isinstance(out.exception, SystemExit), out.output
    text = " ".join(out.output.split())
    assert "out of disk space writing the graph store" in text and "graph.sqlite" in text, text  # was: traceback
    assert "MB free there; indexing these files needs about" in text and "Traceback" not in text
    monkeypatch.setattr(SqliteGraphStore, "upsert_edges", real_edges)

    def full_vectors(self: MilvusVectorStore, *a: Any, **k: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(env / "indexes" / "full" / "milvus.db"))

    monkeypatch.setattr(MilvusVectorStore, "upsert", full_vectors)
    out = runner.invoke(app, ["index", str(corpus), "--extract", "rules", "--index", "full"])
    text = " ".join(out.output.split())
    assert out.exit_code == 1 and isinstance(out.exception, SystemExit), out.output
    assert "out of disk space writing the vector store" in text and "milvus.db" in text, text
    monkeypatch.undo()
    monkeypatch.setenv("EVENTFOLD_HOME", str(env))
    done = runner.invoke(app, ["index", str(corpus), "--extract", "rules", "--index", "full"])
    assert done.exit_code == 0, done.output  # space freed: the same command finishes the job
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in done.output.splitlines()
            if line.count("│") == 3}
    assert rows["resumed after a crash"] == "3" and rows["indexed"] == "3", done.output


def test_an_over_long_or_odd_index_name_is_a_clear_error(env: Path, tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    runner = CliRunner()
    for name, says in (("a" * 300, "index name is too long: 300 characters"), ("é" * 60, "120 bytes"),
                       ("../x", "simple name")):
        out = runner.invoke(app, ["index", str(corpus), "--extract", "rules", "--index", name])
        assert out.exit_code == 2, out.output  # was: OSError: File name too long
        assert says in " ".join(out.output.split()) and not isinstance(out.exception, OSError), out.output
    assert not (env / "indexes").exists() or not any((env / "indexes").iterdir())  # nothing made
