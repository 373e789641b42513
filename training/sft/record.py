"""Recorders of the agent's turns of one run (teacher trajectories).

- ``RecordingChatModel`` wraps the teacher model of the model policy: each agent turn is one
  ``chat(messages, tools=...)`` call, and the recorder keeps the exact messages and tool specs the
  teacher saw (the rendered, possibly folded context, status line included), so an SFT row can
  reproduce the prompt of inference byte for byte. Calls without tools (fold summaries, the forced
  answer, a reader) are passed through and not recorded as turns.
- ``RecordingPolicy`` wraps any policy (the scripted workflow as teacher): per ``next_call`` it keeps
  the prompt the model policy would be given at that turn (``ctx.messages``: the same rendering and
  status line) and the tool specs on offer, plus the calls the wrapped policy chose. A prompt that
  shows the workflow's suggestion (``suggested: ...``, a line the student is never shown when it runs
  alone) is refused: such a row would teach copying a hint that is not there at inference.

Both keep the run's failed model calls (``errors``: an ``LLMError`` the agent or the policy absorbed,
such as a reader's that became "not found"): such a run is not a finished trajectory
(``training.sft.resume.finished``).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.policy import Policy, PolicyContext, Turn
from agent.state import RunState
from agent.status import SUGGESTED
from eventfold.llm.types import ChatModel, ChatResponse, LLMError, Message, ToolCall, ToolSpec


class TeacherCall(BaseModel):
    """One agent turn as the teacher saw it: the prompt messages and the tools offered (and, recorded
    from a policy, the calls it chose)."""

    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    calls: list[ToolCall] = Field(default_factory=list)


class SuggestionInPrompt(ValueError):
    """A recorded prompt shows the workflow's suggested call: no prompt of the model policy alone."""


class RecordingChatModel:
    """Delegates to ``inner``; records every call that offers tools. One instance per agent run."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[TeacherCall] = []
        self.errors: list[str] = []
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
        resp = noted(self.errors, self.inner.chat, messages, tools=tools, tool_choice=tool_choice,
                     json_schema=json_schema, temperature=temperature, max_tokens=max_tokens, stop=stop)
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


class RecordingPolicy:
    """Delegates to ``inner``; records every turn's prompt, offered specs and chosen calls. One instance
    per agent run; refuses (``SuggestionInPrompt``) a prompt that shows a suggested call."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[TeacherCall] = []
        self.errors: list[str] = []

    def next_call(self, run: RunState, specs: list[ToolSpec], ctx: PolicyContext) -> Turn:
        status = ctx.messages[-1].content if ctx.messages else ""  # the status line (documents are data)
        hint = next((ln for ln in status.splitlines() if ln.startswith(SUGGESTED)), None)
        if hint is not None:
            raise SuggestionInPrompt(
                f"step {run.next_step}: the prompt shows the workflow's suggestion ({hint!r}); teacher "
                "turns are recorded as the model policy sees them alone (run with suggest = false)"
            )
        turn = self.inner.next_call(run, specs, replace(ctx, model=NotedErrors(ctx.model, self.errors)))
        self.calls.append(TeacherCall(messages=[m.model_copy(deep=True) for m in ctx.messages], tools=list(specs),
                                      calls=[c.model_copy(deep=True) for c in turn.calls]))  # fmt: skip
        return turn


def noted(errors: list[str], call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)``; an ``LLMError`` it raises is noted in ``errors`` and passed on."""
    try:
        return call(*args, **kwargs)
    except LLMError as exc:
        errors.append(str(exc) or type(exc).__name__)
        raise


class NotedErrors:
    """A chat model whose failed calls are noted in ``errors`` (see ``noted``)."""

    def __init__(self, inner: ChatModel, errors: list[str]) -> None:
        self.inner, self.errors, self.name = inner, errors, inner.name

    def chat(self, messages: list[Message], **kwargs: Any) -> ChatResponse:
        return noted(self.errors, self.inner.chat, messages, **kwargs)

    def __getattr__(self, name: str) -> Any:  # count_tokens, ...: the model's own
        return getattr(self.inner, name)
