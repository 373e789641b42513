"""What query time keeps in memory, built once from the stores and rebuilt when the index changes.

- the lexical side (BM25 over chunks, the entity-name lexicon: `lexical.py`);
- the passage graph for personalised PageRank and the entity <-> passage adjacency (`ppr.py`), so the
  graph channels need no database round trip per query;
- the event graph (`event_walk.py`): event mode's three-hop walk without a database round trip;
- exact vector matrices of the chunk, entity and event collections. Milvus Lite makes one pure-Python
  pass over every row per search call (and per id lookup); one numpy product over 40k x 384 floats
  takes about 2 ms. Collections above `max_rows` stay in the vector store (a Milvus server searches
  them well), and so does everything when `memory_vectors` is off.

The vector store stays the store of record: the matrices are a read cache of it, dropped on
`invalidate()` (the indexer calls it after every change).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from eventrag.index.extract import norm_name
from eventrag.query.event_walk import EventGraph
from eventrag.query.lexical import LexicalIndex, chunk_doc, pending_documents
from eventrag.query.ppr import PassageGraph, PPRConfig
from eventrag.storage.base import GraphStore, VectorStore

KINDS = ("chunks", "entities", "events")


@dataclass
class VectorMatrix:
    """Rows of one collection (L2-normalised, so a product is the cosine similarity)."""

    ids: list[str]
    row: dict[str, int]
    mat: np.ndarray  # (n, dim) float32

    @classmethod
    def load(cls, store: VectorStore, collection: str, ids: Sequence[str], dim: int) -> VectorMatrix:
        recs = store.get(collection, list(ids)) if ids else []
        mat = np.asarray([r.vector for r in recs], dtype=np.float32).reshape(len(recs), dim)
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        mat /= np.maximum(norms, 1e-12)
        got = [r.id for r in recs]
        return cls(ids=got, row={i: k for k, i in enumerate(got)}, mat=mat)

    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """Exact top-k per query row, best first."""
        q = np.asarray(queries, dtype=np.float32).reshape(-1, self.mat.shape[1])
        n = len(self.ids)
        if n == 0 or k < 1:
            return [[] for _ in range(len(q))]
        sims = q @ self.mat.T
        k = min(k, n)
        out = []
        for s in sims:
            idx = np.argpartition(-s, k - 1)[:k]
            idx = idx[np.argsort(-s[idx], kind="stable")]
            out.append([(self.ids[i], float(s[i])) for i in idx])
        return out

    def sims(self, ids: Sequence[str], query: np.ndarray) -> dict[str, float]:
        rows = [(i, self.row[i]) for i in ids if i in self.row]
        if not rows:
            return {}
        vals = self.mat[[r for _, r in rows]] @ np.asarray(query, dtype=np.float32).reshape(-1)
        return {i: float(v) for (i, _), v in zip(rows, vals, strict=True)}


@dataclass
class QuerySnapshot:
    lexical: LexicalIndex
    passages: PassageGraph
    vectors: dict[str, VectorMatrix] = field(default_factory=dict)  # kind -> matrix; absent: ask the store
    titles: dict[str, list[str]] = field(default_factory=dict)  # title_key(passage title) -> passages
    events: EventGraph | None = None  # event mode's walk, in memory (absent: the store walks)

    def own_passages(self, entity_id: str) -> list[str]:
        """The passages an entity is the subject of: its topic edges, else the passages whose title is its
        name up to an article or a disambiguation ("Rank Organisation" -> "The Rank Organisation")."""
        own = self.passages.topic.get(entity_id)
        if own:
            return own
        name = self.lexical.display.get(entity_id)
        return self.titles.get(title_key(name), []) if name else []


_PAREN = re.compile(r"\s*\([^)]*\)\s*$")


def title_key(title: str) -> str:
    """Passage title or entity name -> lookup key: no trailing "(disambiguation)", no leading article."""
    key = norm_name(_PAREN.sub("", title))
    for article in ("the ", "a ", "an "):
        if key.startswith(article) and len(key) - len(article) >= 4:
            return key[len(article):]
    return key


@dataclass(frozen=True)
class CacheConfig:
    memory_vectors: bool = True
    memory_graph: bool = True  # the event graph's walk in memory (else one store query per walk)
    max_rows: int = 300_000  # per collection (~460 MB of 384-d float32)
    ppr: PPRConfig = field(default_factory=PPRConfig)


def build_snapshot(graph: GraphStore, vectors: VectorStore | None, collections: dict[str, str], dim: int,
                   config: CacheConfig) -> QuerySnapshot:
    pending = pending_documents(graph)  # half-written by a crashed run: none of their chunks is searched
    chunks = [n for n in graph.find_nodes("Chunk", limit=10_000_000) if chunk_doc(n) not in pending]
    entities = graph.find_nodes("Entity", limit=10_000_000)
    lexical = LexicalIndex.from_nodes(chunks, entities, pending)
    chunk_ids = [n.id for n in chunks]
    entity_ids = {n.id for n in entities}
    mentions = graph.get_edges(chunk_ids, edge_types=["MENTIONED_IN"]) if chunk_ids else []
    passages = PassageGraph.build(chunk_ids, mentions, entity_ids, config.ppr)
    titles: dict[str, list[str]] = {}
    for n in chunks:
        key = title_key(n.props.get("title") or "")
        if key:
            titles.setdefault(key, []).append(n.id)
    snap = QuerySnapshot(lexical=lexical, passages=passages, titles=titles,
                         events=EventGraph.load(graph, entities=entities) if config.memory_graph else None)
    if vectors is None or not config.memory_vectors:
        return snap
    event_ids = list(dict.fromkeys(e.src for e in mentions if e.src not in entity_ids))
    wanted = {"chunks": chunk_ids, "entities": sorted(entity_ids), "events": event_ids}
    for kind in KINDS:
        ids = wanted[kind]
        if kind in collections and len(ids) <= config.max_rows:
            snap.vectors[kind] = VectorMatrix.load(vectors, collections[kind], ids, dim)
    return snap


class QueryCache:
    """Builds the snapshot on first use and again after `invalidate()` (thread-safe)."""

    def __init__(self, graph: GraphStore, vectors: VectorStore | None = None, collections: dict[str, str] | None = None,
                 dim: int = 384, config: CacheConfig | None = None) -> None:
        self.graph, self.vectors = graph, vectors
        self.collections = collections or {}
        self.dim = dim
        self.config = config or CacheConfig()
        self._snap: QuerySnapshot | None = None
        self._lock = threading.Lock()

    def get(self) -> QuerySnapshot:
        with self._lock:
            if self._snap is None:
                self._snap = build_snapshot(self.graph, self.vectors, self.collections, self.dim, self.config)
            return self._snap

    def invalidate(self) -> None:
        with self._lock:
            self._snap = None
