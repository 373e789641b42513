"""A `ChatModel` wrapper that records the agent's tool-choosing calls of one run (teacher trajectories).

Each agent turn is one ``chat(messages, tools=...)`` call: the recorder keeps the exact messages and
tool specs the teacher saw (the rendered, possibly folded context, status line included), so an SFT
row can reproduce the prompt of inference byte for byte. Calls without tools (fold summaries, the
forced answer) are passed through and not recorded as turns.
"""

from __future__ import annotations

import threading
from typing import Any, Literal

from pydantic import BaseModel, Field

from eventfold.llm.types import ChatModel, ChatResponse, Message, ToolSpec


class TeacherCall(BaseModel):
    """One agent turn as the teacher saw it: the prompt messages and the tools offered."""

    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)


class RecordingChatModel:
    """Delegates to ``inner``; records every call that offers tools. One instance per agent run."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[TeacherCall] = []
        self._lock = threading.Lock()

    def chat(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        tool_choice: Literal["auto", "required", "none"] = "auto",
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
    ) -> ChatResponse:
        resp = self.inner.chat(
            messages, tools=tools, tool_choice=tool_choice, json_schema=json_schema,
            temperature=temperature, max_tokens=max_tokens, stop=stop,
        )
        if tools:
            with self._lock:
                self.calls.append(
                    TeacherCall(messages=[m.model_copy(deep=True) for m in messages], tools=list(tools))
                )
        return resp

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def count_message_tokens(self, messages: list[Message], tools: list[ToolSpec] | None = None) -> int:
        return self.inner.count_message_tokens(messages, tools)
