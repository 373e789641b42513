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
    llm_calls: int = 0
    elapsed_s: float = 0.0


@runtime_checkable
class SearchBackend(Protocol):
    """What the agent's `search` and `read` tools need from a retriever."""

    def retrieve(self, query: str, *, mode: RetrievalMode | None = None, top_k: int = 5) -> RetrievalResult: ...

    def get_chunk(self, chunk_id: str) -> Chunk | None: ...

    def get_document_chunks(self, doc_id: str) -> list[Chunk]: ...
