"""Prompt text used by the LLM backends themselves (kept apart from their logic)."""

from __future__ import annotations

import json
from typing import Any

from eventfold.llm.types import ToolSpec

SCHEMA_INSTRUCTION = (
    "Reply with one JSON object only, no prose and no code fences. It must follow this JSON schema:\n{schema}"
)

TOOLS_INSTRUCTION = """Tools:
{tools}
Reply with one JSON object: {{"tool": "<name>", "arguments": {{...}}}}."""

TOOL_RESULT = "Result of tool {name}:\n{content}"


def schema_instruction(schema: dict[str, Any]) -> str:
    return SCHEMA_INSTRUCTION.format(schema=json.dumps(schema, ensure_ascii=False))


def _signature(tool: ToolSpec) -> str:
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    args = ", ".join(name if name in required else f"{name}?" for name in props)
    return f"{tool.name}({args})"


def tools_instruction(tools: list[ToolSpec]) -> str:
    """A compact, fixed tool list: one line per tool (signature and description). The argument
    schemas are enforced by the decoding grammar, so the prompt does not repeat them; it does not
    change when the valid argument values do."""
    lines = [f"- {_signature(t)}: {t.description}" for t in tools]
    return TOOLS_INSTRUCTION.format(tools="\n".join(lines))
