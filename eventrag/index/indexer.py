"""Indexer: documents -> chunks, events, entities and edges in the graph store, vectors in the vector store.

- incremental: a document whose content hash (text, title, date, extractor, chunking) is unchanged and
  whose last indexing completed is skipped;
- resumable: a document is marked `pending` before anything of it is written and `done` after; a
  pending or changed document is first deleted (graph + vectors) and then rebuilt, so a crash leaves
  no duplicates and a rerun finishes the job (LLM calls come back from the content-hash cache);
- extraction that fails (an LLM server down, output unusable) leaves the document `failed`, not
  `done`: its chunks stay searchable, and the next run retries it (reported as retried);
- identity: a file's document id is ``<corpus tag>/<path relative to the corpus root>``; the tag names
  the root folder and is recorded on each Document node with the root's absolute path, so one root
  keeps its tag across runs and a second root with the same folder name gets ``name~2``. Two files
  with one name in different folders, or in two corpora of one index, never replace each other;
- prune: a re-index of a folder removes its documents whose files are gone (``prune=False`` keeps
  them); a file that exists but cannot be read this time is never pruned;
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
from eventrag.index.documents import (
    DEFAULT_MAX_BYTES,
    CorpusScan,
    DocumentError,
    UnreadableDocument,
    corpus_tags,
    document_id_problem,
    load_file,
    new_tag,
    scan_corpus,
    within_known_root,
    without_nul,
)
from eventrag.index.extract import Extractor, entity_key
from eventrag.index.fusion import EntityFuser
from eventrag.index.infer import ExpansionConfig, refresh_inferred
from eventrag.index.summary import IndexProgress, IndexSummary, Progress, SkippedFile
from eventrag.schema import Chunk, ChunkExtraction, Document, Entity
from eventrag.storage.base import Edge, GraphStore, Node, VectorStore


def content_hash(doc: Document, extractor: str, chunking: ChunkingConfig) -> str:
    key = f"{extractor}\x00{chunking.max_tokens}/{chunking.overlap_tokens}\x00{doc.title}\x00{doc.date}\x00{doc.text}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


class Indexer:
    def __init__(self, graph: GraphStore, vectors: VectorStore, embedder: Embedder, extractor: Extractor, *,
                 collections: dict[str, str], chunking: ChunkingConfig | None = None, fusion_threshold: float = 0.9,
                 expansion: ExpansionConfig | None = None, batch_docs: int = 32,
                 max_file_bytes: int = DEFAULT_MAX_BYTES, on_change: Callable[[], None] | None = None) -> None:
        self.graph, self.vectors, self.embedder, self.extractor = graph, vectors, embedder, extractor
        self.collections = collections  # kind ("chunks", "events", "entities") -> collection name
        self.chunking = chunking or ChunkingConfig()
        self.expansion = expansion or ExpansionConfig()
        self.batch_docs = max(1, batch_docs)
        self.max_file_bytes = max_file_bytes
        self.on_change = on_change
        self._touched: set[str] = set()  # entities of purged documents, until the inferred edges are refreshed
        self.entity_index = StoreEntityIndex(graph, vectors, collections["entities"])
        self.fuser = EntityFuser(embedder, self.entity_index, threshold=fusion_threshold)
        for name in collections.values():
            vectors.create_collection(name, embedder.dim, "COSINE")

    # --- public API ---------------------------------------------------------------------------
    def index_paths(self, paths: Iterable[str | Path], progress: Progress | None = None, *,
                    prune: bool = True) -> IndexSummary:
        """Index files and folders; with `prune`, documents of an indexed folder whose files are gone
        are removed. Unreadable, binary, empty, oversized or linked-out files are skipped with a reason."""
        t0 = time.perf_counter()
        summary = IndexSummary(extractor=self.extractor.name)
        known = self._known_documents()
        roots = corpus_tags(known)
        docs: list[Document] = []
        scans: list[tuple[CorpusScan, set[str]]] = []  # (scan, ids kept even if not seen this run)
        for given in paths:
            scan = within_known_root(scan_corpus(Path(given)), roots)
            tag = roots.setdefault(str(scan.root), new_tag(scan.root, set(roots.values())))
            loaded, unloaded = self._load_corpus(scan, tag, summary)
            docs += loaded
            scans.append((scan, unloaded))
        summary.add(self.index_documents(docs, progress=progress))
        if prune:
            self._prune(scans, known, {d.doc_id for d in docs}, summary)
        summary.elapsed_s = round(time.perf_counter() - t0, 3)
        return summary

    def _load_corpus(self, scan: CorpusScan, tag: str, summary: IndexSummary) -> tuple[list[Document], set[str]]:
        """The documents of one scanned root, and the ids never to prune this run: files that exist but
        could not be read (``tag/rel``) and folders that could not be listed (``tag/dir/`` prefixes)."""
        summary.skipped += [SkippedFile(source=src, reason=why) for src, why in scan.skipped]
        docs: list[Document] = []
        unloaded = {f"{tag}/{d}/" if d else f"{tag}/" for d in scan.unreadable}
        for path, rel in scan.files:
            doc_id = f"{tag}/{rel}"
            try:
                loaded = load_file(path, doc_id, max_bytes=self.max_file_bytes)
            except DocumentError as exc:
                summary.skipped.append(SkippedFile(source=str(path), reason=str(exc)))
                if isinstance(exc, UnreadableDocument):  # empty, binary, too large: not a document any more
                    unloaded.add(doc_id)
                continue
            for d in loaded:
                d.meta.update(corpus=tag, corpus_root=str(scan.root))
            docs += loaded
        return docs, unloaded

    def _prune(self, scans: list[tuple[CorpusScan, set[str]]], known: list[Node], present: set[str],
               summary: IndexSummary) -> None:
        """Remove the documents of each scanned folder whose files are gone (single files prune nothing)."""
        gone = list(dict.fromkeys(
            n.id for scan, unloaded in scans if not scan.single for n in known
            if n.props.get("corpus_root") == str(scan.root) and n.id not in present and not _kept(n.id, unloaded)))
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
        t0 = time.perf_counter()
        summary = IndexSummary(extractor=self.extractor.name, docs_seen=len(docs))
        seen: set[str] = set()
        unique: list[Document] = []
        for d in docs:
            d = without_nul(d)
            problem = document_id_problem(d.doc_id)
            if problem:
                summary.skipped.append(SkippedFile(source=d.source or d.doc_id[:80], reason=problem))
            elif d.doc_id not in seen:
                seen.add(d.doc_id)
                unique.append(d)
        for start in range(0, len(unique), self.batch_docs):
            batch = unique[start:start + self.batch_docs]
            summary.add(self._index_batch(batch))
            if progress is not None:
                progress(IndexProgress(docs_done=min(start + len(batch), len(unique)), docs_total=len(unique),
                                       chunks=summary.chunks, events=summary.events, entities=summary.entities,
                                       elapsed_s=time.perf_counter() - t0,
                                       current=batch[-1].source or batch[-1].doc_id))
        summary.docs_seen = len(docs)
        summary.elapsed_s = time.perf_counter() - t0
        if self.on_change is not None:
            self.on_change()
        return summary

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
        self.graph.delete_document(doc_id)
        for kind in ("chunks", "events"):
            self.vectors.delete(self.collections[kind], filter={"doc_id": doc_id})
        if ents:
            alive = {n.id for n in self.graph.get_nodes(ents)}
            gone = [e for e in ents if e not in alive]
            if gone:
                self.vectors.delete(self.collections["entities"], ids=gone)

    def _index_batch(self, batch: list[Document]) -> IndexSummary:
        s = IndexSummary(extractor=self.extractor.name)
        hashes = {d.doc_id: content_hash(d, self.extractor.name, self.chunking) for d in batch}
        existing = {n.id: n for n in self.graph.get_nodes([d.doc_id for d in batch])}
        todo: list[Document] = []
        for d in batch:
            node = existing.get(d.doc_id)
            if node is not None and node.label == "Document" and node.props.get("status") == "done" \
                    and node.props.get("hash") == hashes[d.doc_id]:
                s.docs_unchanged += 1
                continue
            if node is not None:
                status = node.props.get("status")
                s.docs_resumed += int(status == "pending")
                s.docs_retried += int(status == "failed")
                self._purge(d.doc_id)
            todo.append(d)
        if not todo:
            return s
        self.graph.upsert_nodes([Node(id=d.doc_id, label="Document", doc_ids=[d.doc_id], props={
            "name": d.title or d.doc_id, "source": d.source, "date": d.date, "hash": hashes[d.doc_id],
            "status": "pending", "time_start": d.date, "time_end": d.date,
            **{k: d.meta[k] for k in ("corpus", "corpus_root") if k in d.meta}}) for d in todo])
        chunks: list[Chunk] = [c for d in todo for c in chunk_document(d, self.chunking)]
        dates = {d.doc_id: d.date for d in todo}
        failed_docs: set[str] = set()
        new_events: list[str] = []
        if chunks:
            self.graph.upsert_nodes([chunk_node(c) for c in chunks])
            self.graph.upsert_edges([Edge(src=c.chunk_id, dst=c.doc_id, type="PART_OF", doc_ids=[c.doc_id])
                                     for c in chunks])
            extractions = list(self.extractor.extract_many((c, dates[c.doc_id]) for c in chunks))
            vecs, event_vecs = self._embed_chunks(chunks, extractions)
            self.vectors.upsert(self.collections["chunks"], [c.chunk_id for c in chunks], vecs,
                                [{"doc_id": c.doc_id} for c in chunks])
            new_events = self._write_graph(chunks, extractions, s, event_vecs)
            doc_of = {c.chunk_id: c.doc_id for c in chunks}
            failed_docs = {doc_of[e.chunk_id] for e in extractions if e.failed and e.chunk_id in doc_of}
        n = self._refresh_inferred(new_events)
        s.inferred_edges += n
        s.edges += n
        self._flush()  # vectors durable before a document is marked done
        # a document whose extraction failed is not done: the next run retries it (its chunks stay searchable)
        self.graph.upsert_nodes([Node(id=d.doc_id, label="Document", doc_ids=[d.doc_id], props={
            "status": "failed" if d.doc_id in failed_docs else "done"}) for d in todo])
        s.docs_failed = len(failed_docs)
        s.failed_docs = sorted(failed_docs)[:20]
        s.docs_indexed = len(todo) - len(failed_docs)
        s.chunks = len(chunks)
        return s

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
        by_chunk = {c.chunk_id: c for c in chunks}
        for ext in extractions:
            s.llm_calls += ext.llm_calls
            s.llm_cached += ext.cached_calls
            if ext.failed:
                s.chunks_failed += 1
                s.failures = (s.failures + [f"{ext.chunk_id}: {ext.error}"])[:20]
        fused = self.fuser.fuse(extractions)
        s.entity_merges += len(fused.merges)
        emap = fused.id_map
        entities = fused.entities
        need_vec = set(fused.new_ids)
        events = [ev for ext in extractions for ev in ext.events]
        # locations become entities too (LOCATED_IN needs an end node)
        for ev in events:
            if ev.location and entity_key(ev.location) not in emap:
                loc = Entity(entity_id=entity_key(ev.location), name=ev.location, type="LOCATION",
                             chunk_ids=ev.chunk_ids, doc_ids=ev.doc_ids)
                entities.setdefault(loc.entity_id, loc)
                emap[loc.entity_id] = loc.entity_id
                need_vec.add(loc.entity_id)
        nodes = [Node(id=e.entity_id, label="Entity", doc_ids=e.doc_ids, props={
            "name": e.name, "type": e.type, "description": e.description, "aliases": e.aliases})
            for e in entities.values()]
        nodes += [event_node(ev) for ev in events]
        self.graph.upsert_nodes(nodes)
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
                eid = emap.get(ent.entity_id, ent.entity_id)
                add(eid, "MENTIONED_IN", chunk.chunk_id, [chunk.doc_id], topic=ent.entity_id == title_key)
            for ev in ext.events:
                add(ev.event_id, "MENTIONED_IN", chunk.chunk_id, [chunk.doc_id])
                for p in ev.participants:
                    eid = emap.get(entity_key(p.entity))
                    if eid:
                        add(eid, "PARTICIPATES_IN", ev.event_id, [chunk.doc_id], role=p.role)
                if ev.location:
                    add(ev.event_id, "LOCATED_IN", emap[entity_key(ev.location)], [chunk.doc_id])
            for rel in ext.relations:
                src, dst = emap.get(rel.source, rel.source), emap.get(rel.target, rel.target)
                typ = rel.type
                if typ == "AFTER":
                    src, dst, typ = dst, src, "BEFORE"
                add(src, typ, dst, [chunk.doc_id], weight=rel.weight)
        known = {n.id for n in nodes} | set(by_chunk)
        valid = [e for e in edges.values() if e.src in known and e.dst in known]
        self.graph.upsert_edges(valid)
        s.edges += len(valid)
        # vectors: new entities and all events of the batch
        new_ents = [entities[i] for i in entities if i in need_vec]
        if new_ents:
            missing = [e.name for e in new_ents if e.entity_id not in self.fuser.vectors]
            fresh = iter(self.embedder.embed(missing)) if missing else iter(())
            vecs = [self.fuser.vectors[e.entity_id] if e.entity_id in self.fuser.vectors else next(fresh)
                    for e in new_ents]
            self.vectors.upsert(self.collections["entities"], [e.entity_id for e in new_ents], vecs,
                                [{"doc_id": e.doc_ids[0] if e.doc_ids else ""} for e in new_ents])
        self.fuser.vectors.clear()
        if events:
            known = event_vecs or {}
            missing = [ev for ev in events if ev.event_id not in known]
            fresh = iter(self.embedder.embed([event_text(ev) for ev in missing])) if missing else iter(())
            vecs = [known[ev.event_id] if ev.event_id in known else next(fresh) for ev in events]
            self.vectors.upsert(self.collections["events"], [ev.event_id for ev in events], vecs,
                                [{"doc_id": ev.doc_ids[0]} for ev in events])
        s.events += len(events)
        s.entities += len(fused.new_ids)
        return [ev.event_id for ev in events]

    def _refresh_inferred(self, new_events: list[str]) -> int:
        """Recompute the inferred edges around new events and purged documents (`infer.refresh_inferred`),
        so they do not depend on the order documents came in; returns the net change."""
        touched, self._touched = sorted(self._touched), set()
        return refresh_inferred(self.graph, new_events, touched, self.expansion)


def _kept(doc_id: str, unloaded: set[str]) -> bool:
    """True when `doc_id` is (a record of) a file, or lies in a folder, that could not be read this run."""
    return any(doc_id == u or doc_id.startswith(u if u.endswith("/") else u + "#") for u in unloaded)
