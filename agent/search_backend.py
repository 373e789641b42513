"""A `SearchBackend` view of a retriever with a fixed retrieval mode (e.g. `ask --mode event`)."""

from __future__ import annotations

from eventrag.schema import Chunk, RetrievalMode, RetrievalResult, SearchBackend


class ModeBackend:
    """Delegates to `inner`, using `mode` when the caller gives none."""

    def __init__(self, inner: SearchBackend, mode: RetrievalMode | None = None) -> None:
        self.inner, self.mode = inner, mode

    def retrieve(self, query: str, *, mode: RetrievalMode | None = None, top_k: int = 5) -> RetrievalResult:
        return self.inner.retrieve(query, mode=mode or self.mode, top_k=top_k)

    def get_chunk(self, chunk_id: str) -> Chunk | None:
        return self.inner.get_chunk(chunk_id)

    def get_document_chunks(self, doc_id: str) -> list[Chunk]:
        return self.inner.get_document_chunks(doc_id)
