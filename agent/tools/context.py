"""What tools may touch during one tools-node call: the run state, the retriever, the model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.llm import ChatModel, ChatResponse, Message
from agent.state import RunState
from eventfold.run_options import RunOptions
from eventrag.schema import SearchBackend

Emit = Callable[[dict[str, Any]], None]


def _no_emit(event: dict[str, Any]) -> None:
    return None


@dataclass
class ToolContext:
    run: RunState
    backend: SearchBackend
    model: ChatModel
    options: RunOptions
    emit: Emit = field(default=_no_emit)
    last_turn: bool = False  # the run's last step: a tool refuses nothing it could let stand

    def chat(self, messages: list[Message], **kwargs: Any) -> ChatResponse:
        """One LLM call whose token usage is added to the run's counters."""
        return counted_chat(self.run, self.model, messages, **kwargs)


def counted_chat(run: RunState, model: ChatModel, messages: list[Message], **kwargs: Any) -> ChatResponse:
    resp = model.chat(messages, **kwargs)
    c = run.counters
    c.llm_calls += 1
    c.prompt_tokens += resp.usage.prompt_tokens
    evaluated = resp.usage.evaluated_prompt_tokens
    c.evaluated_prompt_tokens += resp.usage.prompt_tokens if evaluated is None else evaluated
    c.completion_tokens += resp.usage.completion_tokens
    return resp


def neutralize(text: str) -> str:
    """Document text is data: defuse chat-template control markers it may contain."""
    return text.replace("<|", "<\u2009|").replace("|>", "|\u2009>").replace("<tool_call>", "<tool call>")
