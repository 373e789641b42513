"""Stores that heal: an index whose vector store was deleted, or whose graph file is damaged, is said
to be damaged by `retrieve` and `ask` (exit 1, with the command that rebuilds it) and rebuilt by
`index` (counts per kind agree again). Real stores, the real CLI."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app import app

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_corpus"
QUERY = "Who led the repairs of the pumping station?"


def out(result) -> str:  # type: ignore[no-untyped-def]
    return " ".join(result.output.split())



def _counts(home: Path, index: str) -> dict[str, tuple[int, int]]:
    from eventfold.settings import Settings
    from eventrag.index.health import check_index
    from eventrag.stack import open_stack

    with open_stack(Settings(home=home, index=index), extract="rules") as stack:
        health = check_index(stack.graph, stack.vectors, stack.indexer.collections)
    return {c.kind: (c.graph, c.vectors) for c in health.counts}


def test_deleted_vector_store_is_reported_then_rebuilt(env: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    corpus = tmp_path / "corpus"
    shutil.copytree(TINY, corpus)
    assert runner.invoke(app, ["index", str(corpus), "--extract", "rules", "--index", "h"]).exit_code == 0
    healthy = _counts(env, "h")
    assert all(g == v and g > 0 for g, v in healthy.values()), healthy
    shutil.rmtree(env / "indexes" / "h" / "milvus.db")  # the Milvus Lite data dir, gone
    res = runner.invoke(app, ["retrieve", QUERY, "--mode", "naive", "--index", "h"])
    assert res.exit_code == 1, res.output  # was: 0 chunks, exit 0, no message
    text = out(res)
    assert "index 'h' is damaged" in text and f"{healthy['chunks'][0]} chunks in the graph, 0 chunk vectors" in text
    assert f"eventfold index {corpus} --index h" in text
    res = runner.invoke(app, ["index", str(corpus), "--extract", "rules", "--index", "h"])
    assert res.exit_code == 0, res.output  # was: "unchanged (skipped)" for every document, vectors never rebuilt
    assert "is damaged" in out(res) and "rebuilding it" in out(res)
    assert _counts(env, "h") == healthy
    res = runner.invoke(app, ["retrieve", QUERY, "--mode", "naive", "--index", "h"])
    assert res.exit_code == 0 and "Mara" in res.output, res.output


def test_a_rebuild_that_would_lose_another_folder_says_what_to_run(env: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "one.md").write_text("Milo Vance rebuilt the tower of Vrana in 1887.")
    (b / "two.md").write_text("Nora Vance painted the tower of Vrana in 1901.")
    for folder in (a, b):
        assert runner.invoke(app, ["index", str(folder), "--extract", "rules", "--index", "two"]).exit_code == 0
    shutil.rmtree(env / "indexes" / "two" / "milvus.db")
    res = runner.invoke(app, ["index", str(a), "--extract", "rules", "--index", "two"])
    assert res.exit_code == 1, res.output
    assert f"eventfold index {a} {b} --index two" in out(res) or f"eventfold index {b} {a} --index two" in out(res)
    assert _counts(env, "two")["chunks"][0] == 2  # nothing was dropped


def test_a_damaged_graph_file_gets_advice_not_a_traceback(env: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "one.md").write_text("Milo Vance rebuilt the tower of Vrana in 1887.")
    assert runner.invoke(app, ["index", str(corpus), "--extract", "rules", "--index", "g"]).exit_code == 0
    graph_file = env / "indexes" / "g" / "graph.sqlite"
    graph_file.write_bytes(b"this is not a database" * 300)
    for args in (["retrieve", QUERY, "--index", "g"], ["index", str(corpus), "--extract", "rules", "--index", "g"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 1 and isinstance(res.exception, SystemExit), (res.output, res.exception)
        text = out(res)
        assert "index 'g' is damaged" in text and "mv " in text and "Traceback" not in res.output, text
    graph_file.rename(graph_file.with_name("graph.sqlite.damaged"))  # as advised; the vectors are orphans now
    res = runner.invoke(app, ["retrieve", QUERY, "--index", "g"])
    assert res.exit_code == 1 and "0 chunks in the graph, 1 chunk vectors" in out(res), res.output
    res = runner.invoke(app, ["index", str(corpus), "--extract", "rules", "--index", "g"])
    assert res.exit_code == 0 and "rebuilding it" in out(res), res.output
    assert all(g == v == 1 for kind, (g, v) in _counts(env, "g").items() if kind == "chunks")


def test_an_interrupted_run_is_resumed_not_rebuilt(env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Documents left pending by a crash (their chunks written, the run cut before `done`) are the
    indexer's to resume: `index` does not call that a damaged index, and the counts agree after it."""
    from eventfold.settings import Settings
    from eventrag.index.indexer import Indexer
    from eventrag.stack import open_stack

    corpus = tmp_path / "corpus"
    shutil.copytree(TINY, corpus)

    def crash(self: Indexer, new_events: list[str]) -> int:
        raise KeyboardInterrupt  # after the graph and the chunk vectors of the batch, before `done`

    with open_stack(Settings(home=env, index="r"), extract="rules") as stack, monkeypatch.context() as m:
        m.setattr(Indexer, "_refresh_inferred", crash)
        with pytest.raises(KeyboardInterrupt):
            stack.indexer.index_paths([corpus])
    res = CliRunner().invoke(app, ["index", str(corpus), "--extract", "rules", "--index", "r"])
    assert res.exit_code == 0, res.output
    resumed = re.search(r"resumed after a crash\s*│\s*(\d+)", res.output)
    assert "damaged" not in res.output and resumed and int(resumed.group(1)) > 0, res.output
    counts = _counts(env, "r")
    assert all(g == v and g > 0 for g, v in counts.values()), counts
