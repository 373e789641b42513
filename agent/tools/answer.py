"""`answer`: end the run with a short answer and the chunk ids that support it."""

from __future__ import annotations

from agent.tools.context import ToolContext
from agent.tools.registry import Tool, ToolError, ToolResult


def clean_citations(ids: list[str]) -> list[str]:
    out = []
    for raw in ids:
        cid = str(raw).strip().strip("[]").strip()
        cid = cid[2:] if cid.startswith("c:") else cid
        if cid and cid not in out:
            out.append(cid)
    return out


def make_answer(ctx: ToolContext) -> Tool:
    def answer(answer: str, citations: list[str] | None = None) -> ToolResult:
        """Finish: give the final SHORT answer (a few words) and the chunk ids [c:ID] that support it.

        Args:
            answer: the answer only: a name, date, number, yes/no or a short phrase
            citations: chunk ids from the evidence that support the answer
        """
        text = " ".join(answer.split())
        if not text:
            raise ToolError("answer is empty; give the answer in a few words")
        cites = clean_citations(citations or [])
        known = [c for c in cites if c in ctx.run.evidence]
        return ToolResult(
            content=f"Answer recorded: {text}",
            final=True,
            data={
                "answer": text,
                "citations": known,
                "unknown_citations": [c for c in cites if c not in known],
            },
        )

    return Tool.from_function(answer)
