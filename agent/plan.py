"""The research plan: the question decomposed into sub-questions (EventRAG's decomposition), each
with the evidence found for it. The loop follows the plan: every search serves one sub-question, and
the run stops searching once each sub-question has evidence (or at the step cap).

- `make_plan`: one short structured LLM call (only the sub-questions: EventRAG's full decomposition
  schema costs a small CPU model ~3x the generated tokens), else EventRAG's rule decomposition
  (`eventrag.query.decompose.rule_decompose`); the question itself is the plan when decomposition gives
  nothing better.
- `SubQuestion.evidence`: chunk ids of the search results (and reads) tied to it, in rank order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from agent.prompts import PLAN_SCHEMA, PLAN_SYSTEM, PLAN_SYSTEM_CHAIN
from eventfold.llm.types import ChatResponse, LLMError, Message
from eventfold.run_options import PlanMode
from eventrag.query.causal import OriginAnswer
from eventrag.query.decompose import rule_decompose
from eventrag.query.temporal import DateAnswer, TemporalQuestion, parse_temporal

ChatFn = Callable[..., ChatResponse]  # chat(messages, **kwargs), e.g. a run's counted model call
MAX_SUB_QUESTIONS = 3


class SubQuestion(BaseModel):
    id: int = Field(ge=1)
    text: str
    evidence: list[str] = Field(default_factory=list)  # chunk ids, best first
    steps: list[int] = Field(default_factory=list)  # steps that served it
    answer: str | None = None  # the reader's short answer to it (chained reading), None if none found
    citations: list[str] = Field(default_factory=list)  # chunk ids its answer rests on (briefings)

    @property
    def done(self) -> bool:
        return bool(self.evidence)


class Plan(BaseModel):
    sub_questions: list[SubQuestion] = Field(default_factory=list)
    by_llm: bool = False
    temporal: TemporalQuestion | None = None  # a "which came first" / "how many years" question: one sub-question per side
    dated: DateAnswer | None = None  # its answer, computed from the sides' dates (`agent.temporal`)
    resolved: str | None = None  # the question with its descriptions replaced by the names found (`agent.bridge`)
    origin: OriginAnswer | None = None  # "what event led to X": the event read from the timeline (`agent.causal`)
    briefing: bool = False  # the request's own numbered questions, one report section each (`agent.briefing`)
    outline: bool = False  # a briefing of a long request's requirements, each read as a finding (`agent.outline`)
    beyond: list[str] = Field(default_factory=list)  # a briefing's questions past the most it researches

    def get(self, sq_id: int | None) -> SubQuestion | None:
        return next((s for s in self.sub_questions if s.id == sq_id), None)

    def add(self, text: str) -> SubQuestion:
        """Append a sub-question (the next id)."""
        sq = SubQuestion(id=max((s.id for s in self.sub_questions), default=0) + 1, text=text)
        self.sub_questions.append(sq)
        return sq

    def open(self) -> list[SubQuestion]:
        return [s for s in self.sub_questions if not s.done]

    def facts(self, before: int | None = None) -> list[tuple[str, str]]:
        """(sub-question, answer) of the answered sub-questions (those before id `before` if given)."""
        return [(s.text, s.answer) for s in self.sub_questions if s.answer and (before is None or s.id < before)]

    @property
    def complete(self) -> bool:
        return bool(self.sub_questions) and not self.open()

    def tie(self, sq_id: int | None, step: int, chunk_ids: list[str]) -> SubQuestion | None:
        """Record `chunk_ids` as evidence of sub-question `sq_id` (default: the first open one)."""
        sq = self.get(sq_id) if sq_id is not None else None
        if sq is None:
            opened = self.open()
            sq = opened[0] if opened else None
        if sq is None:
            return None
        sq.steps.append(step)
        sq.evidence += [c for c in chunk_ids if c not in sq.evidence]
        return sq


def _key(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _restates(text: str, question: str) -> bool:
    """`text` is the question again, give or take a word ("What company made ..." for "Which company
    made ..."): a small model's plan often opens so, and a chain cannot start from it."""
    a, b = set(_key(text).split()), set(_key(question).split())
    return bool(a) and len(a & b) / len(a | b) >= 0.8


def clean_sub_questions(question: str, candidates: list[str], *, near: bool = False) -> list[str]:
    """Distinct, non-empty sub-questions other than the question itself (at most three); with `near`,
    also none that restates the question with a word or two changed."""
    seen = {_key(question)}
    out = []
    for cand in candidates:
        text = " ".join(cand.split()).strip()
        if len(text) < 4 or _key(text) in seen or (near and _restates(text, question)):
            continue
        seen.add(_key(text))
        out.append(text)
    return out[:MAX_SUB_QUESTIONS]


def make_plan(question: str, mode: PlanMode, chat: ChatFn | None = None, *, chain: bool = False) -> Plan:
    """The plan of `question`; a single sub-question (the question) when decomposition finds no hops;
    for a temporal question ("which came first", "how many years after") one "When ...?" per side.
    `chain`: the plan for chained reading (one fact per sub-question, restatements dropped)."""
    if mode == "off":
        return Plan()
    temporal = parse_temporal(question)
    if temporal is not None:  # the sides' dates answer it: no decomposition call
        sides = [SubQuestion(id=i, text=t) for i, t in enumerate(temporal.questions, 1)]
        return Plan(sub_questions=sides, temporal=temporal)
    by_llm = False
    candidates = rule_decompose(question).sub_queries
    if mode == "llm" and chat is not None:
        llm_subs = llm_sub_questions(chat, question, PLAN_SYSTEM_CHAIN if chain else PLAN_SYSTEM)
        if llm_subs is not None:
            candidates, by_llm = llm_subs, True
    subs = clean_sub_questions(question, candidates, near=chain)
    if len(subs) < 2:  # one hop is the question itself: no plan to follow beyond it
        subs = [question]
    return Plan(sub_questions=[SubQuestion(id=i, text=t) for i, t in enumerate(subs, 1)], by_llm=by_llm)


def ask_json(chat: ChatFn, system: str, question: str, schema: dict[str, Any], max_tokens: int) -> dict[str, Any] | None:
    """One JSON-constrained call on `question`; its object, None when the call fails or gives none."""
    messages = [Message(role="system", content=system), Message(role="user", content=question)]
    try:
        resp = chat(messages, json_schema=schema, temperature=0.0, max_tokens=max_tokens)
    except LLMError:
        return None
    return resp.parsed if isinstance(resp.parsed, dict) else None


def llm_sub_questions(chat: ChatFn, question: str, system: str = PLAN_SYSTEM) -> list[str] | None:
    """The model's sub-questions (one JSON-constrained call), None when the call fails."""
    data = ask_json(chat, system, question, PLAN_SCHEMA, max_tokens=120)
    if data is None or not isinstance(data.get("sub_questions"), list):
        return None
    return [str(q) for q in data["sub_questions"] if isinstance(q, str)]
