"""The per-turn decision trace of an agent run, and reading it back from result rows.

`trace_of(run, budget)` turns a run's steps into compact turns (kept in a row's `stats["trace"]`): the
tool called ("invalid" for a turn without a usable call), its arguments (short), the workflow policy's
would-be call at that turn (`Step.workflow_call`, computed when `RunOptions.trace_workflow` is on or a
suggestion was shown) and whether the call equals it, the context tokens the status line stated and
the budget, the chunk ids first seen at that turn, whether its answer was recorded, and in a long
task the item being worked on. The harnesses add what only they know: `mark_gold` (the multihop
harness: whether the evidence seen before the turn holds a gold answer) and `mark_crossref` (the
long-horizon harness: whether the turn's item is a cross-reference item).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent.plan import step_items
from agent.policy import call_text
from eval.multihop.metrics import mentions_answer, normalize_answer

ARGS_CHARS = 80  # a turn's arguments and the workflow's call are cut to this many characters
UNMATCHABLE = {"yes", "no"}  # gold answers a passage does not state as such: no evidence check


class Turn(BaseModel):
    step: int
    tool: str  # the first call's tool; "invalid": a turn without a usable call
    args: str = ""  # the first call's arguments as JSON (an invalid turn: its text), cut short
    followed: bool | None = None  # the call equals workflow_call (name and arguments); None: not computed
    workflow_call: str | None = None  # the workflow policy's next call at this turn, e.g. "search(query='…')"
    tokens_used: int | None = None  # the context tokens the status line stated
    budget: int | None = None  # the run's context budget
    chunks: list[str] = Field(default_factory=list)  # chunk ids first seen at this turn
    error: bool = False  # the first call's result was an error (an answer not recorded)
    evidence_has_gold: bool | None = None  # the chunks seen before this turn hold a gold answer; None: unknown
    item: int | None = None  # a long task's item worked on (an answer: the item it answers)
    crossref: bool | None = None  # that item is a cross-reference item; None: not a long task

    @property
    def workflow_tool(self) -> str | None:
        return self.workflow_call.split("(")[0] if self.workflow_call else None

    @property
    def answered(self) -> bool:
        """The turn's answer was recorded."""
        return self.tool == "answer" and not self.error


class Trace(BaseModel):
    """One run's turns, with its system and whether its final answer was right (None: unknown)."""

    system: str
    correct: bool | None = None
    turns: list[Turn] = Field(default_factory=list)


def _short(text: str) -> str:
    return text if len(text) <= ARGS_CHARS else text[: ARGS_CHARS - 1] + "…"


def _turn(step: Any, budget: int | None, seen: set[str]) -> Turn:
    new = [c for c in step.chunk_ids if c not in seen]
    seen.update(new)
    calls = step.assistant.tool_calls if step.kind == "action" else []
    if not calls:
        return Turn(step=step.n, tool="invalid", args=_short(step.assistant.content), tokens_used=step.status_tokens,
                    budget=budget, workflow_call=_short(step.workflow_call) if step.workflow_call else None,
                    followed=False if step.workflow_call else None)  # fmt: skip
    call = calls[0]
    error = bool(step.results) and step.results[0].content.startswith("error")
    return Turn(
        step=step.n, tool=call.name, args=_short(json.dumps(call.arguments, ensure_ascii=False)),
        followed=None if step.workflow_call is None else call_text(call) == step.workflow_call,
        workflow_call=_short(step.workflow_call) if step.workflow_call else None,
        tokens_used=step.status_tokens, budget=budget, chunks=new, error=error,
    )  # fmt: skip


def trace_of(run: Any, budget: int | None) -> list[dict[str, Any]]:
    """The run's turns as JSON dicts (`run`: agent.state.RunState); in a long task each turn carries
    its item (`agent.plan.step_items`)."""
    seen: set[str] = set()
    items = step_items(run.plan, run.steps)
    turns = []
    for step in run.steps:
        turn = _turn(step, budget, seen)
        turn.item = items.get(step.n)
        turns.append(turn.model_dump(mode="json"))
    return turns


def gold_aliases(golds: Sequence[str]) -> list[str]:
    """The gold answers a passage can state (yes/no and empty ones left out)."""
    return [g for g in golds if normalize_answer(g) and normalize_answer(g) not in UNMATCHABLE]


def mark_gold(trace: list[dict[str, Any]], texts: Mapping[str, str], golds: Sequence[str]) -> list[dict[str, Any]]:
    """`evidence_has_gold` on each turn: whether a chunk seen at an earlier turn (its text in `texts`,
    by chunk id) mentions a gold answer, i.e. what the policy had when it chose this turn's call; left
    None when no gold answer can be stated by a passage (yes/no)."""
    aliases = gold_aliases(golds)
    if not aliases:
        return trace
    has = False
    for turn in trace:
        turn["evidence_has_gold"] = has
        has = has or any(mentions_answer(texts.get(c, ""), aliases) for c in turn.get("chunks", []))
    return trace


def mark_crossref(trace: list[dict[str, Any]], xref_items: set[int]) -> list[dict[str, Any]]:
    """`crossref` on each turn of a long task: whether its item is one of `xref_items`."""
    for turn in trace:
        turn["crossref"] = None if turn.get("item") is None else turn["item"] in xref_items
    return trace


def traces_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[Trace]:
    """The traces of the agent rows (a multihop result's `run`, a long-horizon row's `system`); rows
    without a trace (retrieve-and-read systems, errors) are left out. `correct`: the row's EM is 1."""
    out = []
    for row in rows:
        turns = (row.get("stats") or {}).get("trace")
        if row.get("error") or turns is None:
            continue
        em = (row.get("metrics") or {}).get("em")
        system = str(row.get("run") or row.get("system") or "?")
        out.append(Trace(system=system, correct=None if em is None else em >= 1.0, turns=turns))
    return out


def load_rows(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every JSON row of the given JSONL files (results.jsonl, longhorizon.jsonl), in order."""
    rows = []
    for path in paths:
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows
