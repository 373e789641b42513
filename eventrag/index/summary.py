"""What an indexing run reports: progress after every batch (`IndexProgress`), files skipped with a
reason (`SkippedFile`) and the run's totals (`IndexSummary`)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field


class IndexProgress(BaseModel):
    """Where a long indexing run stands, reported after every batch of documents."""

    docs_done: int = 0
    docs_total: int = 0
    chunks: int = 0
    events: int = 0
    entities: int = 0
    elapsed_s: float = 0.0
    current: str = ""  # source (or id) of the last document of the batch
    # within a batch being indexed (0 between batches): its documents, and its chunks done of all
    batch_docs: int = 0
    batch_chunks_done: int = 0
    batch_chunks_total: int = 0

    @property
    def docs_progress(self) -> float:
        """Documents done, counting the batch being indexed by its share of chunks done."""
        if self.batch_docs and self.batch_chunks_total:
            return self.docs_done + self.batch_docs * self.batch_chunks_done / self.batch_chunks_total
        return float(self.docs_done)

    @property
    def chunks_per_min(self) -> float:
        return self.chunks / self.elapsed_s * 60 if self.elapsed_s > 0 else 0.0

    @property
    def events_per_s(self) -> float:
        return self.events / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate so far (None before the first batch)."""
        done = self.docs_progress
        if done <= 0 or self.elapsed_s <= 0:
            return None
        return self.elapsed_s / done * max(self.docs_total - done, 0)


Progress = Callable[[IndexProgress], None]
# (the batch's totals so far, or None; chunks done; chunks in the batch), after each slice of a batch
SliceReport = Callable[["IndexSummary | None", int, int], None]


class SkippedFile(BaseModel):
    source: str
    reason: str


class IndexSummary(BaseModel):
    extractor: str = ""
    docs_seen: int = 0
    docs_indexed: int = 0
    docs_unchanged: int = 0
    docs_resumed: int = 0  # found pending (an earlier run crashed) and rebuilt
    docs_retried: int = 0  # extraction had failed in an earlier run: rebuilt
    docs_failed: int = 0  # extraction failed for some chunk: left `failed`, retried by the next run
    docs_pruned: int = 0  # gone from their folder: removed from the index
    pruned: list[str] = Field(default_factory=list)  # ids of pruned documents (first 20)
    failed_docs: list[str] = Field(default_factory=list)  # ids of documents left for retry (first 20)
    skipped: list[SkippedFile] = Field(default_factory=list)
    chunks: int = 0
    chunks_failed: int = 0
    events: int = 0
    entities: int = 0
    entity_merges: int = 0
    edges: int = 0
    inferred_edges: int = 0
    llm_calls: int = 0
    llm_cached: int = 0
    elapsed_s: float = 0.0
    failures: list[str] = Field(default_factory=list)  # "chunk_id: error" for failed chunks (first 20)
    notes: list[str] = Field(default_factory=list)  # what was read but changed on the way, or kept (first 20)

    @property
    def llm_calls_per_chunk(self) -> float:
        return self.llm_calls / self.chunks if self.chunks else 0.0

    @property
    def cache_hit_rate(self) -> float:
        return self.llm_cached / self.llm_calls if self.llm_calls else 0.0

    def brief(self) -> str:
        """One line for a console: what was indexed, with what, and how much was skipped or failed."""
        parts = [
            f"{self.docs_seen} docs ({self.docs_indexed} indexed, {self.docs_unchanged} unchanged)",
            f"{self.chunks} chunks",
            f"{self.events} events",
            f"{self.entities} entities",
            f"{self.edges} edges ({self.inferred_edges} inferred)",
            f"{self.extractor} extraction, {self.llm_calls} LLM calls ({self.llm_cached} cached)",
        ]
        if self.skipped:
            parts.append(f"{len(self.skipped)} files skipped")
        if self.chunks_failed:
            parts.append(f"{self.chunks_failed} chunks failed")
        if self.docs_failed:
            parts.append(f"{self.docs_failed} docs left pending (extraction failed; retried next run)")
        if self.docs_retried:
            parts.append(f"{self.docs_retried} docs retried")
        if self.docs_pruned:
            parts.append(f"{self.docs_pruned} docs pruned (files gone)")
        return ", ".join(parts)

    def add(self, other: IndexSummary) -> None:
        for f in ("docs_seen", "docs_indexed", "docs_unchanged", "docs_resumed", "docs_retried", "docs_failed",
                  "docs_pruned", "chunks", "chunks_failed", "events", "entities", "entity_merges", "edges",
                  "inferred_edges", "llm_calls", "llm_cached"):
            setattr(self, f, getattr(self, f) + getattr(other, f))
        self.skipped += other.skipped
        self.failures = (self.failures + other.failures)[:20]
        self.pruned = (self.pruned + other.pruned)[:20]
        self.failed_docs = (self.failed_docs + other.failed_docs)[:20]
        self.notes = (self.notes + other.notes)[:20]
