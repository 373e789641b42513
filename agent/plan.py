"""The items of a long task: a briefing's numbered questions or a long request's requirements, each
with the evidence found for it and the answer the policy gave it (`answer(item=n)`).

A single question has no items. The status line lists the items and which are answered; the run ends
when every item has an answer (or at the step cap); the report has one section per item.
`ask_json` is the one JSON-constrained LLM call helper the policies share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from eventfold.llm.types import ChatResponse, LLMError, Message

ChatFn = Callable[..., ChatResponse]  # chat(messages, **kwargs), e.g. a run's counted model call


class SubQuestion(BaseModel):
    """One item of a long task."""

    id: int = Field(ge=1)
    text: str
    evidence: list[str] = Field(default_factory=list)  # chunk ids seen while it was the open item, best first
    steps: list[int] = Field(default_factory=list)  # steps taken while it was the open item
    answer: str | None = None  # the policy's answer to it (`answer(item=id)`)
    citations: list[str] = Field(default_factory=list)  # chunk ids its answer cites

    @property
    def done(self) -> bool:
        return self.answer is not None


class Plan(BaseModel):
    sub_questions: list[SubQuestion] = Field(default_factory=list)
    briefing: bool = False  # the request's own numbered questions, one report section each (`agent.briefing`)
    outline: bool = False  # a long request's requirements, each answered by a finding (`agent.outline`)
    beyond: list[str] = Field(default_factory=list)  # items past the most a run researches

    def get(self, sq_id: int | None) -> SubQuestion | None:
        return next((s for s in self.sub_questions if s.id == sq_id), None)

    def open(self) -> list[SubQuestion]:
        """The items without an answer yet, in order."""
        return [s for s in self.sub_questions if not s.done]

    @property
    def complete(self) -> bool:
        return bool(self.sub_questions) and not self.open()

    def tie(self, step: int, chunk_ids: list[str]) -> SubQuestion | None:
        """Record a step and the chunks it showed under the first open item (the one being researched)."""
        opened = self.open()
        if not opened:
            return None
        sq = opened[0]
        sq.steps.append(step)
        sq.evidence += [c for c in chunk_ids if c not in sq.evidence]
        return sq


def step_items(plan: Plan, steps: Sequence[Any]) -> dict[int, int | None]:
    """Each step's item in a long task (step number -> item id; empty for a single question): an accepted
    answer's own item (by default the first open one, as the answer tool takes it; a refused answer, its
    result an "error: ...", answers none), else the first item not yet answered at that step. ``steps``: agent.memory.trajectory.Step."""
    open_items = [sq.id for sq in plan.sub_questions]
    out: dict[int, int | None] = {}
    for step in steps if open_items else ():
        first = open_items[0] if open_items else None
        data = step.data[0] if step.data else {}
        failed = any(r.content.lstrip().lower().startswith("error") for r in step.results)
        answered = any(c.name == "answer" for c in step.assistant.tool_calls) and not failed
        item = data.get("item", first) if answered else first
        if answered and item in open_items:
            open_items.remove(item)
        out[step.n] = int(item) if item is not None else None
    return out


def ask_json(chat: ChatFn, system: str, question: str, schema: dict[str, Any], max_tokens: int) -> dict[str, Any] | None:
    """One JSON-constrained call on `question`; its object, None when the call fails or gives none."""
    messages = [Message(role="system", content=system), Message(role="user", content=question)]
    try:
        resp = chat(messages, json_schema=schema, temperature=0.0, max_tokens=max_tokens)
    except LLMError:
        return None
    return resp.parsed if isinstance(resp.parsed, dict) else None
