"""The graph edges a batch's extractions give (mentions, participants, locations, relations), and the
locations that become entities so LOCATED_IN has an end node."""

from __future__ import annotations

from eventrag.index.extract import entity_key
from eventrag.schema import Chunk, ChunkExtraction, Entity, Event
from eventrag.storage.base import Edge


def add_locations(events: list[Event], entities: dict[str, Entity], emap: dict[str, str]) -> set[str]:
    """Locations become entities too (LOCATED_IN needs an end node); returns the ids added."""
    added: set[str] = set()
    for ev in events:
        if ev.location and entity_key(ev.location) not in emap:
            loc = Entity(entity_id=entity_key(ev.location), name=ev.location, type="LOCATION",
                         chunk_ids=ev.chunk_ids, doc_ids=ev.doc_ids)
            entities.setdefault(loc.entity_id, loc)
            emap[loc.entity_id] = loc.entity_id
            added.add(loc.entity_id)
    return added


def extracted_edges(extractions: list[ChunkExtraction], by_chunk: dict[str, Chunk],
                     emap: dict[str, str]) -> dict[tuple[str, str, str], Edge]:
    """MENTIONED_IN, PARTICIPATES_IN, LOCATED_IN and the extracted relations of a batch, one edge per
    (source, type, target) with the provenance of every chunk that gave it; AFTER is stored as BEFORE."""
    edges: dict[tuple[str, str, str], Edge] = {}

    def add(src: str, typ: str, dst: str, doc_ids: list[str], **props: object) -> None:
        key = (src, typ, dst)
        if src == dst:
            return
        if key in edges:
            edges[key].doc_ids = list(dict.fromkeys(edges[key].doc_ids + doc_ids))
        else:
            edges[key] = Edge(src=src, type=typ, dst=dst, doc_ids=doc_ids, props=dict(props))  # type: ignore[arg-type]

    for ext in extractions:
        chunk = by_chunk[ext.chunk_id]
        title_key = entity_key(chunk.title) if chunk.title else None
        for ent in ext.entities:
            add(emap.get(ent.entity_id, ent.entity_id), "MENTIONED_IN", chunk.chunk_id, [chunk.doc_id],
                topic=ent.entity_id == title_key)
        for ev in ext.events:
            add(ev.event_id, "MENTIONED_IN", chunk.chunk_id, [chunk.doc_id])
            for p in ev.participants:
                eid = emap.get(entity_key(p.entity))
                if eid:
                    add(eid, "PARTICIPATES_IN", ev.event_id, [chunk.doc_id], role=p.role)
            if ev.location:
                add(ev.event_id, "LOCATED_IN", emap[entity_key(ev.location)], [chunk.doc_id])
        for rel in ext.relations:
            src, dst, typ = emap.get(rel.source, rel.source), emap.get(rel.target, rel.target), rel.type
            if typ == "AFTER":
                src, dst, typ = dst, src, "BEFORE"
            add(src, typ, dst, [chunk.doc_id], weight=rel.weight)
    return edges
