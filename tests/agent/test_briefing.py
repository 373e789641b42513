"""Briefings: a request that lists numbered questions runs in the same loop as a single question. The
status line lists the items and which are answered; `answer(item=n)` answers one; the run ends when
every item has an answer (or at the step cap); the report has one "### n. question" section per item
opening with "Answer:" (the long-horizon scorer reads that format)."""

from __future__ import annotations

from agent_doubles import ScriptedChatModel

from agent.briefing import MAX_QUESTIONS, briefing_plan, numbered_questions, title
from agent.graph import AgentDeps
from agent.runner import run_agent
from eval.longhorizon.tasks import render_request
from eventfold.run_options import RunOptions

QS = ["Where was Marie Curie born?", "Where was Pierre Curie born?", "Which river does Warsaw lie on?"]
OPTS = {"fold_summary": "deterministic", "suggest": False}


def test_numbered_questions_are_found_in_the_usual_shapes() -> None:
    assert numbered_questions(render_request(QS)) == QS
    assert numbered_questions("Brief me:\n1) Who?\n**2.** When?\n  3. Where?") == ["Who?", "When?", "Where?"]
    assert numbered_questions("1. Only one question?") == []
    assert numbered_questions("Which came first, 1. the war or 2. the peace?") == []  # not one per line
    assert numbered_questions("1. a?\n3. c?\n2. b?") == ["a?", "b?"]  # in order; a gap is not the list
    assert title(render_request(QS)).startswith("Write a briefing that answers the 3 questions")
    many = briefing_plan("\n".join(f"{i}. Question {i}?" for i in range(1, MAX_QUESTIONS + 3)))
    assert many is not None and len(many.sub_questions) == MAX_QUESTIONS and many.briefing
    assert many.beyond == [f"Question {MAX_QUESTIONS + 1}?", f"Question {MAX_QUESTIONS + 2}?"]
    assert briefing_plan("What supplier event led to the 2015 SeaGuard recall?") is None


def _answers() -> list:
    return [
        ("search", {"query": "Marie Curie born"}),
        ("answer", {"answer": "Warsaw", "citations": ["d1#0"], "item": 1}),
        ("search", {"query": "Pierre Curie born"}),
        ("answer", {"answer": "Paris", "citations": ["d2#0"]}),  # no item: the first open one
        ("search", {"query": "Warsaw river"}),
        ("answer", {"answer": "the Vistula", "citations": ["d3#1"], "item": 3}),
    ]


def test_a_briefing_runs_in_the_loop_until_every_item_has_an_answer(backend) -> None:
    model = ScriptedChatModel(_answers())
    events: list[dict] = []
    res = run_agent(render_request(QS), AgentDeps(model, backend), RunOptions(**OPTS), on_event=events.append)
    run = res.run
    assert [sq.text for sq in run.plan.sub_questions] == QS and run.plan.briefing
    assert [sq.answer for sq in run.plan.sub_questions] == ["Warsaw", "Paris", "the Vistula"]
    assert run.status == "answered" and len(run.steps) == 6 and run.answer_source == "model"
    assert run.answer == "3 of 3 items answered (one section each)"
    assert backend.queries == ["Marie Curie born", "Pierre Curie born", "Warsaw river"]  # the model's only
    status = [c["messages"][-1].content for c in model.calls if c["tools"]]
    assert "items: 0 of 3 answered" in status[0] and f"1. [open] {QS[0]}" in status[0]
    assert "items: 1 of 3 answered" in status[2] and "1. [answered] Where was Marie" in status[2]
    assert "[answered:" not in status[2]  # an answer listed above the open item is copied
    assert run.steps[1].results[0].content == "Answer to item 1 recorded: Warsaw; items still open: 2, 3"
    assert any(e["type"] == "items" for e in events)
    sections = res.report.split("### ")
    assert res.report.startswith("# Write a briefing that answers the 3 questions")
    assert sections[1].startswith(f"1. {QS[0]}\nAnswer: Warsaw [c:d1#0]")
    assert sections[3].startswith(f"3. {QS[2]}\nAnswer: the Vistula [c:d3#1]")


def test_the_long_horizon_scorer_reads_the_agents_briefing(backend) -> None:
    from eval.longhorizon.sections import locate_answers

    res = run_agent(render_request(QS), AgentDeps(ScriptedChatModel(_answers()), backend), RunOptions(**OPTS))
    found = locate_answers(res.report, QS)
    assert [found[n].answer for n in (1, 2, 3)] == ["Warsaw", "Paris", "the Vistula"]
    assert all(found[n].explicit for n in (1, 2, 3))


def test_a_briefing_stopped_at_the_cap_reports_the_open_items(backend) -> None:
    model = ScriptedChatModel(_answers()[:2] + [("search", {"query": "Pierre Curie"})] * 10)
    res = run_agent(render_request(QS), AgentDeps(model, backend), RunOptions(max_steps=4, **OPTS))
    run = res.run
    assert len(run.steps) == 9 and run.stop_reason == "step cap of 9 reached"  # 3 steps per item
    assert run.answer == "1 of 3 items answered (one section each)"
    assert "Answer: not answered" in res.report.split("### 2.")[1]


def test_a_briefing_typed_on_one_line_and_its_question_text() -> None:
    from agent.runner import validate_question

    line = "Brief me on the Curies: 1. Where was Marie Curie born? 2. Where was Pierre Curie born?"
    assert numbered_questions(line) == QS[:2] and title(line) == "Brief me on the Curies:"
    assert numbered_questions("Use method 1. then do 2. the rest") == []  # items must be questions
    assert validate_question("  Brief me:\n\n1.  Where?\n2. When?  ") == "Brief me:\n1. Where?\n2. When?"
    assert validate_question("What  is\nthe capital?") == "What is the capital?"


def test_an_items_answer_copied_from_another_item_is_refused_once_with_the_items_own_question(backend) -> None:
    qs = [*QS[:2], "Was Marie Curie born in Warsaw?", "Was Pierre Curie a physicist?"]
    model = ScriptedChatModel([
        ("search", {"query": "Marie Curie born"}),
        ("answer", {"answer": "Warsaw", "citations": ["d1#0"], "item": 1}),
        ("answer", {"answer": "warsaw", "citations": ["d1#0"], "item": 2}),  # the previous call, copied
        ("search", {"query": "Pierre Curie born"}),
        ("answer", {"answer": "Paris", "citations": ["d2#0"], "item": 2}),
        ("answer", {"answer": "yes", "item": 3}),
        ("answer", {"answer": "yes", "item": 4}),  # yes/no: items share it
    ])  # fmt: skip
    run = run_agent(render_request(qs), AgentDeps(model, backend), RunOptions(**OPTS)).run
    refused = run.steps[2].results[0].content
    assert refused.startswith(f"error: item 1 already has the answer 'warsaw'; item 2 asks: {qs[1]}")
    assert [sq.answer for sq in run.plan.sub_questions] == ["Warsaw", "Paris", "yes", "yes"]
    assert run.counters.tool_errors == 1 and run.status == "answered"
