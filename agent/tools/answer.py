"""`answer`: end the run with a short answer and the chunk ids that support it.

An answer is kept only when it rests on evidence: the citations must be chunks the run has seen;
without a valid citation, the seen chunks containing the answer are cited instead. An answer no
evidence supports ends the run too, and the reader then answers from the best evidence (graph)."""

from __future__ import annotations

import re

from agent.state import RunState
from agent.tools.context import ToolContext
from agent.tools.ids import adapt_ids, clean_citations
from agent.tools.registry import Tool, ToolError, ToolResult

__all__ = ["clean_citations", "make_answer", "supporting"]

YES_NO = {"yes", "no"}


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def supporting(run: RunState, answer: str) -> list[str]:
    """Seen chunks whose text contains the answer (word-normalised), best ranked first."""
    key = _words(answer)
    if not key or key in YES_NO:
        return []
    hits = [ev for ev in run.evidence.values() if key in _words(ev.text)]
    hits.sort(key=lambda ev: (ev.rank or 99, ev.step))
    return [ev.chunk_id for ev in hits[:3]]


def make_answer(ctx: ToolContext) -> Tool:
    def answer(answer: str, citations: list[str] | None = None) -> ToolResult:
        """Finish with a SHORT answer (a name, date, number, yes/no) and the chunk ids supporting it.

        Args:
            answer: the answer only, a few words
            citations: chunk ids from the results that support the answer
        """
        text = " ".join(answer.split())
        if not text:
            raise ToolError("answer is empty; give the answer in a few words")
        cites = clean_citations(citations or [])
        known = [c for c in cites if c in ctx.run.evidence]
        supported = bool(known) or _words(text) in YES_NO
        if not known:
            known = supporting(ctx.run, text)
            supported = supported or bool(known)
        return ToolResult(
            content=f"Answer recorded: {text}",
            final=True,
            data={
                "answer": text,
                "citations": known,
                "supported": supported,
                "unknown_citations": [c for c in cites if c not in ctx.run.evidence],
            },
        )

    def choices() -> dict[str, list[object]]:
        return {"citations": list(ctx.run.evidence)}

    return Tool.from_function(answer, choices=choices, adapt=adapt_ids("citations"), enforce_choices=False)
