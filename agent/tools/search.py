"""`search`: the retriever (EventRAG or any `SearchBackend`), numbered evidence with chunk/doc ids."""

from __future__ import annotations

import re

from agent.prompts import DATA_NOTE
from agent.state import Evidence
from agent.tools.context import ToolContext, neutralize
from agent.tools.registry import Tool, ToolError, ToolResult


def normalize_query(query: str) -> str:
    return " ".join(re.findall(r"\w+", query.lower()))


def snippet(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def make_search(ctx: ToolContext) -> Tool:
    def search(query: str) -> ToolResult:
        """Search the corpus for evidence. Returns numbered passages with chunk ids [c:ID] and document ids.

        Args:
            query: a short, specific search query
        """
        run, opts = ctx.run, ctx.options
        key = normalize_query(query)
        if not key:
            raise ToolError("query is empty; give a few keywords")
        seen = run.queries.setdefault(key, [])
        if len(seen) > opts.max_repeat_queries:
            run.counters.repeated_queries += 1
            first = run.steps[seen[0] - 1] if seen[0] <= len(run.steps) else None
            hint = f"read(id={first.chunk_ids[0]!r}), " if first and first.chunk_ids else ""
            raise ToolError(
                f"you already searched for {query!r} (step {seen[0]}); its results are in the context or a "
                f"fold. Next: {hint}a different search, or answer."
            )
        seen.append(run.next_step)
        k = opts.search_top_k
        result = ctx.backend.retrieve(query, top_k=k)
        if not result.chunks:
            return ToolResult(content=f"No results for {query!r}. Try other keywords.")
        lines = [f"Results for {query!r} {DATA_NOTE}:"]
        evidence = []
        for i, ch in enumerate(result.chunks[:k], 1):
            title = f' "{neutralize(ch.title)}"' if ch.title else ""
            lines.append(f"[{i}] [c:{ch.chunk_id}]{title} (doc {ch.doc_id})")
            lines.append(f"    {neutralize(snippet(ch.text, opts.result_chars))}")
            evidence.append(
                Evidence(
                    chunk_id=ch.chunk_id,
                    doc_id=ch.doc_id,
                    title=ch.title,
                    text=ch.text,
                    step=run.next_step,
                    score=ch.score,
                )
            )
        return ToolResult(content="\n".join(lines), evidence=evidence)

    return Tool.from_function(search)
