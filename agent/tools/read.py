"""`read`: open a chunk seen in the results, in full. Valid ids: chunks seen so far and not already
shown in full in the visible context (a re-read is not offered, and refused with the valid ids)."""

from __future__ import annotations

from agent.chunk_header import shown
from agent.prompts import DATA_NOTE
from agent.state import Evidence, RunState
from agent.tools.context import ToolContext, neutralize
from agent.tools.ids import adapt_ids
from agent.tools.registry import Tool, ToolError, ToolResult
from agent.tools.search import snippet


def shown_in_full(run: RunState) -> set[str]:
    """Chunk ids a visible (not folded) read step shows in full."""
    out: set[str] = set()
    for s in run.steps:
        calls = s.assistant.tool_calls
        if calls and calls[0].name == "read" and run.memory.covering(s.n) is None:
            out.update(s.chunk_ids)
    return out


def readable(run: RunState) -> list[str]:
    full = shown_in_full(run)
    return [cid for cid in run.evidence if cid not in full]


def make_read(ctx: ToolContext) -> Tool:
    def read(id: str) -> ToolResult:
        """Show the full text of a chunk [c:ID] seen in the results.

        Args:
            id: a chunk id from the results
        """
        run, limit = ctx.run, ctx.options.read_chars
        chunk = ctx.backend.get_chunk(id)
        if chunk is None:
            raise ToolError(f"no chunk with id {id!r}; valid ids: {', '.join(readable(run)[:12]) or 'none yet'}")
        seen = run.evidence.get(chunk.chunk_id)
        ev = Evidence(
            chunk_id=chunk.chunk_id,
            doc_id=chunk.doc_id,
            title=chunk.title,
            text=chunk.text,
            step=run.next_step,
            sub_question=seen.sub_question if seen else None,
        )
        meta, body = shown(chunk.title, chunk.text)
        head = f'[c:{chunk.chunk_id}] "{neutralize(chunk.title)}"{neutralize(meta)} {DATA_NOTE}:'
        return ToolResult(content=f"{head}\n{neutralize(snippet(body, limit))}", evidence=[ev])

    def choices() -> dict[str, list[object]]:
        return {"id": list(readable(ctx.run))}

    return Tool.from_function(read, choices=choices, adapt=adapt_ids("id"))
