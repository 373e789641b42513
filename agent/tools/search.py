"""`search`: the retriever (EventRAG or any `SearchBackend`), numbered evidence with chunk/doc ids.

Hits the run's tool results have already shown come after the ones it has not seen, in retrieval order
within each group: a query naming what `resolve` just found retrieves first the passage that named it.

The same query is run at most `max_repeat_queries` more times; past that it is refused with what the
policy can do instead (the call is never swapped for another one). In a long task the hits are also
recorded under the item being researched (the first unanswered one)."""

from __future__ import annotations

import re

from agent.chunk_header import shown
from agent.prompts import DATA_NOTE
from agent.state import CITATION_RE, Evidence, RunState
from agent.tools.context import ToolContext, neutralize
from agent.tools.registry import Tool, ToolError, ToolResult


def normalize_query(query: str) -> str:
    return " ".join(re.findall(r"\w+", query.lower()))


def snippet(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def shown_ids(run: RunState) -> set[str]:
    """The chunk ids the run's tool results have shown so far."""
    return {m.group(1) for st in run.steps for r in st.results for m in CITATION_RE.finditer(r.content)}


def run_search(ctx: ToolContext, query: str, note: str = "", *, top_k: int | None = None) -> ToolResult:
    """Retrieve `top_k` hits (default the options'), record the query and the evidence; the result
    shows the first `show_k` (the rest are evidence the policy may cite or read)."""
    run, opts = ctx.run, ctx.options
    run.queries.setdefault(normalize_query(query), []).append(run.next_step)
    k = top_k or opts.search_top_k
    chunks = ctx.backend.retrieve(query, top_k=k).chunks[:k]
    shown_before = shown_ids(run)
    # what the run has not been shown comes first: a hop's query names the entity found a step earlier,
    # and the chunk that named it would otherwise head the results again
    chunks = [c for c in chunks if c.chunk_id not in shown_before] + [c for c in chunks if c.chunk_id in shown_before]
    if not chunks:
        return ToolResult(content=f"{note}No results for {query!r}. Try other keywords.")
    item = run.plan.tie(run.next_step, [c.chunk_id for c in chunks])
    lines = [f"{note}Results for {query!r} {DATA_NOTE}:"]
    evidence = []
    for i, ch in enumerate(chunks, 1):
        if i <= opts.show_k:
            meta, body = shown(ch.title, ch.text)
            title = f' "{neutralize(ch.title)}"' if ch.title else ""
            lines.append(f"[{i}] [c:{ch.chunk_id}]{title}{neutralize(meta)}: "
                         f"{neutralize(snippet(body, opts.result_chars))}")
        evidence.append(
            Evidence(chunk_id=ch.chunk_id, doc_id=ch.doc_id, title=ch.title, text=ch.text, step=run.next_step,
                     score=ch.score, rank=i, sub_question=item.id if item is not None else None)  # fmt: skip
        )
    return ToolResult(content="\n".join(lines), evidence=evidence)


def make_search(ctx: ToolContext) -> Tool:
    def search(query: str) -> ToolResult:
        """Search the documents; results show chunk ids [c:ID].

        Args:
            query: a few keywords naming what to find
        """
        run = ctx.run
        key = normalize_query(query)
        if not key:
            raise ToolError("query is empty; give a few keywords")
        seen = run.queries.get(key, [])
        if seen:
            run.counters.repeated_queries += 1
        if len(seen) > ctx.options.max_repeat_queries:
            raise ToolError(
                f"you already searched {query!r} (step {seen[0]}): the results are the same; search other "
                "keywords, read a chunk, or answer"
            )
        return run_search(ctx, query)

    return Tool.from_function(search)
