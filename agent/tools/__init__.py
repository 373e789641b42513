"""The agent's tools: search, read, timeline, dates, resolve, fold, unfold, answer (+ any extra typed functions)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent.tools.answer import make_answer
from agent.tools.context import ToolContext
from agent.tools.dates import make_dates
from agent.tools.fold import make_fold
from agent.tools.read import make_read
from agent.tools.registry import Tool, ToolError, ToolRegistry, ToolResult
from agent.tools.resolve import make_resolve
from agent.tools.search import make_search
from agent.tools.timeline import make_timeline
from agent.tools.unfold import make_unfold

ExtraTool = Tool | Callable[..., Any]


def build_registry(ctx: ToolContext, extra: Sequence[ExtraTool] = ()) -> ToolRegistry:
    """The run's tools; fold/unfold only when folding is on (`--no-fold` is plain ReAct), unfold only
    when `options.unfold` is on too."""
    tools: list[Tool] = [make_search(ctx), make_read(ctx)]
    tools += [make_timeline(ctx), make_dates(ctx), make_resolve(ctx)]
    if ctx.options.fold:
        tools += [make_fold(ctx), make_unfold(ctx)] if ctx.options.unfold else [make_fold(ctx)]
    tools.append(make_answer(ctx))
    return ToolRegistry(tools, extra=extra)


__all__ = ["ExtraTool", "Tool", "ToolContext", "ToolError", "ToolRegistry", "ToolResult", "build_registry"]
