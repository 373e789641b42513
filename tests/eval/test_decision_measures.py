"""Decision measures: each measure on hand-built traces (values that a wrong definition would change),
the trace in the rows of a scripted agent run (the workflow's call recorded only with trace_workflow),
a long task's items, and the CLI's table."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.llm import Message, ToolCall
from agent.memory.trajectory import Step
from agent.plan import Plan, SubQuestion
from agent.state import RunState
from eval.agent_call import AgentCaller, run_eventfold_agent
from eval.decisions import measures as m
from eval.decisions.__main__ import main
from eval.decisions.table import render_decisions
from eval.decisions.trace import Trace, mark_crossref, mark_gold, trace_of, traces_from_rows
from eval.multihop.schema import QAExample
from eval.multihop.systems import AgentSystem
from eventfold.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent"))
from agent_doubles import DOCS, MemoryBackend, ScriptedChatModel  # noqa: E402

Q = "Where was Marie Curie born?"
SEARCH_READ_ANSWER = [
    ("search", {"query": "Marie Curie born"}),
    ("read", {"id": "d1#0"}),
    ("answer", {"answer": "Warsaw", "citations": ["d1#0"]}),
]


def turn(tool: str, wf: str | None = None, **kw: Any) -> dict[str, Any]:
    return {"step": 1, "tool": tool, "workflow_call": wf, **kw}


def trace(*turns: dict[str, Any], correct: bool | None = None, system: str = "model") -> Trace:
    return Trace(system=system, correct=correct, turns=[{**t, "step": i + 1} for i, t in enumerate(turns)])


def test_tool_and_call_agreement_count_only_turns_with_the_workflows_call():
    tr = trace(
        turn("search", "search(query='q')", followed=False),  # same tool, other arguments
        turn("read", "search(query='q')", followed=False),
        turn("invalid", "read(id='a')", followed=False),  # an invalid turn never agrees
        turn("answer", "answer", followed=True),
        turn("answer", None),  # not computed: left out
    )
    assert m.tool_agreement([tr]) == 2 / 4
    assert m.call_agreement([tr]) == 1 / 4
    assert m.confusion([tr]) == {("search", "search"): 1, ("read", "search"): 1, ("invalid", "read"): 1,
                                 ("answer", "answer"): 1}  # fmt: skip
    assert m.invalid_rate([tr]) == 1 / 5
    assert m.tool_agreement([trace(turn("search"))]) is None


def test_too_early_is_a_wrong_answer_before_the_evidence_held_the_gold():
    def run(gold: bool | None, correct: bool | None, answered: bool = True) -> Trace:
        last = turn("answer" if answered else "search", evidence_has_gold=gold)
        return trace(turn("answer", error=True, evidence_has_gold=False), last, correct=correct)

    early = run(False, False)
    assert m.answer_turn(early) == 1  # the refused answer before it is not the answer turn
    traces = [early, run(False, True), run(True, False), run(False, False, answered=False), run(False, None),
              run(None, False)]  # fmt: skip
    assert m.too_early(traces) == 1 / 3


def test_too_late_counts_turns_from_the_first_gold_to_the_answer():
    late = trace(*(turn("search", evidence_has_gold=g) for g in (False, True, True)), turn("answer", evidence_has_gold=True))
    at_once = trace(turn("search", evidence_has_gold=False), turn("answer", evidence_has_gold=True))
    never = trace(turn("search", evidence_has_gold=False), turn("answer", evidence_has_gold=False))
    item_turns = trace(turn("answer", evidence_has_gold=True, item=1))  # a long task: no single answer turn
    traces = [late, at_once, never, item_turns]
    assert m.answer_delays(traces) == [2, 0]
    assert m.too_late_mean(traces) == 1.0 and m.too_late_share(traces) == 0.5


def test_folds_answer_pressure_within_two_turns_and_unpressured_folds_are_counted():
    def run(tokens: list[int], fold_at: int) -> Trace:
        return trace(*(turn("fold" if i == fold_at else "search", tokens_used=n, budget=1000)
                       for i, n in enumerate(tokens)))  # fmt: skip

    missed = run([100, 700, 300, 300, 300], 4)  # pressure at turn 1, fold 3 turns later
    answered = run([100, 400, 610, 300, 650], 4)  # pressure at turns 2 and 4: fold at 4
    calm = run([100, 600, 200], 1)  # 600 is not above 60 %
    assert m.fold_under_pressure([missed, answered, calm]) == 1 / 2
    assert m.folds_without_pressure([missed, answered, calm]) == 2 / 3
    assert m.fold_under_pressure([calm]) is None


def test_unfold_counts_for_a_cross_reference_item_only_before_its_answer_on_that_item():
    hit = trace(turn("unfold", item=3, crossref=True), turn("answer", item=3, crossref=True))
    other_item = trace(turn("unfold", item=2, crossref=False), turn("answer", item=3, crossref=True))
    after = trace(turn("answer", item=3, crossref=True), turn("unfold", item=3, crossref=True))
    unanswered = trace(turn("unfold", item=4, crossref=True), turn("search", item=4, crossref=True))
    plain = trace(turn("answer", item=1, crossref=False))
    assert m.unfold_on_crossref([hit, other_item, after, unanswered, plain]) == 1 / 3


def _step(n: int, name: str, data: dict | None = None, result: str = "ok", chunks: list[str] | None = None) -> Step:
    call = ToolCall(id=f"c{n}", name=name, arguments={"query": "x" * 200} if name == "search" else {})
    return Step(n=n, assistant=Message(role="assistant", tool_calls=[call]), chunk_ids=chunks or [],
                results=[Message(role="tool", content=result)], data=[data or {}])  # fmt: skip


def test_a_long_tasks_turns_carry_their_item_and_cross_reference():
    plan = Plan(sub_questions=[SubQuestion(id=i, text=f"q{i}") for i in (1, 2, 3)])
    steps = [_step(1, "search", chunks=["a", "b"]), _step(2, "answer", {"item": 2}),
             _step(3, "answer", {"item": 9}, result="error: no item 9"), _step(4, "search", chunks=["b", "c"]),
             _step(5, "answer", {"item": 1}), _step(6, "unfold"), _step(7, "answer", {"item": 3})]  # fmt: skip
    turns = mark_crossref(trace_of(RunState(question="q", steps=steps, plan=plan), 3000), {3})
    assert [t["item"] for t in turns] == [1, 2, 1, 1, 1, 3, 3]
    assert [t["crossref"] for t in turns] == [False, False, False, False, False, True, True]
    assert [t["chunks"] for t in turns[::3]] == [["a", "b"], ["c"], []]
    assert len(turns[0]["args"]) == 80 and turns[0]["budget"] == 3000 and turns[2]["error"]
    assert m.unfold_on_crossref(traces_from_rows([{"system": "fold", "stats": {"trace": turns}}])) == 1.0


def test_gold_is_marked_from_the_evidence_seen_before_each_turn():
    turns = [{"chunks": ["a"]}, {"chunks": ["b"]}, {"chunks": []}]
    assert [t["evidence_has_gold"] for t in mark_gold(turns, {"a": "Paris", "b": "born in Warsaw."}, ["warsaw"])] == [
        False, False, True]  # fmt: skip
    yes_no = [{"chunks": ["a"]}]
    assert "evidence_has_gold" not in mark_gold(yes_no, {"a": "yes"}, ["yes"])[0]


def _run(tmp_path: Path, **options: Any) -> dict[str, Any]:
    model = ScriptedChatModel(list(SEARCH_READ_ANSWER))
    out = run_eventfold_agent(Q, Settings(home=tmp_path), MemoryBackend(DOCS), model, suggest=False,
                              fold_summary="deterministic", **options)  # fmt: skip
    return out["stats"]["trace"]


def test_a_scripted_runs_row_holds_its_trace_and_the_workflows_call_only_with_trace_workflow(tmp_path):
    on = _run(tmp_path, trace_workflow=True)
    assert [t["tool"] for t in on] == ["search", "read", "answer"]
    assert [t["workflow_call"] for t in on] == [f"search(query='{Q}')", "read(id='d1#0')", "answer"]
    assert [t["followed"] for t in on] == [False, True, True]
    assert all(t["budget"] == 6000 and 0 < t["tokens_used"] < 6000 for t in on)
    assert on[0]["tokens_used"] < on[1]["tokens_used"] and "d1#0" in on[0]["chunks"]
    off = _run(tmp_path)
    assert [t["workflow_call"] for t in off] == [None] * 3 and [t["followed"] for t in off] == [None] * 3
    assert [t["tokens_used"] for t in off] == [t["tokens_used"] for t in on]
    last = _run(tmp_path, trace_workflow=True, max_steps=2)  # the last step offers answer only
    assert [t["workflow_call"] for t in last] == [f"search(query='{Q}')", "answer"]


def test_the_multihop_agent_system_marks_when_the_evidence_held_the_gold(tmp_path):
    model = ScriptedChatModel(list(SEARCH_READ_ANSWER))
    caller = AgentCaller(run_eventfold_agent, Settings(home=tmp_path), MemoryBackend(DOCS), model,
                         suggest=False, fold_summary="deterministic")  # fmt: skip
    example = QAExample(qid="q1", question=Q, answers=["Warsaw"])
    turns = AgentSystem(caller).predict(example).stats["trace"]
    assert [t["evidence_has_gold"] for t in turns] == [False, True, True]


def test_the_cli_prints_the_decision_table(tmp_path, capsys):
    agent_turns = [turn("search", "search(query='q')", followed=True, evidence_has_gold=False),
                   turn("read", "search(query='q')", followed=False, evidence_has_gold=True),
                   turn("answer", "answer", followed=True, evidence_has_gold=True)]  # fmt: skip
    rows = [{"run": "model", "qid": "a", "metrics": {"em": 1.0}, "stats": {"trace": agent_turns}},
            {"run": "naive", "qid": "a", "metrics": {"em": 0.0}, "stats": {}},
            {"run": "model", "qid": "b", "error": "boom", "stats": {"trace": agent_turns}}]  # fmt: skip
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "| system | runs | turns | tool = workflow % |" in out
    assert "| model | 1 | 3 | 67 | 67 | 0 | 0 | 1.00 | 0 |" in out and "naive" not in out
    assert "- model: read for search 1" in out
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing.jsonl")])
    assert render_decisions([]) == ""
