"""EventRAG data model (pydantic): documents, chunks, and what retrieval returns.

Event, Entity and Relation models are added by the EventRAG indexing work; the retrieval types
below are the contract the agent and the evaluation harnesses rely on: keep them stable.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

RetrievalMode = Literal["naive", "graph", "event", "agentic"]


class Document(BaseModel):
    doc_id: str
    title: str = ""
    text: str
    source: str = ""  # path or URL it came from
    date: str | None = None  # ISO date of the document, when known (anchors relative dates)
    meta: dict[str, Any] = Field(default_factory=dict)


class Chunk(BaseModel):
    chunk_id: str  # stable: derived from the content hash
    doc_id: str
    title: str = ""
    text: str
    index: int = 0  # position within the document
    start_char: int = 0
    end_char: int = 0


class RetrievedChunk(BaseModel):
    """One piece of evidence: the chunk, its score, and the graph path that reached it."""

    chunk_id: str
    doc_id: str
    title: str = ""
    text: str
    score: float
    path: list[str] = Field(default_factory=list)  # e.g. ["seed:event:e12", "CAUSES->event:e40", "chunk:c7"]
    round: int = 0  # reflection round that found it


class RetrievalResult(BaseModel):
    query: str
    mode: RetrievalMode
    chunks: list[RetrievedChunk]
    rounds: int = 1
    sub_queries: list[str] = Field(default_factory=list)
    llm_calls: int = 0  # LLM calls that answered (agentic mode)
    llm_errors: list[str] = Field(default_factory=list)  # LLM calls that failed (the rules stood in)
    elapsed_s: float = 0.0


@runtime_checkable
class SearchBackend(Protocol):
    """What the agent's `search` and `read` tools need from a retriever."""

    def retrieve(self, query: str, *, mode: RetrievalMode | None = None, top_k: int = 5) -> RetrievalResult: ...

    def get_chunk(self, chunk_id: str) -> Chunk | None: ...

    def get_document_chunks(self, doc_id: str) -> list[Chunk]: ...


# --- Event graph (added by the EventRAG indexing work) -------------------------------------------

RelationType = Literal[
    "BEFORE", "AFTER", "CAUSES", "ENABLES", "PART_OF", "PARTICIPATES_IN", "LOCATED_IN", "RELATED_TO"
]
RELATION_TYPES: tuple[str, ...] = (
    "BEFORE", "AFTER", "CAUSES", "ENABLES", "PART_OF", "PARTICIPATES_IN", "LOCATED_IN", "RELATED_TO",
)
# Edges that structure the chunk/entity/event graph itself (not extracted relation types).
MENTIONS = "MENTIONS"  # chunk -> entity / chunk -> event
INFERRED_LINK = "RELATED_TO"  # type of rule-based expansion links between events


class EventTime(BaseModel):
    """When an event happened: the text as written plus a normalised ISO date or interval."""

    raw: str = ""
    start: str | None = None  # ISO date (YYYY-MM-DD), start of the interval
    end: str | None = None  # ISO date, end of the interval (== start for a single day)
    granularity: Literal["day", "month", "year", "decade", "unknown"] = "unknown"

    @property
    def normalised(self) -> bool:
        return self.start is not None


class Participant(BaseModel):
    entity: str  # entity name as written (resolved to an entity id at index time)
    role: str = ""


class Entity(BaseModel):
    entity_id: str
    name: str
    type: str = "OTHER"
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    chunk_ids: list[str] = Field(default_factory=list)  # provenance
    doc_ids: list[str] = Field(default_factory=list)
    inferred: bool = False


class Event(BaseModel):
    event_id: str
    title: str
    description: str = ""
    time: EventTime = Field(default_factory=EventTime)
    location: str | None = None
    participants: list[Participant] = Field(default_factory=list)
    chunk_ids: list[str] = Field(default_factory=list)  # provenance
    doc_ids: list[str] = Field(default_factory=list)
    inferred: bool = False


class Relation(BaseModel):
    """A typed edge between two events or entities (ids), with provenance."""

    source: str
    target: str
    type: RelationType
    description: str = ""
    chunk_ids: list[str] = Field(default_factory=list)
    inferred: bool = False  # True for rule/LLM expansion: never evidence on its own
    weight: float = 1.0


class EntityMerge(BaseModel):
    """A fusion decision: `merged_name` (from a new chunk) was folded into `kept_id`."""

    kept_id: str
    kept_name: str
    merged_name: str
    similarity: float
    chunk_ids: list[str] = Field(default_factory=list)


class ChunkExtraction(BaseModel):
    """What one chunk yielded (before fusion): names are still local to the chunk."""

    chunk_id: str
    entities: list[Entity] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)  # source/target: event ids or entity names
    failed: bool = False
    error: str | None = None
    llm_calls: int = 0
    cached_calls: int = 0
    repaired: bool = False
