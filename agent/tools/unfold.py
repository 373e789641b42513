"""`unfold`: restore a fold's original steps (all of them, or the ones a section refers to)."""

from __future__ import annotations

from agent.memory import FoldError
from agent.tools.context import ToolContext
from agent.tools.registry import Tool, ToolError, ToolResult


def make_unfold(ctx: ToolContext) -> Tool:
    def unfold(fold_id: str, section: str | None = None) -> ToolResult:
        """Restore the original steps of a fold into the context.

        Args:
            fold_id: the fold to restore, e.g. "F1"
            section: optional: only a step number, "finding N" or a chunk id "c:ID" of that fold
        """
        try:
            fold, shown = ctx.run.memory.unfold(fold_id, section)
        except FoldError as exc:
            raise ToolError(str(exc)) from exc
        fold.unfolded_at = ctx.run.next_step
        ctx.run.counters.unfolds += 1
        ctx.emit({"type": "unfold", "fold_id": fold.fold_id, "steps": shown, "section": section})
        where = f"steps {', '.join(map(str, shown))}" if section else f"steps {fold.start}-{fold.end}"
        return ToolResult(content=f"Unfolded {fold.fold_id}: {where} are shown in full again.")

    return Tool.from_function(unfold)
