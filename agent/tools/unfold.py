"""`unfold`: restore a fold's original steps into the context (valid ids: the active folds)."""

from __future__ import annotations

from agent.memory import FoldError
from agent.tools.context import ToolContext
from agent.tools.ids import adapt_ids
from agent.tools.registry import Tool, ToolError, ToolResult


def make_unfold(ctx: ToolContext) -> Tool:
    def unfold(fold_id: str) -> ToolResult:
        """Show a fold's original steps again.

        Args:
            fold_id: a fold id from [status], e.g. "F1"
        """
        try:
            fold, shown = ctx.run.memory.unfold(fold_id, None, ctx.run.steps)
        except FoldError as exc:
            raise ToolError(str(exc)) from exc
        fold.unfolded_at = ctx.run.next_step
        ctx.run.counters.unfolds += 1
        ctx.emit({"type": "unfold", "fold_id": fold.fold_id, "steps": shown, "section": None})
        return ToolResult(content=f"Unfolded {fold.fold_id}: steps {fold.start}-{fold.end} are shown in full again.")

    def choices() -> dict[str, list[object]]:
        return {"fold_id": [f.fold_id for f in ctx.run.memory.active()]}

    return Tool.from_function(unfold, choices=choices, adapt=adapt_ids("fold_id", fold=True))
