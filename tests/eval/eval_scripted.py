"""A scripted `ChatModel` test double (unit tests only): replies come from a function of the messages
and schema; with `tool_script`, agent turns (calls offering tools) get one scripted tool call."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from eventfold.llm.types import ChatResponse, Message, ToolCall

Reply = str | dict | None


class ScriptedChat:
    """Calls `script(messages, json_schema)`; a dict reply is sent as JSON text (and as `parsed`
    only when `parse=True`, like a backend that validated it), a str reply as raw text."""

    def __init__(
        self,
        script: Callable[[list[Message], dict | None], Reply],
        *,
        parse: bool = False,
        name: str = "scripted-judge",
        tool_script: Callable[[list[Message]], tuple[str, dict]] | None = None,
    ) -> None:
        self.script = script
        self.tool_script = tool_script
        self.parse = parse
        self.name = name
        self.calls: list[dict[str, Any]] = []

    def chat(
        self,
        messages,
        *,
        tools=None,
        tool_choice="auto",
        json_schema=None,
        temperature=None,
        max_tokens=None,
        stop=None,
    ):
        self.calls.append(
            {"messages": messages, "json_schema": json_schema, "max_tokens": max_tokens, "tools": tools}
        )
        if tools and self.tool_script is not None:  # an agent turn: exactly one tool call
            name, args = self.tool_script(messages)
            call = ToolCall(id=f"call_{len(self.calls)}", name=name, arguments=args)
            return ChatResponse(message=Message(role="assistant", tool_calls=[call]), model=self.name)
        reply = self.script(messages, json_schema)
        text = json.dumps(reply) if isinstance(reply, dict) else (reply or "")
        parsed = reply if (self.parse and isinstance(reply, dict)) else None
        return ChatResponse(message=Message(role="assistant", content=text), parsed=parsed, model=self.name)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def count_message_tokens(self, messages, tools=None) -> int:
        return sum(len(m.content.split()) for m in messages)


def batch_ids(json_schema: dict | None) -> list[int]:
    """The item ids a DRB judge call asks for (from the strict schema's id enum)."""
    assert json_schema is not None
    return json_schema["properties"]["results"]["items"]["properties"]["id"]["enum"]


def agent_turns(answer: str, query: str | None = None) -> Callable[[list[Message]], tuple[str, dict]]:
    """An agent script: search once (`query`, or the question itself), then answer citing every chunk
    id it was shown."""

    def turn(messages: list[Message]) -> tuple[str, dict]:
        shown = [
            cid for m in messages if m.role == "tool" for cid in re.findall(r"\[c:([^\]]+)\]", m.content)
        ]
        if not shown:
            question = next((m.content for m in messages if m.role == "user"), "")
            return "search", {"query": query or question[-300:]}
        return "answer", {"answer": answer, "citations": shown}

    return turn
