"""The agent's run state: numbered trajectory steps, fold memory, evidence seen, counters.

`RunState` (pydantic) is the typed view every node works with; `AgentState` (TypedDict, same keys,
JSON values) is what the LangGraph graph stores and checkpoints. Nodes do
`run = RunState.from_graph(state)`, change `run`, and return `run.to_graph()`.
"""

from __future__ import annotations

import uuid
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
    sub_question: int | None = None  # the plan's sub-question the search served


class Counters(BaseModel):
    tool_calls: int = 0
    tool_errors: int = 0
    invalid_turns: int = 0  # assistant turns without a usable tool call
    repaired_calls: int = 0
    folds: int = 0  # folds asked for by the model (model-initiated)
    unfolds: int = 0
    guard_folds: int = 0  # folds forced by the budget guard
    fold_llm_fallbacks: int = 0  # LLM summary failed, deterministic block used
    repeated_queries: int = 0
    error_streak: int = 0  # consecutive steps whose calls all failed (forced answer at max_refusals)
    llm_calls: int = 0
    prompt_tokens: int = 0  # prompt tokens of all LLM calls (plan, agent, fold summaries, reader)
    evaluated_prompt_tokens: int = 0  # of those, the ones the model evaluated (not reused from its KV cache)
    completion_tokens: int = 0
    reader_calls: int = 0  # final answers written by the reader over the collected evidence
    chain_reads: int = 0  # sub-questions answered by the reader in turn (chained reading)
    peak_context_tokens: int = 0
    final_context_tokens: int = 0
    context_samples: list[int] = Field(default_factory=list)  # rendered prompt size at each agent call


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
    # who wrote the final answer ("dates": computed; "timeline": read from the dated evidence in time order)
    answer_source: Literal["", "model", "reader", "dates", "timeline"] = ""
    answer_supported: bool = True  # the model's answer cites (or is found in) seen evidence
    report_body: str | None = None  # long-form report text (report_mode="long")
    report: str | None = None  # the final Markdown report
    status: Literal["running", "answered", "forced", "failed"] = "running"
    stop_reason: str = ""
    pending: list[Message] = Field(default_factory=list)  # the assistant turn awaiting its tool results

    @property
    def next_step(self) -> int:
        return len(self.steps) + 1

    @classmethod
    def from_graph(cls, state: dict[str, Any]) -> RunState:
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
    answer_source: str
    answer_supported: bool
    report_body: str | None
    report: str | None
    status: str
    stop_reason: str
    pending: list[dict[str, Any]]
