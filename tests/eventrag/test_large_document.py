"""A long document is indexed a slice of chunks at a time: progress after every slice, the embedder and
the fuser never given the whole document at once, and the same graph as one slice would give. (Its
speed and memory at 5 MB are measured by bench/large_doc.py, not here.)"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from eventrag_fakes import MemoryVectorStore
from rich.console import Console

from cli.index_progress import index_progress_bar
from eventrag.index.indexer import Indexer, IndexProgress
from eventrag.index.rules_extract import RuleExtractor
from eventrag.schema import Document
from eventrag.storage.graph_sqlite import SqliteGraphStore

TITLE = "The Ferrow Chronicle"


class _CountingEmbedder:
    """Deterministic vectors (unit tests only); remembers how many chunk texts each call carried."""

    dim = 8
    name = "hash"

    def __init__(self) -> None:
        self.chunk_batches: list[int] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.chunk_batches.append(sum(t.startswith(TITLE + "\n") for t in texts))
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).normal(size=self.dim) for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def _index(tmp_path: Path, slice_chunks: int, text: str) -> tuple[SqliteGraphStore, _CountingEmbedder, list[IndexProgress]]:
    graph = SqliteGraphStore(tmp_path / f"g{slice_chunks}.sqlite", "t")
    embedder = _CountingEmbedder()
    indexer = Indexer(graph, MemoryVectorStore(), embedder, RuleExtractor(), slice_chunks=slice_chunks,
                      collections={k: f"t_{k}" for k in ("chunks", "events", "entities")})
    seen: list[IndexProgress] = []
    indexer.index_documents([Document(doc_id="big", title=TITLE, text=text, source="big.md")], progress=seen.append)
    return graph, embedder, seen


def test_a_long_document_reports_progress_per_slice_and_is_never_embedded_whole(tmp_path: Path) -> None:
    text = " ".join(f"In {1800 + i} Alba Reed{i % 7} met Bram Holt{i % 5} at Kestrel Mill. The river ran high "
                    f"that year, as the accounts of the town agree in every detail." for i in range(120))
    graph, embedder, seen = _index(tmp_path, 4, text)
    total = seen[0].batch_chunks_total
    assert total >= 12 and seen[-1].chunks == total  # was: one report, after the whole document
    within = [p for p in seen if p.batch_chunks_total]
    assert [p.batch_chunks_done for p in within] == list(range(4, total, 4))
    assert all(0 < p.docs_progress < 1 for p in within) and seen[-1].docs_progress == 1
    assert max(embedder.chunk_batches) == 4  # was: every chunk of the document in one call
    counts = graph.count()
    whole, _, _ = _index(tmp_path, 10_000, text)  # one slice: the same graph
    assert counts == whole.count() and graph.stats() == whole.stats()
    out = io.StringIO()
    with index_progress_bar(Console(file=out, force_terminal=True, width=200), "indexing") as bar:
        bar(within[1])
    assert f"chunk 8/{total}" in out.getvalue()


def test_close_pairs_match_the_whole_similarity_matrix_a_block_at_a_time() -> None:
    from eventrag.index.fusion import close_pairs  # fusion's pairs without an n x n matrix

    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(50, 4)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rows, cols = np.nonzero(np.triu(vecs @ vecs.T >= 0.8, k=1))
    assert list(close_pairs(vecs, 0.8, block=7)) == list(zip(rows.tolist(), cols.tolist(), strict=True))
