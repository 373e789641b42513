"""The passages the capability tools (timeline, dates, resolve) read, and the evidence they hand back.

A tool reads more than the model was shown: the chunks the run has seen, its own search hits, and the
whole documents of its best hits (a passage split into chunks keeps a document's first event in one
chunk and its consequence in the next; search finds one of them). The chunks a tool's lines cite
become evidence, so the model can cite them in its answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.state import Evidence
from agent.tools.context import ToolContext
from eventrag.schema import Chunk

WHOLE_DOCS = 3  # documents of the best hits read in full
MAX_DOC_CHUNKS = 12  # chunks read per such document


def seen_chunks(ctx: ToolContext) -> list[Chunk]:
    """The chunks the run has seen, best search rank first (read chunks first of all)."""
    evs = sorted(ctx.run.evidence.values(), key=lambda e: (e.rank or 0, e.step))
    return [Chunk(chunk_id=e.chunk_id, doc_id=e.doc_id, title=e.title, text=e.text) for e in evs]


def gather(ctx: ToolContext, queries: Sequence[str], have: Sequence[Chunk] = (), *, whole_docs: int = WHOLE_DOCS,
           top_k: int | None = None) -> list[Chunk]:
    """`have`, then each query's hits, each of the first `whole_docs` documents hit read in full."""
    out = list(have)
    ids = {c.chunk_id for c in out}
    docs: list[str] = []

    def add(chunk: Chunk) -> None:
        if chunk.chunk_id not in ids:
            ids.add(chunk.chunk_id)
            out.append(chunk)

    for q in queries:
        for hit in ctx.backend.retrieve(q, top_k=top_k or 2 * ctx.options.search_top_k).chunks:
            if hit.doc_id not in docs and len(docs) < whole_docs:
                docs.append(hit.doc_id)
                for c in ctx.backend.get_document_chunks(hit.doc_id)[:MAX_DOC_CHUNKS]:
                    add(c)
            add(Chunk(chunk_id=hit.chunk_id, doc_id=hit.doc_id, title=hit.title, text=hit.text))
    return out


def documents(ctx: ToolContext, have: Sequence[Chunk], chunk_ids: Sequence[str]) -> list[Chunk]:
    """`have`, then the documents holding `chunk_ids` (chunks of `have`) in full."""
    doc_of = {c.chunk_id: c.doc_id for c in have}
    out = list(have)
    for doc in dict.fromkeys(doc_of[c] for c in chunk_ids if c in doc_of):
        out = merged(out, ctx.backend.get_document_chunks(doc)[:MAX_DOC_CHUNKS])
    return out


def merged(first: Sequence[Chunk], then: Sequence[Chunk]) -> list[Chunk]:
    """`first`, then the chunks of `then` not in it."""
    ids = {c.chunk_id for c in first}
    return [*first, *(c for c in then if c.chunk_id not in ids)]


def evidence_for(ctx: ToolContext, chunk_ids: Sequence[str], chunks: Sequence[Chunk] = ()) -> list[Evidence]:
    """Evidence records for the chunks a result cites, in citation order (rank = that order)."""
    known = {c.chunk_id: c for c in chunks}
    out: list[Evidence] = []
    for cid in dict.fromkeys(c for c in chunk_ids if c):
        seen = ctx.run.evidence.get(cid)
        chunk = seen or known.get(cid) or ctx.backend.get_chunk(cid)
        if chunk is None:
            continue
        out.append(Evidence(chunk_id=cid, doc_id=chunk.doc_id, title=chunk.title, text=chunk.text,
                            step=ctx.run.next_step, rank=len(out) + 1,
                            sub_question=seen.sub_question if seen else None))
    return out
