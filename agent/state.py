"""The agent's run state: numbered trajectory steps, fold memory, evidence seen, counters, a long
task's items.

`RunState` (pydantic) is the typed view every node works with; `AgentState` (TypedDict, same keys,
JSON values) is what the LangGraph graph stores and checkpoints. Nodes do
`run = RunState.from_graph(state)`, change `run`, and return `run.to_graph()`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, Field

from agent.llm import Message
from agent.memory.store import Memory
from agent.memory.trajectory import CITATION_RE, Step
from agent.plan import Plan

__all__ = ["AgentState", "CITATION_RE", "Counters", "Evidence", "RunState", "Step"]


class Evidence(BaseModel):
    """A chunk the agent has seen (search hit or read), kept so citations can be resolved."""

    chunk_id: str
    doc_id: str
    title: str = ""
    text: str = ""
    step: int = 0
    score: float | None = None
    rank: int = 0  # position in its search result (1 = best); 0 = opened by read
    sub_question: int | None = None  # the long task's item open when it was found


class Counters(BaseModel):
    tool_calls: int = 0  # calls the policy chose (every call of the loop is one)
    distinct_tools: int = 0  # how many different tools those calls used
    tool_errors: int = 0  # calls the tools refused or that failed
    invalid_turns: int = 0  # turns without a usable tool call (answered with the valid tools)
    repaired_calls: int = 0  # near-miss calls made usable (a tool-name alias, wrapped arguments)
    folds: int = 0  # folds the policy asked for
    unfolds: int = 0
    guard_folds: int = 0  # folds forced by the budget guard on overflow
    fold_llm_fallbacks: int = 0  # LLM summary failed, deterministic block used
    repeated_queries: int = 0
    suggestions_shown: int = 0  # turns whose status line showed the workflow policy's next call
    suggestions_followed: int = 0  # of those, turns whose call was the suggested tool
    llm_calls: int = 0
    prompt_tokens: int = 0  # prompt tokens of all LLM calls (turns, fold summaries, the tools' readers)
    evaluated_prompt_tokens: int = 0  # of those, the ones the model evaluated (not reused from its KV cache)
    completion_tokens: int = 0
    reader_calls: int = 0  # answers the workflow policy read from its evidence with the reader
    peak_context_tokens: int = 0
    final_context_tokens: int = 0
    context_samples: list[int] = Field(default_factory=list)  # rendered prompt size at each policy turn


class RunState(BaseModel):
    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    question: str
    steps: list[Step] = Field(default_factory=list)
    memory: Memory = Field(default_factory=Memory)
    evidence: dict[str, Evidence] = Field(default_factory=dict)
    queries: dict[str, list[int]] = Field(default_factory=dict)  # normalised search query -> steps
    counters: Counters = Field(default_factory=Counters)
    plan: Plan = Field(default_factory=Plan)
    answer: str | None = None
    answer_citations: list[str] = Field(default_factory=list)
    policy: str = "model"  # the policy that chose the calls (RunOptions.policy)
    # who gave the final answer: the `answer` action of the "model" or of the "workflow" policy; "" none
    answer_source: str = ""
    report_body: str | None = None  # long-form report text (report_mode="long")
    report: str | None = None  # the final Markdown report
    status: Literal["running", "answered", "forced", "failed"] = "running"
    stop_reason: str = ""
    pending: list[Message] = Field(default_factory=list)  # the assistant turn awaiting its tool results
    suggestion: str | None = None  # the call suggested at the pending turn (its text), if any
    workflow_call: str | None = None  # the workflow policy's next call at the pending turn, when computed
    status_tokens: int | None = None  # the context tokens the pending turn's status line stated

    @property
    def next_step(self) -> int:
        return len(self.steps) + 1

    @classmethod
    def from_graph(cls, state: Mapping[str, object]) -> RunState:
        return cls.model_validate(dict(state))

    def to_graph(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class AgentState(TypedDict, total=False):
    """The LangGraph state: RunState's fields as JSON values (checkpoint-friendly)."""

    run_id: str
    question: str
    steps: list[dict[str, Any]]
    memory: dict[str, Any]
    evidence: dict[str, dict[str, Any]]
    queries: dict[str, list[int]]
    counters: dict[str, Any]
    plan: dict[str, Any]
    answer: str | None
    answer_citations: list[str]
    policy: str
    answer_source: str
    report_body: str | None
    report: str | None
    status: str
    stop_reason: str
    pending: list[dict[str, Any]]
    suggestion: str | None
    workflow_call: str | None
    status_tokens: int | None
