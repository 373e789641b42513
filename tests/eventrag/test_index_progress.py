"""Indexing progress: the indexer reports docs, chunks, events and rates after every batch; the CLI bar
renders them (document names as data, never markup)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from eventrag_fakes import MemoryVectorStore
from rich.console import Console

from cli.index_progress import describe, index_progress_bar
from eventrag.index.indexer import Indexer, IndexProgress
from eventrag.index.rules_extract import RuleExtractor
from eventrag.schema import Document
from eventrag.storage.graph_sqlite import SqliteGraphStore


class _HashEmbedder:
    """Deterministic vectors (unit tests only): no model to load."""

    dim = 8
    name = "hash"

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).normal(size=self.dim) for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def test_progress_after_every_batch_with_counts_rates_and_eta(tmp_path: Path) -> None:
    graph = SqliteGraphStore(tmp_path / "g.sqlite", "t")
    cols = {k: f"t_{k}" for k in ("chunks", "events", "entities")}
    indexer = Indexer(graph, MemoryVectorStore(), _HashEmbedder(), RuleExtractor(), collections=cols, batch_docs=2)
    docs = [Document(doc_id=f"d{i}", title=f"Person {i}", source=f"docs/[bold]p{i}.md",
                     text=f"On {i + 1} May 2001 Person {i} met Ana Roe in Oslo. Person {i} moved to Rome in 2003.")
            for i in range(5)]
    seen: list[IndexProgress] = []
    summary = indexer.index_documents(docs, progress=seen.append)
    graph.close()
    assert [p.docs_done for p in seen] == [2, 4, 5] and {p.docs_total for p in seen} == {5}
    assert [p.chunks for p in seen] == [2, 4, 5] and seen[-1].events == summary.events > 0
    assert all(a.events <= b.events and a.elapsed_s <= b.elapsed_s for a, b in zip(seen, seen[1:], strict=False))
    assert seen[-1].eta_s == 0 and seen[0].eta_s is not None and seen[0].chunks_per_min > 0
    assert IndexProgress(docs_total=3).eta_s is None  # nothing done yet: no estimate
    half = IndexProgress(docs_done=10, docs_total=30, chunks=20, events=50, elapsed_s=60.0)
    assert (half.eta_s, half.chunks_per_min, half.events_per_s) == (120.0, 20.0, 50 / 60)
    assert describe(half) == "20 chunks · 50 events · 20 chunks/min · 0.8 events/s · ETA 2:00"
    out = io.StringIO()
    with index_progress_bar(Console(file=out, force_terminal=True, width=200), "indexing") as bar:
        bar(seen[-1])
    assert "[bold]p4.md" in out.getvalue()  # the file name printed as written, not read as markup
    log = io.StringIO()  # not a terminal (a log file): plain lines, the last one always
    with index_progress_bar(Console(file=log, force_terminal=False, width=200), "indexing") as bar:
        for p in seen:
            bar(p)
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("indexing: 2/5 docs · 2 chunks") and lines[-1].startswith("indexing: 5/5 docs")
