"""`search`: the retriever (EventRAG or any `SearchBackend`), numbered evidence with chunk/doc ids,
each search tied to the plan's sub-question it serves.

A repeated query is not re-run: while a sub-question is still open the search goes to that
sub-question's own text instead, else (with a plan) to the first lead of the status line (a repaired
call, said so in the result); otherwise the model is told what it can do next."""

from __future__ import annotations

import re

from agent.leads import leads
from agent.prompts import DATA_NOTE
from agent.state import Evidence
from agent.tools.context import ToolContext, neutralize
from agent.tools.registry import Tool, ToolError, ToolResult


def normalize_query(query: str) -> str:
    return " ".join(re.findall(r"\w+", query.lower()))


def snippet(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def run_search(
    ctx: ToolContext, query: str, sub_question: int | None = None, note: str = "", *, tie: bool = True,
    top_k: int | None = None,
) -> ToolResult:
    """Retrieve (`top_k` hits, default the options'), record the evidence, tie it to the plan unless
    `tie` is False (no repeat check)."""
    run, opts = ctx.run, ctx.options
    run.queries.setdefault(normalize_query(query), []).append(run.next_step)
    k = top_k or opts.search_top_k
    result = ctx.backend.retrieve(query, top_k=k)
    chunks = result.chunks[:k]
    sq = run.plan.tie(sub_question, run.next_step, [c.chunk_id for c in chunks]) if chunks and tie else None
    serves = f" (sub-question {sq.id})" if sq is not None else ""
    if not chunks:
        return ToolResult(content=f"{note}No results for {query!r}. Try other keywords.")
    lines = [f"{note}Results for {query!r}{serves} {DATA_NOTE}:"]
    evidence = []
    for i, ch in enumerate(chunks, 1):
        if i <= opts.show_k:  # the rest are kept as evidence for the reader, not shown (tokens)
            title = f' "{neutralize(ch.title)}"' if ch.title else ""
            lines.append(f"[{i}] [c:{ch.chunk_id}]{title}: {neutralize(snippet(ch.text, opts.result_chars))}")
        evidence.append(
            Evidence(
                chunk_id=ch.chunk_id,
                doc_id=ch.doc_id,
                title=ch.title,
                text=ch.text,
                step=run.next_step,
                score=ch.score,
                rank=i,
                sub_question=sq.id if sq is not None else None,
            )
        )
    return ToolResult(content="\n".join(lines), evidence=evidence)


def make_search(ctx: ToolContext) -> Tool:
    def search(query: str, sub_question: int | None = None) -> ToolResult:
        """Search the documents; results show chunk ids [c:ID].

        Args:
            query: a few keywords naming what to find
            sub_question: the plan's sub-question this search serves (default: the first open one)
        """
        run, opts = ctx.run, ctx.options
        key = normalize_query(query)
        if not key:
            raise ToolError("query is empty; give a few keywords")
        seen = run.queries.get(key, [])
        if seen:  # a repeat finds nothing new: search the next open sub-question, else the next lead
            run.counters.repeated_queries += 1
            fresh = [s for s in run.plan.open() if normalize_query(s.text) not in run.queries]
            if fresh:
                run.counters.repaired_calls += 1
                note = f"(already searched {query!r} at step {seen[0]}; searched sub-question {fresh[0].id} instead) "
                return run_search(ctx, fresh[0].text, fresh[0].id, note)
            found = leads(run, 1) if run.plan.sub_questions else []
            if found:
                run.counters.repaired_calls += 1
                note = f"(already searched {query!r} at step {seen[0]}; searched the lead {found[0]!r} instead) "
                return run_search(ctx, found[0], sub_question, note)
        if len(seen) > opts.max_repeat_queries:
            raise ToolError(
                f"you already searched {query!r} (step {seen[0]}); search other keywords, read a chunk, or answer"
            )
        return run_search(ctx, query, sub_question)

    def choices() -> dict[str, list[object]]:
        return {"sub_question": [s.id for s in ctx.run.plan.sub_questions]}

    return Tool.from_function(search, choices=choices)
