"""`fold`: replace a range of steps by a structured Markdown block; originals go to the memory store.

Without a model-written summary the block is written by an LLM call on a fixed template
(`prompts.FOLD_TEMPLATE`, JSON-schema constrained; citations checked against the folded steps) or,
with `fold_summary="deterministic"` or when that call fails, extracted deterministically from the
steps (the evidence they showed, one finding per source, the queries that found nothing).
Granularity `step` keeps a one-line digest per step in the block; `subtask` keeps only findings.
"""

from __future__ import annotations

from typing import Literal

from agent.llm import LLMError, Message
from agent.memory import Fold, FoldError, Step, call_digest, step_text
from agent.memory.blocks import Granularity
from agent.prompts import FOLD_SCHEMA, FOLD_SYSTEM, FOLD_TEMPLATE
from agent.state import RunState
from agent.tools.context import ToolContext
from agent.tools.registry import Tool, ToolError, ToolResult
from agent.tools.search import snippet


def _evidence_lines(run: RunState, steps: list[Step]) -> list[str]:
    seen: dict[str, str] = {}
    for s in steps:
        for cid in s.chunk_ids:
            ev = run.evidence.get(cid)
            seen.setdefault(cid, f"c:{cid} (doc {ev.doc_id})" if ev else f"c:{cid}")
    return list(seen.values())


def deterministic_content(run: RunState, steps: list[Step]) -> tuple[str, list[str], list[str]]:
    """Title, findings and open questions extracted from the steps without an LLM."""
    queries, findings, empty = [], [], []
    seen_docs: set[str] = set()
    for s in steps:
        for call in s.assistant.tool_calls:
            q = call.arguments.get("query") or call.arguments.get("id")
            if q:
                queries.append(str(q))
        if any("No results" in r.content for r in s.results):
            empty.extend(str(c.arguments.get("query", "")) for c in s.assistant.tool_calls)
        for cid in s.chunk_ids[:2]:
            ev = run.evidence.get(cid)
            if ev is None or ev.doc_id in seen_docs:
                continue
            seen_docs.add(ev.doc_id)
            title = f"{ev.title}: " if ev.title else ""
            findings.append(f"{title}{snippet(ev.text, 160)} [c:{cid}]")
    title = "; ".join(dict.fromkeys(queries))[:80] or "steps without searches"
    open_q = [f"no results for {q!r}" for q in empty if q]
    return title, findings[:6], open_q[:3]


def llm_content(ctx: ToolContext, steps: list[Step]) -> tuple[str, list[str], list[str]]:
    """Title, findings and open questions written by the LLM on the fixed template."""
    valid = {cid for s in steps for cid in s.chunk_ids}
    prompt = FOLD_TEMPLATE.format(
        question=ctx.run.question,
        start=steps[0].n,
        end=steps[-1].n,
        steps="\n\n".join(step_text(s)[:3000] for s in steps),
    )
    resp = ctx.chat(
        [Message(role="system", content=FOLD_SYSTEM), Message(role="user", content=prompt)],
        json_schema=FOLD_SCHEMA,
        temperature=0.0,
        max_tokens=ctx.options.fold_max_tokens,
    )
    data = resp.parsed
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise LLMError("fold summary was not valid JSON")
    findings = []
    for item in data["findings"]:
        if not isinstance(item, dict) or not str(item.get("fact", "")).strip():
            continue
        ids = [str(c).strip().removeprefix("c:").strip("[]") for c in item.get("chunk_ids") or []]
        cites = "".join(f" [c:{c}]" for c in dict.fromkeys(ids) if c in valid)
        findings.append(" ".join(str(item["fact"]).split()) + cites)
    open_q = [" ".join(str(q).split()) for q in data.get("open_questions") or [] if str(q).strip()]
    return " ".join(str(data.get("title", "")).split())[:80], findings, open_q[:3]


def apply_fold(
    ctx: ToolContext,
    start: int,
    end: int,
    *,
    summary: str | None = None,
    granularity: Granularity = "step",
    origin: Literal["model", "guard"] = "model",
    use_llm: bool = True,
) -> Fold:
    """Fold steps start..end of ctx.run (validated first; nothing changes on error)."""
    run = ctx.run
    memory = run.memory
    memory.check_range(start, end, len(run.steps))
    again = memory.refoldable(start, end) if summary is None else None
    if again is not None:
        return memory.refold(again, len(run.steps))
    steps = run.steps[start - 1 : end]
    source: Literal["model", "llm", "deterministic"] = "deterministic"
    if summary and summary.strip():
        lines = [ln.strip(" -*\t") for ln in summary.strip().splitlines() if ln.strip(" -*\t")]
        title, findings, open_q, source = lines[0][:80], lines, [], "model"
    elif use_llm and ctx.options.fold_summary == "llm":
        try:
            title, findings, open_q = llm_content(ctx, steps)
            source = "llm"
        except (LLMError, ValueError, KeyError, TypeError):
            run.counters.fold_llm_fallbacks += 1
            title, findings, open_q = deterministic_content(run, steps)
    else:
        title, findings, open_q = deterministic_content(run, steps)
    block = Fold(
        fold_id=memory.new_id(),
        start=start,
        end=end,
        granularity=granularity,
        title=title,
        findings=findings,
        evidence=_evidence_lines(run, steps),
        open_questions=open_q,
        step_digests=[call_digest(s) for s in steps] if granularity == "step" else [],
        origin=origin,
        summary_source=source,
    )
    return memory.add(block, run.steps)


def make_fold(ctx: ToolContext) -> Tool:
    def fold(
        start_step: int,
        end_step: int,
        summary: str | None = None,
        granularity: Literal["step", "subtask"] = "step",
    ) -> ToolResult:
        """Fold steps start_step..end_step into a short memory block (originals are kept; unfold restores them).

        Args:
            start_step: first step to fold
            end_step: last step to fold (an earlier step than the current one)
            summary: optional: your own summary of what these steps found, citing [c:ID]
            granularity: "step" keeps one line per step, "subtask" only the findings
        """
        try:
            block = apply_fold(ctx, start_step, end_step, summary=summary, granularity=granularity)
        except FoldError as exc:
            raise ToolError(str(exc)) from exc
        ctx.run.counters.folds += 1
        ctx.emit(
            {
                "type": "fold",
                "fold_id": block.fold_id,
                "start": block.start,
                "end": block.end,
                "origin": "model",
                "summary_source": block.summary_source,
            }
        )
        return ToolResult(
            content=f"Folded steps {block.start}-{block.end} into {block.fold_id}: {block.title}"
        )

    return Tool.from_function(fold)
