"""Prompt text used by the LLM backends themselves (kept apart from their logic)."""

from __future__ import annotations

import json
from typing import Any

from eventfold.llm.types import ToolSpec

SCHEMA_INSTRUCTION = (
    "Reply with one JSON object only, no prose and no code fences. It must follow this JSON schema:\n{schema}"
)

TOOLS_INSTRUCTION = """You can use these tools:
{tools}

To use a tool, reply with one JSON object only: {{"tool": <tool name>, "arguments": {{...}}}}.
Choose exactly one tool per reply. Arguments must follow the tool's parameter schema."""

TOOL_RESULT = "Result of tool {name}:\n{content}"


def schema_instruction(schema: dict[str, Any]) -> str:
    return SCHEMA_INSTRUCTION.format(schema=json.dumps(schema, ensure_ascii=False))


def tools_instruction(tools: list[ToolSpec]) -> str:
    lines = []
    for t in tools:
        params = json.dumps(t.parameters.get("properties", {}), ensure_ascii=False)
        required = t.parameters.get("required", [])
        lines.append(f"- {t.name}: {t.description}\n  parameters: {params}" + (f" (required: {', '.join(required)})" if required else ""))
    return TOOLS_INSTRUCTION.format(tools="\n".join(lines))
