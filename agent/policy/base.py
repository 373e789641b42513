"""The policy interface: one call chosen per turn from the tools on offer.

A policy sees the run (trajectory, evidence, a long task's items), the tool specs valid at this turn
(narrowed: at the last step only `answer`) and a `PolicyContext` (the model, the options, the tools'
context bound to the run, and the rendered prompt with its status line). It returns a `Turn`: the
assistant text and its usable calls; a turn without one is invalid, and the loop answers it with the
valid tools and goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from agent.llm import ChatModel, Message, ToolCall, ToolSpec
from agent.state import RunState
from agent.tools.context import ToolContext
from eventfold.run_options import RunOptions


@dataclass
class Turn:
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)  # empty: an invalid turn

    @property
    def invalid(self) -> bool:
        return not self.calls


@dataclass
class PolicyContext:
    model: ChatModel
    options: RunOptions
    tools: ToolContext  # bound to the run: what a policy may read or call the model through
    messages: list[Message] = field(default_factory=list)  # the rendered prompt, status line last


class Policy(Protocol):
    name: str

    def next_call(self, run: RunState, specs: list[ToolSpec], ctx: PolicyContext) -> Turn:
        """The next turn of `run`; `specs` are the tools on offer now. May raise `LLMError`."""
        ...
