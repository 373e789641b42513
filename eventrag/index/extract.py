"""LLM extraction: ONE structured call per chunk (JSON schema), lenient parse, one repair, else failed.

The chat model's own content-hash cache makes a re-index of unchanged chunks free; calls run in a
thread pool bounded by the concurrency limit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from eventfold.llm.json_repair import JSONRepairError, parse_json_lenient
from eventfold.llm.types import ChatModel, LLMError, Message
from eventrag.dates import normalise_time
from eventrag.prompts import (
    ENTITY_TYPES,
    EXTRACTION_SYSTEM,
    REPAIR_SYSTEM,
    extraction_schema,
    extraction_user,
    repair_user,
)
from eventrag.schema import RELATION_TYPES, Chunk, ChunkExtraction, Entity, Event, Participant, Relation


class Extractor(Protocol):
    """Turns chunks into events, entities and relations (LLM or rules)."""

    name: str

    def extract_many(self, items: Iterable[tuple[Chunk, str | None]]) -> Iterator[ChunkExtraction]:
        """(chunk, document date) pairs in, one extraction per chunk out (order not guaranteed)."""
        ...


class MalformedOutput(ValueError):
    """The model's reply is not a usable extraction object."""


def norm_name(name: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", name.lower())).strip()


def entity_key(name: str) -> str:
    return "en_" + hashlib.sha256(norm_name(name).encode()).hexdigest()[:16]


def event_key(chunk_id: str, local_id: str, title: str) -> str:
    return "ev_" + hashlib.sha256(f"{chunk_id}\x00{local_id}\x00{title}".encode()).hexdigest()[:16]


def lenient_json(text: str) -> Any:
    """Parse JSON the way small models write it (fences, prose, trailing commas, truncation)."""
    try:
        return parse_json_lenient(text)
    except JSONRepairError as exc:
        raise MalformedOutput(str(exc)) from exc


def _str(v: Any, limit: int = 400) -> str:
    return v.strip()[:limit] if isinstance(v, str) else ""


def to_extraction(obj: Any, chunk: Chunk, doc_date: str | None) -> ChunkExtraction:
    """Validate a parsed object into a ChunkExtraction; malformed items are dropped, not fatal."""
    if not isinstance(obj, dict) or not any(k in obj for k in ("entities", "events", "relations")):
        raise MalformedOutput("expected an object with entities/events/relations")
    out = ChunkExtraction(chunk_id=chunk.chunk_id)
    names: dict[str, str] = {}  # normalised name -> entity id
    for item in obj.get("entities") or []:
        name = _str(item.get("name"), 120) if isinstance(item, dict) else ""
        if not name or norm_name(name) in names:
            continue
        etype = _str(item.get("type"), 20).upper()
        eid = entity_key(name)
        names[norm_name(name)] = eid
        out.entities.append(Entity(entity_id=eid, name=name, type=etype if etype in ENTITY_TYPES else "OTHER",
                                   description=_str(item.get("description")), chunk_ids=[chunk.chunk_id],
                                   doc_ids=[chunk.doc_id]))
    local: dict[str, str] = {}  # "E1" -> event id
    for item in obj.get("events") or []:
        if not isinstance(item, dict) or not _str(item.get("title")):
            continue
        title = _str(item.get("title"), 200)
        lid = _str(item.get("id"), 20) or f"E{len(local) + 1}"
        evid = event_key(chunk.chunk_id, lid, title)
        local[lid] = evid
        parts = []
        for p in item.get("participants") or []:
            pname = _str(p.get("entity"), 120) if isinstance(p, dict) else _str(p, 120)
            if pname:
                parts.append(Participant(entity=pname, role=_str(p.get("role"), 60) if isinstance(p, dict) else ""))
                if norm_name(pname) not in names:  # a participant the model forgot to list as an entity
                    names[norm_name(pname)] = entity_key(pname)
                    out.entities.append(Entity(entity_id=entity_key(pname), name=pname, chunk_ids=[chunk.chunk_id],
                                               doc_ids=[chunk.doc_id]))
        out.events.append(Event(event_id=evid, title=title, description=_str(item.get("description")),
                                time=normalise_time(_str(item.get("time"), 200), doc_date),
                                location=_str(item.get("location"), 120) or None, participants=parts,
                                chunk_ids=[chunk.chunk_id], doc_ids=[chunk.doc_id]))

    def resolve(ref: str) -> str | None:
        if ref in local:
            return local[ref]
        return names.get(norm_name(ref))

    for item in obj.get("relations") or []:
        if not isinstance(item, dict):
            continue
        src, dst = resolve(_str(item.get("source"), 120)), resolve(_str(item.get("target"), 120))
        rtype = _str(item.get("type"), 20).upper()
        if not src or not dst or src == dst:
            continue
        out.relations.append(Relation(source=src, target=dst, type=rtype if rtype in RELATION_TYPES else "RELATED_TO",
                                      chunk_ids=[chunk.chunk_id]))
    return out


class LLMExtractor:
    """One JSON-schema chat call per chunk; one repair call on malformed output; else a failed record."""

    def __init__(self, chat_model: ChatModel, *, concurrency: int = 4, max_tokens: int = 1024) -> None:
        self.chat_model = chat_model
        self.concurrency = max(1, concurrency)
        self.max_tokens = max_tokens
        self.schema = extraction_schema()
        self.name = f"llm:{getattr(chat_model, 'name', 'model')}"

    def extract(self, chunk: Chunk, doc_date: str | None = None) -> ChunkExtraction:
        messages = [Message(role="system", content=EXTRACTION_SYSTEM),
                    Message(role="user", content=extraction_user(chunk.title, chunk.text, doc_date))]
        calls = cached = 0
        try:
            resp = self.chat_model.chat(messages, json_schema=self.schema, temperature=0.0, max_tokens=self.max_tokens)
            calls, cached = 1, int(resp.cached)
            try:
                obj = resp.parsed if isinstance(resp.parsed, dict) else lenient_json(resp.text)
                return to_extraction(obj, chunk, doc_date).model_copy(update={"llm_calls": calls, "cached_calls": cached})
            except MalformedOutput as first:
                fix = self.chat_model.chat(
                    [Message(role="system", content=REPAIR_SYSTEM),
                     Message(role="user", content=repair_user(resp.text, str(first), self.schema))],
                    json_schema=self.schema, temperature=0.0, max_tokens=self.max_tokens)
                calls, cached = 2, cached + int(fix.cached)
                obj = fix.parsed if isinstance(fix.parsed, dict) else lenient_json(fix.text)
                ext = to_extraction(obj, chunk, doc_date)
                return ext.model_copy(update={"llm_calls": calls, "cached_calls": cached, "repaired": True})
        except (MalformedOutput, LLMError) as exc:
            return ChunkExtraction(chunk_id=chunk.chunk_id, failed=True, error=f"{type(exc).__name__}: {exc}"[:500],
                                   llm_calls=calls, cached_calls=cached)

    def extract_many(self, items: Iterable[tuple[Chunk, str | None]]) -> Iterator[ChunkExtraction]:
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="extract") as pool:
            futures = [pool.submit(self.extract, c, d) for c, d in items]
            for fut in futures:
                yield fut.result()
