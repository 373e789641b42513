"""Repair of model tool calls that are almost right: wrapped arguments, aliases of tool names,
JSON calls written as plain text. What cannot be repaired becomes a tool error for the model."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from typing import Any

from agent.llm import ToolCall

ALIASES = {
    "final_answer": "answer",
    "finish": "answer",
    "respond": "answer",
    "submit": "answer",
    "retrieve": "search",
    "lookup": "search",
    "query": "search",
    "web_search_corpus": "search",
    "open": "read",
    "get": "read",
    "read_chunk": "read",
    "fold_steps": "fold",
    "unfold_steps": "unfold",
}


def normalize_call(call: ToolCall, names: Iterable[str]) -> tuple[ToolCall, bool]:
    """Fix the name and argument shape of a call; returns (call, whether anything changed)."""
    known = set(names)
    name = call.name.strip().removeprefix("functions.").strip()
    if name not in known:
        lowered = name.lower().replace("-", "_").replace(" ", "_")
        name = lowered if lowered in known else ALIASES.get(lowered, name)
    args: Any = call.arguments
    if isinstance(args, dict) and len(args) == 1 and next(iter(args)) in ("arguments", "parameters", "args"):
        inner = next(iter(args.values()))
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except json.JSONDecodeError:
                pass
        if isinstance(inner, dict):
            args = inner
    changed = name != call.name or args != call.arguments
    error = call.error
    if error and name in known and isinstance(args, dict) and (changed or "unknown tool" in error):
        error = None  # the backend could not use the call as written; the repaired call is usable
    return ToolCall(id=call.id, name=name, arguments=args, error=error), changed or (
        error is None and bool(call.error)
    )


def _objects(text: str) -> Iterable[dict[str, Any]]:
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


def parse_text_call(text: str, names: Iterable[str]) -> ToolCall | None:
    """A tool call written as JSON in plain text (`{"name": .., "arguments": {..}}` and variants)."""
    known = set(names)
    for obj in _objects(text):
        name = obj.get("name") or obj.get("tool") or obj.get("function") or obj.get("action")
        if isinstance(name, dict):
            obj, name = name, name.get("name")
        args = obj.get("arguments", obj.get("args", obj.get("parameters", obj.get("action_input", {}))))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = {"query": args} if name == "search" else {"answer": args}
        if isinstance(name, str) and isinstance(args, dict):
            call, _ = normalize_call(
                ToolCall(id=f"call_{uuid.uuid4().hex[:8]}", name=name, arguments=args), known
            )
            if call.name in known:
                return call
    return None
