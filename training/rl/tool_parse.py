"""Tool calls in RL rollouts are read the way the agent reads them at inference.

TRL's rollout loop only executes calls its chat-template parser finds (`<tool_call>…</tool_call>` for
Qwen). The agent at inference also accepts a call the model wrote as plain JSON
(`{"name": "search", "arguments": {…}}`, `agent.tools.repair.parse_text_call`) — and that is what the
packaged 0.5B student writes: measured on the CPU experiment, every turn of every rollout was plain
JSON, so no tool ever ran, every episode got the same format penalty, every GRPO group was
degenerate and RL changed nothing (loss 0, grad norm 0 at each step). `with_text_call_repair`
gives the tokenizer's `parse_response` the agent's fallback, so a rollout is scored on the calls
inference would execute.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent.tools.repair import parse_text_call
from eventfold.llm.types import ToolCall


def with_text_call_repair(tokenizer: Any, tool_names: Iterable[str], opener: str = "") -> Any:
    """`tokenizer` with its `parse_response` falling back to the agent's plain-JSON call repair when
    the template's parser finds no tool call (mutates and returns `tokenizer`). With `opener` (the
    tool-call opener the generation prompt forces, `training.rl.opener`), a turn whose prompt ends with
    it is repaired as opener + continuation, as the agent repairs the student's served turn: the
    packaged 0.5B, forced, wrote `read", "arguments": {"id": "q1"}}<|im_end|>` (no closing tag), which
    the template's parser refuses and which is no call without its opener."""
    native = tokenizer.parse_response
    if getattr(native, "eventfold_repair", False):
        return tokenizer
    names = list(tool_names)
    opener_ids = tokenizer(opener, add_special_tokens=False)["input_ids"] if opener else []

    def repaired(ids: Any, prefix: Any) -> ToolCall | None:
        text = ids if isinstance(ids, str) else tokenizer.decode(ids, skip_special_tokens=True)
        tail = [int(t) for t in prefix[-len(opener_ids) :]] if opener_ids and prefix is not None else None
        if opener_ids and (tail == opener_ids or prefix is None):  # opened (or unknown: try it opened first)
            call = parse_text_call(opener + text, names)
            if call is not None or prefix is not None:
                return call
        return parse_text_call(text, names)

    def parse_response(ids: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            parsed = native(ids, *args, **kwargs)
        except (ValueError, TypeError):  # malformed template output: TRL decodes it as plain text
            call = repaired(ids, kwargs.get("prefix"))
            if call is None:
                raise
            return _with_call({"role": "assistant"}, call)
        if not isinstance(parsed, dict) or parsed.get("tool_calls"):
            return parsed
        call = repaired(ids, kwargs.get("prefix"))
        return parsed if call is None else _with_call(parsed, call)

    parse_response.eventfold_repair = True  # type: ignore[attr-defined]
    tokenizer.parse_response = parse_response
    return tokenizer


def _with_call(parsed: dict[str, Any], call: ToolCall) -> dict[str, Any]:
    """`parsed` as TRL's parser would return it had the call been written in the template's format."""
    function = {"name": call.name, "arguments": call.arguments}
    return {**parsed, "content": "", "tool_calls": [{"type": "function", "function": function}]}
