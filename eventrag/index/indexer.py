"""Indexer: documents -> chunks, events, entities and edges in the graph store, vectors in the vector store.

- incremental: a document whose content hash (text, title, date, extractor, chunking) is unchanged and
  whose last indexing completed is skipped;
- resumable: a document is marked `pending` before anything of it is written and `done` after; a
  pending or changed document is first deleted (graph + vectors) and then rebuilt, so a crash leaves
  no duplicates and a rerun finishes the job (LLM calls come back from the content-hash cache);
- extraction that fails (an LLM server down, output unusable) leaves the document `failed`, not
  `done`: its chunks stay searchable, and the next run retries it (reported as retried);
- identity: a file's document id is ``<corpus name>/<path relative to the corpus root>``; roots and
  their names are shared by the indexes of a home (`eventrag.index.corpora`), so a file keeps its id
  whether its folder, a sub-folder or the file alone is indexed, and a moved root keeps its documents;
- large documents are indexed a slice of chunks at a time (`slice_chunks`), with progress per slice;
- prune: a re-index of a folder removes the documents whose files were in it and are gone
  (``prune=False`` keeps them); a file that exists but cannot be read this time is never pruned;
- `delete(doc_id)` removes a document's chunks, events, edges and vectors (shared entities lose only
  this document's provenance).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from eventrag.embed import Embedder
from eventrag.graph_io import StoreEntityIndex, chunk_node, event_node, event_text
from eventrag.index.chunking import ChunkingConfig, chunk_document
from eventrag.index.corpora import CorpusRegistry, KnownDocument, inside, known_documents
from eventrag.index.corpus_load import CorpusLoader, LoadedCorpora
from eventrag.index.documents import DEFAULT_MAX_BYTES, document_id_problem, without_nul
from eventrag.index.edges import add_locations, extracted_edges
from eventrag.index.extract import Extractor
from eventrag.index.fusion import EntityFuser
from eventrag.index.infer import ExpansionConfig, refresh_inferred
from eventrag.index.summary import IndexProgress, IndexSummary, Progress, SkippedFile, SliceReport
from eventrag.schema import Chunk, ChunkExtraction, Document, Entity, Event
from eventrag.storage.base import Edge, GraphStore, Node, VectorStore


def content_hash(doc: Document, extractor: str, chunking: ChunkingConfig) -> str:
    key = f"{extractor}\x00{chunking.max_tokens}/{chunking.overlap_tokens}\x00{doc.title}\x00{doc.date}\x00{doc.text}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


class Indexer:
    def __init__(self, graph: GraphStore, vectors: VectorStore, embedder: Embedder, extractor: Extractor, *,
                 collections: dict[str, str], chunking: ChunkingConfig | None = None, fusion_threshold: float = 0.9,
                 expansion: ExpansionConfig | None = None, batch_docs: int = 32,
                 max_file_bytes: int = DEFAULT_MAX_BYTES, on_change: Callable[[], None] | None = None,
                 corpora: CorpusRegistry | None = None, slice_chunks: int = 64) -> None:
        self.graph, self.vectors, self.embedder, self.extractor = graph, vectors, embedder, extractor
        self.collections = collections  # kind ("chunks", "events", "entities") -> collection name
        self.chunking = chunking or ChunkingConfig()
        self.expansion = expansion or ExpansionConfig()
        self.batch_docs = max(1, batch_docs)
        self.slice_chunks = max(1, slice_chunks)
        self.corpora = corpora or CorpusRegistry()  # corpus roots shared by the indexes of a home
        self.max_file_bytes = max_file_bytes
        self.on_change = on_change
        self._touched: set[str] = set()  # entities of purged documents, until the inferred edges are refreshed
        self._hubs: set[str] = set()  # entities with too many events to link, while nothing is removed
        self.entity_index = StoreEntityIndex(graph, vectors, collections["entities"])
        self.fuser = EntityFuser(embedder, self.entity_index, threshold=fusion_threshold)
        for name in collections.values():
            vectors.create_collection(name, embedder.dim, "COSINE")

    # --- public API ---------------------------------------------------------------------------
    def index_paths(self, paths: Iterable[str | Path], progress: Progress | None = None, *,
                    prune: bool = True) -> IndexSummary:
        """Index files and folders; with `prune`, documents of an indexed folder whose files are gone
        are removed. Unreadable, binary, empty, oversized, hidden or linked-out files are skipped with a
        reason; a corpus root moved to a new folder keeps its documents (`eventrag.index.corpora`)."""
        t0 = time.perf_counter()
        summary = IndexSummary(extractor=self.extractor.name)
        known = known_documents(self._known_documents())
        loader = CorpusLoader(self.corpora, known, self._hash, self.max_file_bytes)
        loaded = loader.load(paths, summary)
        self._record_moves(known, loaded.moves)
        summary.add(self.index_documents(loaded.docs, progress=progress))
        if prune:
            self._prune(known, loaded, summary)
        summary.elapsed_s = round(time.perf_counter() - t0, 3)
        return summary

    def _hash(self, doc: Document) -> str:
        return content_hash(doc, self.extractor.name, self.chunking)

    def _record_moves(self, known: list[KnownDocument], moves: dict[str, str]) -> None:
        """The documents of a moved root now live under its new folder (their ids do not change)."""
        moved = [d for d in known if d.root in moves]
        if moved:
            self.graph.upsert_nodes([Node(id=d.doc_id, label="Document", doc_ids=[d.doc_id],
                                          props={"corpus_root": moves[d.root], "path": d.rel}) for d in moved])

    def _prune(self, known: list[KnownDocument], loaded: LoadedCorpora, summary: IndexSummary) -> None:
        """Remove the documents of each scanned folder whose files are gone (single files prune nothing);
        what exists but could not be read this run is kept."""
        present = {d.doc_id for d in loaded.docs}
        gone = []
        for d in known:
            location = Path(loaded.moves.get(d.root, d.root)) / d.rel
            if d.doc_id not in present and any(inside(location, f) for f in loaded.folders) \
                    and not loaded.keeps(location):
                gone.append(d.doc_id)
        for doc_id in gone:
            self._purge(doc_id)
        if gone:
            self._refresh_inferred([])
            self._flush()
            if self.on_change is not None:
                self.on_change()
        summary.docs_pruned = len(gone)
        summary.pruned = gone[:20]

    def index_documents(self, docs: Sequence[Document], progress: Progress | None = None) -> IndexSummary:
        """Index `docs` in batches of `batch_docs` documents; `progress` hears after every batch, and
        after every slice of `slice_chunks` chunks of a batch that has more."""
        t0 = time.perf_counter()
        summary = IndexSummary(extractor=self.extractor.name, docs_seen=len(docs))
        unique = self._unique(docs, summary)
        for start in range(0, len(unique), self.batch_docs):
            batch = unique[start:start + self.batch_docs]
            current = batch[-1].source or batch[-1].doc_id

            def report(part: IndexSummary | None, done: int, total: int, docs_done: int = start,
                       batch_docs: int = len(batch), current: str = current) -> None:
                if progress is None:
                    return
                events = summary.events + (part.events if part else 0)
                entities = summary.entities + (part.entities if part else 0)
                progress(IndexProgress(docs_done=docs_done, docs_total=len(unique), chunks=summary.chunks + done,
                                       events=events, entities=entities, elapsed_s=time.perf_counter() - t0,
                                       current=current, batch_docs=batch_docs, batch_chunks_done=done,
                                       batch_chunks_total=total))

            summary.add(self._index_batch(batch, report))
            report(None, 0, 0, docs_done=min(start + len(batch), len(unique)), batch_docs=0)
        summary.docs_seen = len(docs)
        summary.elapsed_s = time.perf_counter() - t0
        if self.on_change is not None:
            self.on_change()
        return summary

    @staticmethod
    def _unique(docs: Sequence[Document], summary: IndexSummary) -> list[Document]:
        """`docs` without NULs, each id once: the same document reached twice (overlapping folders) is
        indexed once, another document under a taken id is skipped with the reason, as is an id that
        cannot be stored."""
        seen: dict[str, Document] = {}
        for d in docs:
            d = without_nul(d)
            problem = document_id_problem(d.doc_id)
            first = seen.get(d.doc_id)
            if problem:
                summary.skipped.append(SkippedFile(source=d.source or d.doc_id[:80], reason=problem))
            elif first is None:
                seen[d.doc_id] = d
            elif (first.text, first.title, first.date) != (d.text, d.title, d.date):
                summary.skipped.append(SkippedFile(source=d.source or d.doc_id[:80], reason=(
                    f"document id {d.doc_id!r} is given twice with different texts; the first is indexed")))
        return list(seen.values())

    def delete(self, doc_id: str) -> bool:
        """Remove a document and everything only it produced; False if it was not indexed."""
        if not self.graph.get_nodes([doc_id]):
            return False
        self._purge(doc_id)
        self._refresh_inferred([])
        self._flush()
        if self.on_change is not None:
            self.on_change()
        return True

    # --- internals ----------------------------------------------------------------------------
    def _known_documents(self) -> list[Node]:
        return [n for n in self.graph.find_nodes("Document", limit=100_000_000) if n.label == "Document"]

    def _flush(self) -> None:
        for name in self.collections.values():
            self.vectors.flush(name)

    def _purge(self, doc_id: str) -> None:
        ents = [n.id for n in self.graph.find_nodes("Entity", doc_id=doc_id, limit=1_000_000)]
        self._touched.update(ents)
        self._hubs.clear()  # their event counts fall: any may link again
        self.graph.delete_document(doc_id)
        for kind in ("chunks", "events"):
            self.vectors.delete(self.collections[kind], filter={"doc_id": doc_id})
        if ents:
            alive = {n.id for n in self.graph.get_nodes(ents)}
            gone = [e for e in ents if e not in alive]
            if gone:
                self.vectors.delete(self.collections["entities"], ids=gone)

    def _index_batch(self, batch: list[Document], report: SliceReport) -> IndexSummary:
        s = IndexSummary(extractor=self.extractor.name)
        todo = self._changed(batch, s)
        if not todo:
            return s
        hashes = {d.doc_id: self._hash(d) for d in todo}
        self.graph.upsert_nodes([Node(id=d.doc_id, label="Document", doc_ids=[d.doc_id], props={
            "name": d.title or d.doc_id, "source": d.source, "date": d.date, "hash": hashes[d.doc_id],
            "status": "pending", "time_start": d.date, "time_end": d.date,
            **{k: d.meta[k] for k in ("corpus", "corpus_root", "path") if k in d.meta}}) for d in todo])
        dates = {d.doc_id: d.date for d in todo}
        chunks: list[Chunk] = [c for d in todo for c in chunk_document(d, self.chunking)]
        failed_docs: set[str] = set()
        # a slice at a time: extraction, vectors (late chunking holds every token vector of its texts)
        # and fusion stay bounded by the slice however long a document is
        for start in range(0, len(chunks), self.slice_chunks):
            part = chunks[start:start + self.slice_chunks]
            failed_docs |= self._index_slice(part, dates, s)
            if start + len(part) < len(chunks):
                report(s, start + len(part), len(chunks))
        if not chunks:
            s.edges += (n := self._refresh_inferred([]))
            s.inferred_edges += n
        self._flush()  # vectors durable before a document is marked done
        # a document whose extraction failed is not done: the next run retries it (its chunks stay searchable)
        self.graph.upsert_nodes([Node(id=d.doc_id, label="Document", doc_ids=[d.doc_id], props={
            "status": "failed" if d.doc_id in failed_docs else "done"}) for d in todo])
        s.docs_failed = len(failed_docs)
        s.failed_docs = sorted(failed_docs)[:20]
        s.docs_indexed = len(todo) - len(failed_docs)
        s.chunks = len(chunks)
        return s

    def _changed(self, batch: list[Document], s: IndexSummary) -> list[Document]:
        """The documents of `batch` to (re)build: new, changed, or left pending or failed by an earlier
        run (whose remains are purged first); unchanged finished ones are counted and left alone."""
        existing = {n.id: n for n in self.graph.get_nodes([d.doc_id for d in batch])}
        todo: list[Document] = []
        for d in batch:
            node = existing.get(d.doc_id)
            if node is not None and node.label == "Document" and node.props.get("status") == "done" \
                    and node.props.get("hash") == self._hash(d):
                s.docs_unchanged += 1
                continue
            if node is not None:
                status = node.props.get("status")
                s.docs_resumed += int(status == "pending")
                s.docs_retried += int(status == "failed")
                self._purge(d.doc_id)
            todo.append(d)
        return todo

    def _index_slice(self, chunks: list[Chunk], dates: dict[str, str | None], s: IndexSummary) -> set[str]:
        """Write a slice of chunks with their extractions and vectors; returns the documents whose
        extraction failed in it."""
        self.graph.upsert_nodes([chunk_node(c) for c in chunks])
        self.graph.upsert_edges([Edge(src=c.chunk_id, dst=c.doc_id, type="PART_OF", doc_ids=[c.doc_id])
                                 for c in chunks])
        extractions = list(self.extractor.extract_many((c, dates[c.doc_id]) for c in chunks))
        vecs, event_vecs = self._embed_chunks(chunks, extractions)
        self.vectors.upsert(self.collections["chunks"], [c.chunk_id for c in chunks], vecs,
                            [{"doc_id": c.doc_id} for c in chunks])
        new_events = self._write_graph(chunks, extractions, s, event_vecs)
        n = self._refresh_inferred(new_events)
        s.inferred_edges += n
        s.edges += n
        doc_of = {c.chunk_id: c.doc_id for c in chunks}
        return {doc_of[e.chunk_id] for e in extractions if e.failed and e.chunk_id in doc_of}

    def _embed_chunks(self, chunks: list[Chunk], extractions: list[ChunkExtraction]) -> tuple[Any, dict[str, Any]]:
        """Chunk vectors, and the vectors of the events whose text is a sentence of their chunk (the rule
        extractor's) from the same forward pass (late chunking, when the embedder offers it)."""
        texts = [f"{c.title}\n{c.text}" if c.title else c.text for c in chunks]
        late = getattr(self.embedder, "embed_with_spans", None)
        if late is None:
            return self.embedder.embed(texts), {}
        by_chunk = {e.chunk_id: e for e in extractions}
        spans: list[list[tuple[int, int]]] = []
        owners: list[list[str]] = []
        for c in chunks:
            shift = len(c.title) + 1 if c.title else 0
            row, ids = [], []
            ext = by_chunk.get(c.chunk_id)
            for ev in ext.events if ext is not None else []:
                pos = c.text.find(ev.description) if ev.description else -1
                if pos >= 0:
                    row.append((shift + pos, shift + pos + len(ev.description)))
                    ids.append(ev.event_id)
            spans.append(row)
            owners.append(ids)
        vecs, span_vecs = late(texts, spans)
        event_vecs = {eid: v for ids, row in zip(owners, span_vecs, strict=True)
                      for eid, v in zip(ids, row, strict=True) if v is not None}
        return vecs, event_vecs

    def _write_graph(self, chunks: list[Chunk], extractions: list[ChunkExtraction], s: IndexSummary,
                     event_vecs: dict[str, Any] | None = None) -> list[str]:
        """Write the batch's entities, events and extracted edges; returns the new event ids."""
        for ext in extractions:
            s.llm_calls += ext.llm_calls
            s.llm_cached += ext.cached_calls
            if ext.failed:
                s.chunks_failed += 1
                s.failures = (s.failures + [f"{ext.chunk_id}: {ext.error}"])[:20]
        fused = self.fuser.fuse(extractions)
        s.entity_merges += len(fused.merges)
        events = [ev for ext in extractions for ev in ext.events]
        need_vec = set(fused.new_ids) | add_locations(events, fused.entities, fused.id_map)
        nodes = [Node(id=e.entity_id, label="Entity", doc_ids=e.doc_ids, props={
            "name": e.name, "type": e.type, "description": e.description, "aliases": e.aliases})
            for e in fused.entities.values()]
        nodes += [event_node(ev) for ev in events]
        self.graph.upsert_nodes(nodes)
        by_chunk = {c.chunk_id: c for c in chunks}
        known = {n.id for n in nodes} | set(by_chunk)
        valid = [e for e in extracted_edges(extractions, by_chunk, fused.id_map).values()
                 if e.src in known and e.dst in known]
        self.graph.upsert_edges(valid)
        s.edges += len(valid)
        self._write_vectors([fused.entities[i] for i in fused.entities if i in need_vec], events, event_vecs or {})
        s.events += len(events)
        s.entities += len(fused.new_ids)
        return [ev.event_id for ev in events]

    def _write_vectors(self, new_ents: list[Entity], events: list[Event], event_vecs: dict[str, Any]) -> None:
        """Vectors of the new entities (the fuser's name vectors where it made them) and of all events
        of the batch (late-chunking span vectors where the embedder gave them)."""
        if new_ents:
            missing = [e.name for e in new_ents if e.entity_id not in self.fuser.vectors]
            fresh = iter(self.embedder.embed(missing)) if missing else iter(())
            vecs = [self.fuser.vectors[e.entity_id] if e.entity_id in self.fuser.vectors else next(fresh)
                    for e in new_ents]
            self.vectors.upsert(self.collections["entities"], [e.entity_id for e in new_ents], vecs,
                                [{"doc_id": e.doc_ids[0] if e.doc_ids else ""} for e in new_ents])
        self.fuser.vectors.clear()
        if events:
            missing_ev = [ev for ev in events if ev.event_id not in event_vecs]
            fresh = iter(self.embedder.embed([event_text(ev) for ev in missing_ev])) if missing_ev else iter(())
            vecs = [event_vecs[ev.event_id] if ev.event_id in event_vecs else next(fresh) for ev in events]
            self.vectors.upsert(self.collections["events"], [ev.event_id for ev in events], vecs,
                                [{"doc_id": ev.doc_ids[0]} for ev in events])

    def _refresh_inferred(self, new_events: list[str]) -> int:
        """Recompute the inferred edges around new events and purged documents (`infer.refresh_inferred`),
        so they do not depend on the order documents came in; returns the net change."""
        touched, self._touched = sorted(self._touched), set()
        return refresh_inferred(self.graph, new_events, touched, self.expansion, self._hubs)
