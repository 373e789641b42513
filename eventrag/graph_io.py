"""Mapping between EventRAG models and storage nodes, and the store-backed entity index for fusion."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eventrag.schema import Chunk, Entity, Event
from eventrag.storage.base import GraphStore, Node, VectorStore
from eventrag.storage.errors import CollectionNotFound


def chunk_node(c: Chunk) -> Node:
    return Node(id=c.chunk_id, label="Chunk", doc_ids=[c.doc_id], props={
        "doc_id": c.doc_id, "title": c.title, "text": c.text, "index": c.index,
        "start_char": c.start_char, "end_char": c.end_char})


def node_to_chunk(n: Node) -> Chunk:
    p = n.props
    return Chunk(chunk_id=n.id, doc_id=p.get("doc_id") or (n.doc_ids[0] if n.doc_ids else ""),
                 title=p.get("title", ""), text=p.get("text", ""), index=int(p.get("index", 0)),
                 start_char=int(p.get("start_char", 0)), end_char=int(p.get("end_char", 0)))


def event_node(ev: Event) -> Node:
    return Node(id=ev.event_id, label="Event", doc_ids=ev.doc_ids, props={
        "name": ev.title, "description": ev.description, "time_raw": ev.time.raw, "time_start": ev.time.start,
        "time_end": ev.time.end, "granularity": ev.time.granularity, "location": ev.location,
        "participants": [p.model_dump() for p in ev.participants], "chunk_ids": ev.chunk_ids,
        "inferred": ev.inferred})


def event_text(ev: Event) -> str:
    parts = [ev.title]
    if ev.description and not ev.description.startswith(ev.title):
        parts.append(ev.description)
    elif ev.description:
        parts = [ev.description]
    if ev.time.raw:
        parts.append(f"({ev.time.raw})")
    if ev.location:
        parts.append(f"in {ev.location}")
    return " ".join(parts)


def node_to_entity(n: Node) -> Entity:
    p = n.props
    return Entity(entity_id=n.id, name=p.get("name", n.id), type=p.get("type", "OTHER"),
                  description=p.get("description", ""), aliases=list(p.get("aliases") or []), doc_ids=list(n.doc_ids))


class StoreEntityIndex:
    """Existing entities (graph) and nearest entity names (vector collection) for `EntityFuser`."""

    def __init__(self, graph: GraphStore, vectors: VectorStore, collection: str) -> None:
        self.graph, self.vectors, self.collection = graph, vectors, collection

    def existing(self, ids: Sequence[str]) -> dict[str, Entity]:
        return {n.id: node_to_entity(n) for n in self.graph.get_nodes(list(ids)) if n.label == "Entity"}

    def nearest(self, vectors: np.ndarray, top_k: int) -> list[list[tuple[str, float]]]:
        if len(vectors) == 0:
            return []
        try:
            if self.vectors.count(self.collection) == 0:
                return [[] for _ in range(len(vectors))]
            hits = self.vectors.search(self.collection, vectors, top_k=top_k)
        except CollectionNotFound:
            return [[] for _ in range(len(vectors))]
        return [[(h.id, h.score) for h in row] for row in hits]
