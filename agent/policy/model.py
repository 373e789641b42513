"""The model policy: the LLM picks every call.

One grammar-constrained call per turn over the rendered prompt (context + status line) with the tool
specs narrowed to the values valid now (a local model's grammar cannot leave them). Near-miss calls
are repaired (a tool-name alias, wrapped arguments, a call written as JSON text) and counted; what
cannot be repaired is an invalid turn.
"""

from __future__ import annotations

from agent.llm import ToolCall, ToolSpec
from agent.policy.base import PolicyContext, Turn
from agent.state import RunState
from agent.tools.context import counted_chat
from agent.tools.repair import normalize_call, parse_text_call


class ModelPolicy:
    name = "model"

    def next_call(self, run: RunState, specs: list[ToolSpec], ctx: PolicyContext) -> Turn:
        resp = counted_chat(run, ctx.model, ctx.messages, tools=specs, tool_choice="required", temperature=0.0,
                            max_tokens=ctx.options.step_max_tokens)  # fmt: skip
        offered = [s.name for s in specs if s.available]
        return Turn(text=resp.text.strip(), calls=usable_calls(run, resp.tool_calls, resp.text, offered))


def usable_calls(run: RunState, tool_calls: list[ToolCall], text: str, names: list[str]) -> list[ToolCall]:
    """The turn's calls with near misses repaired (counted in `repaired_calls`); a call of a tool not on
    offer stays as it is (the tools node answers it with the valid ones)."""
    calls = []
    for call in tool_calls:
        fixed, changed = normalize_call(call, names)
        run.counters.repaired_calls += int(changed)
        calls.append(fixed)
    if not calls:
        parsed = parse_text_call(text, names)
        if parsed is not None:
            run.counters.repaired_calls += 1
            calls = [parsed]
    return calls
