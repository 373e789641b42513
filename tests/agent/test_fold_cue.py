"""The status line's fold cue for a single question: past FOLD_CUE of the budget it asks the model to fold
the steps it has not folded yet, once they hold a search; after the fold (a span of the fold call
alone) it stops asking; it is never shown at the last step (nothing would come after the fold), and a
ReAct run (no fold tool) never sees it."""

from __future__ import annotations

import re

from agent_doubles import ScriptedChatModel

from agent.graph import AgentDeps
from agent.runner import run_agent
from agent.status import FOLD_CALL, FOLD_CUE
from eventfold.run_options import RunOptions

Q = "Where was Marie Curie born?"


def _statuses(model: ScriptedChatModel) -> list[str]:
    return [c["messages"][-1].content for c in model.calls if c["tools"]]


def _tokens(status: str) -> int:
    return int(re.search(r"context (\d+) of", status).group(1))


def _budget_between_first_and_second_search(backend, fold: bool = True) -> int:
    """A budget whose cue share lies between the context after one search and after two."""
    probe = ScriptedChatModel([("search", {"query": "Marie Curie"}), ("search", {"query": "Warsaw"}),
                               ("answer", {"answer": "Warsaw"})])  # fmt: skip
    run_agent(Q, AgentDeps(probe, backend), RunOptions(max_steps=4, context_budget=100_000, fold=fold))
    one, two = (_tokens(s) for s in _statuses(probe)[1:3])
    assert two > one
    return int((one + two) / 2 / FOLD_CUE)


def test_a_single_question_past_the_cue_share_is_asked_to_fold_once(backend) -> None:
    budget = _budget_between_first_and_second_search(backend)
    model = ScriptedChatModel([("search", {"query": "Marie Curie"}), ("search", {"query": "Warsaw"}),
                               ("fold", {"target": "all"}), ("answer", {"answer": "Warsaw"})])  # fmt: skip
    opts = RunOptions(max_steps=6, context_budget=budget, fold_summary="deterministic")
    res = run_agent(Q, AgentDeps(model, backend), opts)
    statuses = _statuses(model)
    assert [FOLD_CALL in s for s in statuses] == [False, False, True, False]
    share = int(100 * _tokens(statuses[2]) / budget)
    assert f"next: the context is past {share}% of the budget: {FOLD_CALL}" in statuses[2]
    assert _tokens(statuses[3]) > FOLD_CUE * budget  # still past the share after the fold: no cue to fold the fold
    assert res.run.counters.folds == 1 and res.run.counters.guard_folds == 0
    assert res.run.answer == "Warsaw"


def test_no_cue_without_the_fold_tool(backend) -> None:
    budget = _budget_between_first_and_second_search(backend, fold=False)
    model = ScriptedChatModel([("search", {"query": "Marie Curie"}), ("search", {"query": "Warsaw"}),
                               ("answer", {"answer": "Warsaw"})])  # fmt: skip
    run_agent(Q, AgentDeps(model, backend), RunOptions(max_steps=4, context_budget=budget, fold=False))
    statuses = _statuses(model)
    assert _tokens(statuses[2]) > FOLD_CUE * budget
    assert not any(FOLD_CALL in s or "fold" in s for s in statuses)


def test_no_cue_at_the_last_step(backend) -> None:
    budget = _budget_between_first_and_second_search(backend)
    model = ScriptedChatModel([("search", {"query": "Marie Curie"}), ("search", {"query": "Warsaw"}),
                               ("answer", {"answer": "Warsaw"})])  # fmt: skip
    res = run_agent(Q, AgentDeps(model, backend), RunOptions(max_steps=3, context_budget=budget))
    statuses = _statuses(model)
    assert "step 3 of 3" in statuses[2] and _tokens(statuses[2]) > FOLD_CUE * budget  # past the share, yet:
    assert not any(FOLD_CALL in s for s in statuses)
    assert res.run.answer == "Warsaw"
