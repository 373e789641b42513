"""Does an index's vector store agree with its graph? And the rebuild when it does not.

The graph records what was indexed (Document nodes, and one Chunk, Event and Entity node per item);
every one of those items has a vector in its kind's collection. A vector store deleted or damaged
under the graph (or a graph file replaced under the vectors) shows as counts that differ per kind;
retrieval on such an index would return nothing, or vectors of nodes that no longer exist, without a
word. `check_index` measures; `rebuild_plan` says whether an `index` run over given paths can rebuild
the whole index (it covers every recorded document), and `reset_index` empties both stores for it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from eventrag.storage.base import GraphStore, VectorStore

LABELS = {"chunks": "Chunk", "events": "Event", "entities": "Entity"}
SINGULAR = {"chunks": "chunk", "events": "event", "entities": "entity"}


class KindCount(BaseModel):
    kind: str
    graph: int
    vectors: int


class IndexHealth(BaseModel):
    """Counts per kind in the graph and in the vector store, and the index's recorded documents."""

    documents: int
    pending: int  # documents whose indexing has not finished (running now, or interrupted); 0 when ok
    counts: list[KindCount]
    sources: list[str] = []  # corpus roots (or file paths) of the recorded documents; [] when ok

    @property
    def ok(self) -> bool:
        return all(c.graph == c.vectors for c in self.counts)

    @property
    def empty(self) -> bool:
        return self.documents == 0 and all(c.graph == 0 and c.vectors == 0 for c in self.counts)

    def problems(self) -> list[str]:
        """One line per kind that disagrees: ``300 chunks in the graph, 0 chunk vectors``."""
        return [f"{c.graph:,} {c.kind} in the graph, {c.vectors:,} {SINGULAR[c.kind]} vectors"
                for c in self.counts if c.graph != c.vectors]

    def rebuild_command(self, index: str, paths: Sequence[str | Path] = ()) -> str:
        """The `eventfold index` call that rebuilds this index from its recorded sources (and `paths`)."""
        where = list(dict.fromkeys([*self.sources, *(str(Path(p).resolve()) for p in paths)]))
        return " ".join(["eventfold index", *(shlex.quote(w) for w in where or ["PATH"]),
                         "--index", shlex.quote(index)])


def check_index(graph: GraphStore, vectors: VectorStore, collections: dict[str, str]) -> IndexHealth:
    """Count every kind in both stores (a missing collection counts 0 vectors); when they disagree, the
    recorded sources and the documents still pending too."""
    stats = graph.stats()
    counts = [KindCount(kind=kind, graph=stats.nodes_by_label.get(label, 0),
                        vectors=vectors.count(collections[kind]) if vectors.has_collection(collections[kind]) else 0)
              for kind, label in LABELS.items()]
    health = IndexHealth(documents=stats.nodes_by_label.get("Document", 0), pending=0, counts=counts)
    if health.ok:  # the document records are read only to explain a disagreement (cheap on every query)
        return health
    docs = [n for n in graph.find_nodes("Document", limit=100_000_000) if n.label == "Document"]
    health.sources = sorted({str(n.props.get("corpus_root") or n.props.get("source") or "") for n in docs} - {""})
    health.pending = sum(n.props.get("status") == "pending" for n in docs)
    return health


def uncovered_sources(health: IndexHealth, paths: Sequence[str | Path]) -> list[str]:
    """Recorded sources that none of `paths` holds: a rebuild from `paths` would lose their documents."""
    roots = [Path(p).resolve() for p in paths]
    return [s for s in health.sources if not any(Path(s) == r or Path(s).is_relative_to(r) for r in roots)]


def reset_index(graph: GraphStore, vectors: VectorStore, collections: dict[str, str], dim: int) -> None:
    """Empty the index in both stores (its graph namespace, its three collections) for a full rebuild."""
    graph.clear()
    for name in collections.values():
        if vectors.has_collection(name):
            vectors.drop_collection(name)
        vectors.create_collection(name, dim, "COSINE")
