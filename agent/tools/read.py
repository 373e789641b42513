"""`read`: open a chunk, or a document (or one section of it), by id."""

from __future__ import annotations

from agent.prompts import DATA_NOTE
from agent.state import Evidence
from agent.tools.context import ToolContext, neutralize
from agent.tools.registry import Tool, ToolError, ToolResult
from agent.tools.search import snippet


def make_read(ctx: ToolContext) -> Tool:
    def read(id: str, section: int | None = None) -> ToolResult:
        """Open a chunk (id from [c:ID]) or a whole document (doc id) to read its full text.

        Args:
            id: a chunk id (as in [c:ID]) or a document id
            section: for a document, the number of the part to read (0 = first)
        """
        key = id.strip().strip("[]")
        key = key[2:] if key.startswith("c:") else key
        if not key:
            raise ToolError("id is empty; pass a chunk id from [c:ID] or a document id")
        run, limit = ctx.run, ctx.options.read_chars
        chunk = ctx.backend.get_chunk(key)  # a chunk id wins; `section` only applies to documents
        if chunk is not None:
            shown = [
                s.n
                for s in run.steps
                if key in s.chunk_ids
                and s.assistant.tool_calls
                and s.assistant.tool_calls[0].name == "read"
                and run.memory.covering(s.n) is None
            ]
            if shown:
                run.counters.repeated_queries += 1
                raise ToolError(
                    f"chunk {key!r} is already shown in full at step {shown[-1]}; read another chunk, "
                    "search for what is still missing, or answer."
                )
            ev = Evidence(
                chunk_id=chunk.chunk_id,
                doc_id=chunk.doc_id,
                title=chunk.title,
                text=chunk.text,
                step=run.next_step,
            )
            head = f'[c:{chunk.chunk_id}] "{neutralize(chunk.title)}" (doc {chunk.doc_id}) {DATA_NOTE}:'
            return ToolResult(content=f"{head}\n{neutralize(snippet(chunk.text, limit))}", evidence=[ev])
        parts = ctx.backend.get_document_chunks(key)
        if not parts:
            raise ToolError(f"no chunk or document with id {key!r}; use ids shown in search results")
        if section is not None:
            if not 0 <= section < len(parts):
                raise ToolError(f"document {key!r} has sections 0-{len(parts) - 1}, not {section}")
            parts = [parts[section]]
        lines = [f'Document {key} "{neutralize(parts[0].title)}" {DATA_NOTE}:']
        evidence, used = [], 0
        for ch in parts:
            if used >= limit:
                lines.append(f"(truncated: read(id={key!r}, section=N) for part N of {len(parts)})")
                break
            text = snippet(ch.text, limit - used)
            used += len(text)
            lines.append(f"[c:{ch.chunk_id}] {neutralize(text)}")
            evidence.append(
                Evidence(
                    chunk_id=ch.chunk_id, doc_id=ch.doc_id, title=ch.title, text=ch.text, step=run.next_step
                )
            )
        return ToolResult(content="\n".join(lines), evidence=evidence)

    return Tool.from_function(read)
