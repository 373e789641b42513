"""Wire-neutral chat types and the `ChatModel` protocol every backend implements.

Messages follow the OpenAI chat format (role, content, tool_calls, tool_call_id) so that a
trajectory can be sent unchanged to any OpenAI-compatible server, rendered by a Hugging Face chat
template for training, or replayed against the local llama.cpp backend.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from eventfold.text_safety import neutralize_control_tokens


class ToolCall(BaseModel):
    """One call of a tool by the model; `arguments` is already parsed JSON."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    # Set when the model's call could not be used as is (arguments not JSON even after repair, unknown
    # tool): the agent should not run it but show this text to the model as the tool's result.
    error: str | None = None

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }


class Message(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None  # tool name, on tool messages

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            out["name"] = self.name
        return out


def prompt_safe_wire(message: dict[str, Any]) -> dict[str, Any]:
    """A wire message (``to_openai()`` or a template dict) with chat control tokens neutralised in its
    content and tool-call arguments: what every backend sends, so text from a document, a file name
    or a tool result can never end a turn or open a system prompt."""
    out = dict(message)
    if isinstance(out.get("content"), str):
        out["content"] = neutralize_control_tokens(out["content"])
    if out.get("tool_calls"):
        calls = []
        for call in out["tool_calls"]:
            call = dict(call)
            fn = dict(call.get("function") or {})
            if isinstance(fn.get("arguments"), str):
                fn["arguments"] = neutralize_control_tokens(fn["arguments"])
            call["function"] = fn
            calls.append(call)
        out["tool_calls"] = calls
    return out


class ToolSpec(BaseModel):
    """A tool the model may call: a name, a description and a JSON schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    # What a constrained decoder may produce right now: the parameters narrowed to the currently valid
    # values (enums), and whether the tool has any valid call at all. The prompt shows `parameters`
    # only, so it stays the same from step to step (prefix-cache friendly).
    grammar_parameters: dict[str, Any] | None = None
    available: bool = True

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # prompt tokens the model actually evaluated (the rest came from its prefix/KV cache); None = unknown
    evaluated_prompt_tokens: int | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class ChatResponse(BaseModel):
    """The assistant's turn: text and/or tool calls, with token usage and where it came from."""

    message: Message
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None
    cached: bool = False
    model: str = ""
    # When a JSON schema was requested: the parsed object (None if the output could not be parsed).
    parsed: Any = None

    @property
    def text(self) -> str:
        return self.message.content

    @property
    def tool_calls(self) -> list[ToolCall]:
        return self.message.tool_calls


class LLMError(RuntimeError):
    """A chat call failed for good (after retries), or the backend cannot serve the request."""


class LLMConnectionError(LLMError):
    """The server cannot be reached (connection refused, timeout) or refuses the caller (401, 403) or
    the endpoint or model (404): no retry or fallback will get an answer from it."""


class LLMUnavailable(RuntimeError):
    """A run's model failed with an `LLMConnectionError` before answering any call: the run stops
    instead of writing a report without a model. Deliberately not an `LLMError`, which the agent absorbs
    (a fallback, a forced answer); the message is the backend's, credentials already masked."""


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers chat messages, optionally choosing one of `tools` or following a schema.

    - `tools`: the model may call tools; the reply's `message.tool_calls` holds them.
    - `json_schema`: the reply's text must be one JSON object following the schema; `parsed` holds it.
    - `tool_choice="required"`: the model must call exactly one tool.
    """

    name: str

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
    ) -> ChatResponse: ...

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` under this model's tokenizer (or the closest available estimate)."""
        ...

    def count_message_tokens(self, messages: list[Message], tools: list[ToolSpec] | None = None) -> int:
        """Tokens of a whole prompt as this model would see it (chat template included)."""
        ...
