"""JSON actions: how a local model that cannot emit native tool calls chooses one tool.

The model is shown the tools in its system prompt and decodes under a grammar built from
`action_schema(tools)`: one JSON object `{"tool": <name>, "arguments": {...}}` whose arguments follow
the chosen tool's own schema (an `anyOf` over the tools, each with `tool` fixed by `const`).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from eventfold.llm.json_repair import JSONRepairError, parse_json_object
from eventfold.llm.types import ToolCall, ToolSpec

THOUGHT_MAX_CHARS = 300


def _arguments_schema(tool: ToolSpec) -> dict[str, Any]:
    schema = dict(tool.grammar_parameters or tool.parameters or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def action_schema(tools: list[ToolSpec], *, think: bool = False) -> dict[str, Any]:
    """The JSON schema of one action; with `think`, a short free-text `thought` comes first. Only
    tools with a valid call right now (`available`) are admitted, with their narrowed arguments."""
    if not tools:
        raise ValueError("action_schema needs at least one tool")
    usable = [t for t in tools if t.available] or list(tools)
    variants = []
    for tool in usable:
        props: dict[str, Any] = {}
        if think:
            props["thought"] = {"type": "string", "maxLength": THOUGHT_MAX_CHARS}
        props["tool"] = {"const": tool.name}
        props["arguments"] = _arguments_schema(tool)
        variants.append({"type": "object", "properties": props, "required": list(props)})
    return variants[0] if len(variants) == 1 else {"anyOf": variants}


def render_action(call: ToolCall) -> str:
    """The JSON text of an action, as the model would have written it (for replaying history)."""
    return json.dumps({"tool": call.name, "arguments": call.arguments}, ensure_ascii=False)


def parse_action(text: str, tools: list[ToolSpec]) -> tuple[ToolCall, str]:
    """The `ToolCall` in a decoded action and its thought (may be ""); problems land in `ToolCall.error`."""
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    names = {t.name for t in tools}
    try:
        obj = parse_json_object(text)
    except JSONRepairError as exc:
        return ToolCall(id=call_id, name="", error=f"the action was not valid JSON ({exc})"), ""
    name = obj.get("tool")
    args = obj.get("arguments", {})
    thought: str = obj["thought"] if isinstance(obj.get("thought"), str) else ""
    if not isinstance(name, str) or name not in names:
        error = f"unknown tool {name!r}; available tools: {', '.join(sorted(names))}"
        return ToolCall(id=call_id, name=str(name or ""), error=error), thought
    if not isinstance(args, dict):
        return ToolCall(id=call_id, name=name, error="the arguments must be a JSON object"), thought
    return ToolCall(id=call_id, name=name, arguments=args), thought
