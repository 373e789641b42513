"""Lexical side of retrieval: BM25 (bm25s) over chunks and an entity-name lexicon for linking questions.

Both are built from the graph store's nodes (so they follow whatever backend holds the index); the
query cache (`query_cache.py`) keeps one and rebuilds it when the indexer reports a change.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from eventrag.index.extract import norm_name
from eventrag.storage.base import GraphStore, Node

_FUNCTION_WORDS = set(
    "a an the of in on at to for from by with and or but is was were are be been who whom whose which what when "
    "where why how did do does that this these those it its his her their he she they as than then".split()
)
# words that describe a relation or a kind of thing, never an entity on their own (for linking only)
_STOP = _FUNCTION_WORDS | set(
    "both same first last film song album book director performer born died place country nationality father "
    "mother son daughter wife husband child older younger earlier later".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return [t for t in _WORD.findall(text.lower()) if t not in _FUNCTION_WORDS]


@dataclass
class EntityLink:
    entity_id: str
    name: str
    matched: str  # the question span that matched
    specificity: float  # higher = rarer / longer name


@dataclass
class LexicalIndex:
    chunk_ids: list[str] = field(default_factory=list)
    bm25: object | None = None
    names: dict[str, list[str]] = field(default_factory=dict)  # normalised name or alias -> entity ids
    display: dict[str, str] = field(default_factory=dict)  # entity id -> name
    topical: set[str] = field(default_factory=set)  # entities that are the subject of some chunk (titles)
    pending_docs: set[str] = field(default_factory=set)  # half-written (a crash mid-document): never returned
    max_ngram: int = 8

    # --- build --------------------------------------------------------------------------------
    @classmethod
    def build(cls, graph: GraphStore) -> LexicalIndex:
        pending = pending_documents(graph)
        chunks = [n for n in graph.find_nodes("Chunk", limit=10_000_000) if chunk_doc(n) not in pending]
        return cls.from_nodes(chunks, graph.find_nodes("Entity", limit=10_000_000), pending)

    @classmethod
    def from_nodes(cls, chunks: Sequence[Node], entities: Sequence[Node], pending_docs: set[str] | None = None) -> LexicalIndex:
        """From the chunks to search (those of half-written documents already left out) and all entities."""
        import bm25s

        idx = cls()
        idx.pending_docs = set(pending_docs or ())
        idx.chunk_ids = [n.id for n in chunks]
        corpus = [tokenize(f"{n.props.get('title', '')} {n.props.get('text', '')}") or ["_empty_"] for n in chunks]
        if corpus:
            model = bm25s.BM25()
            model.index(corpus, show_progress=False)
            idx.bm25 = model
        titles = {norm_name(n.props.get("title", "")) for n in chunks}
        for n in entities:
            name = n.props.get("name") or ""
            idx.display[n.id] = name
            for alias in [name, *(n.props.get("aliases") or [])]:
                key = norm_name(alias)
                if key and not all(t in _STOP for t in key.split()):
                    idx.names.setdefault(key, []).append(n.id)
            if norm_name(name) in titles:
                idx.topical.add(n.id)
        return idx

    # --- query --------------------------------------------------------------------------------
    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        if self.bm25 is None or not self.chunk_ids:
            return []
        toks = tokenize(query)
        if not toks:
            return []
        k = min(k, len(self.chunk_ids))
        docs, scores = self.bm25.retrieve([toks], k=k, show_progress=False, n_threads=1)  # type: ignore[attr-defined]
        return [(self.chunk_ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def link(self, text: str, limit: int = 6) -> list[EntityLink]:
        """Entities whose name (or alias) appears in `text`, longest non-overlapping matches first."""
        words = norm_name(text).split()
        found: list[tuple[int, int, str]] = []
        for n in range(min(self.max_ngram, len(words)), 0, -1):
            for i in range(len(words) - n + 1):
                key = " ".join(words[i:i + n])
                if key in self.names and not (n == 1 and (len(key) < 4 or key in _STOP)):
                    found.append((i, i + n, key))
        taken: list[tuple[int, int]] = []
        out: list[EntityLink] = []
        for s, e, key in found:  # longest first (outer loop order)
            if any(not (e <= a or s >= b) for a, b in taken):
                continue
            taken.append((s, e))
            ids = self.names[key]
            ids = sorted(ids, key=lambda x: (x not in self.topical, x))
            spec = (e - s) + (1.0 if ids[0] in self.topical else 0.0) - 0.2 * math.log1p(len(ids))
            out.append(EntityLink(entity_id=ids[0], name=self.display.get(ids[0], key), matched=key, specificity=spec))
        out.sort(key=lambda x: -x.specificity)
        return out[:limit]


def pending_documents(graph: GraphStore) -> set[str]:
    """Documents a crashed run left half-written (status pending): their chunks are never evidence."""
    return {n.id for n in graph.find_nodes("Document", limit=100_000_000) if n.props.get("status") == "pending"}


def chunk_doc(node: object) -> str:
    """The document a Chunk node belongs to."""
    props = getattr(node, "props", {})
    ids = getattr(node, "doc_ids", [])
    return props.get("doc_id") or (ids[0] if ids else "")


def minmax(values: dict[str, float]) -> dict[str, float]:
    if not values:
        return {}
    arr = np.fromiter(values.values(), dtype=np.float64)
    lo, hi = float(arr.min()), float(arr.max())
    if hi - lo < 1e-12:
        return {k: 1.0 for k in values}
    return {k: (v - lo) / (hi - lo) for k, v in values.items()}
