"""Numbered trajectory steps and their pure rendering to chat messages."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.llm import Message

CITATION_RE = re.compile(r"\[c:([^\]\s]+)\]")


class Step(BaseModel):
    """One numbered step: the assistant turn (with its tool calls) and the tool results it got."""

    n: int = Field(ge=1)
    assistant: Message
    results: list[Message] = Field(default_factory=list)
    chunk_ids: list[str] = Field(default_factory=list)  # evidence this step's results showed
    # action: the policy's calls; invalid: a turn without a usable call. "forced" and "seed" mark steps
    # code wrote in the policy's place: this loop writes none, trajectories holding them still load
    kind: Literal["action", "invalid", "forced", "seed"] = "action"
    data: list[dict[str, Any]] = Field(default_factory=list)  # each result's structured data (ToolResult.data)
    suggested: str | None = None  # the call the status line suggested before this turn
    followed: bool | None = None  # whether the turn called the suggested tool (None: nothing suggested)
    # the workflow policy's next call at this turn (shown or not; None: not computed, see
    # RunOptions.trace_workflow) and the context tokens the status line stated
    workflow_call: str | None = None
    status_tokens: int | None = None


def step_messages(step: Step) -> list[Message]:
    """The messages of one step as the model sees them, labelled `[step n]`: on the first tool result
    (backends that replay tool calls as bare JSON actions still show it), or on the assistant text of
    a step without tool calls."""
    head = step.assistant.model_copy(deep=True)
    results = [m.model_copy(deep=True) for m in step.results]
    label = f"[step {step.n}]"
    if head.tool_calls and results:
        results[0].content = f"{label} {results[0].content}"
    else:
        head.content = f"{label} {head.content}".rstrip()
    return [head, *results]


def step_text(step: Step) -> str:
    """A plain-text transcript of one step (for fold summaries and digests)."""
    lines = [f"[step {step.n}]"]
    if step.assistant.content.strip():
        lines.append(f"assistant: {step.assistant.content.strip()}")
    for call in step.assistant.tool_calls:
        args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        lines.append(f"call: {call.name}({args})")
    for res in step.results:
        lines.append(f"result ({res.name or 'tool'}): {res.content}")
    return "\n".join(lines)


def call_digest(step: Step) -> str:
    """One line: what the step did, e.g. `search(query='x') -> 5 results (c:a, c:b)`."""
    calls = []
    for call in step.assistant.tool_calls:
        args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        calls.append(f"{call.name}({args})")
    what = "; ".join(calls) or (step.assistant.content.strip()[:80] or "no action")
    cites = ", ".join(f"c:{c}" for c in step.chunk_ids[:5])
    return f"step {step.n}: {what}" + (f" -> {cites}" if cites else "")
