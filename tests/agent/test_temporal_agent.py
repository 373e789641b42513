"""A temporal question is planned one side per sub-question and answered from the dated sentences,
with no model call when the opening searches date both sides; the reader answers when they do not."""

from __future__ import annotations

from agent_doubles import MemoryBackend, ScriptedChatModel

from agent.graph import AgentDeps
from agent.runner import run_agent
from eventfold.run_options import RunOptions

DOCS = {
    "a": ("Founding of Nordvik Gauges", "Nordvik Gauges was registered in Bergen on 14 April 2009 by two engineers."),
    "b": ("Tidal Group buys Nordvik", "On 15 October 2020, Tidal Group acquired Nordvik Gauges for EUR 85 million."),
    "c": ("Nordvik Gauges products", "The firm sold 300 gauges in 2012 and opened a plant in 2015."),
}
OPTS = RunOptions(plan="llm", verify_answer=True, auto_search=True)


def test_the_dates_answer_without_a_model_call():
    model = ScriptedChatModel([])
    q = "How many full years after Nordvik Gauges was founded did Tidal Group acquire it?"
    res = run_agent(q, AgentDeps(model, MemoryBackend(DOCS)), OPTS)
    run = res.run
    assert model.calls == []  # no plan call, no agent step, no reader
    assert run.answer == "11 years" and run.answer_source == "dates" and run.status == "answered"
    assert [sq.text for sq in run.plan.sub_questions] == [
        "When was Nordvik Gauges founded?", "When did Tidal Group acquire Nordvik Gauges?",
    ]  # fmt: skip
    assert [sq.answer for sq in run.plan.sub_questions] == ["14 April 2009", "15 October 2020"]
    assert {run.evidence[c].doc_id for c in run.answer_citations} == {"a", "b"}
    assert "**Answer:** 11 years" in res.report and "14 April 2009" in res.report


def test_order_question_names_the_earlier_side():
    model = ScriptedChatModel([])
    q = "Which happened first: the founding of Nordvik Gauges or the Tidal Group acquisition?"
    run = run_agent(q, AgentDeps(model, MemoryBackend(DOCS)), OPTS).run
    assert run.answer == "the founding of Nordvik Gauges" and model.calls == []


def test_a_side_without_a_dated_sentence_leaves_the_answer_to_the_reader():
    docs = {**DOCS, "b": ("Tidal Group buys Nordvik", "Tidal Group later acquired Nordvik Gauges.")}
    model = ScriptedChatModel([("search", {"query": "Tidal Group acquisition date"})], text_replies=["11 years"])
    q = "How many full years after Nordvik Gauges was founded did Tidal Group acquire it?"
    run = run_agent(q, AgentDeps(model, MemoryBackend(docs)), RunOptions(**{**OPTS.model_dump(), "max_steps": 4})).run
    assert run.answer_source == "reader" and run.answer == "11 years"
    assert run.plan.sub_questions[0].answer == "14 April 2009"  # the date found is given to the reader
    reader = [c for c in model.calls if not c["tools"] and c["json_schema"] is None][-1]["messages"][-1].content
    assert "Found so far:\n- When was Nordvik Gauges founded? 14 April 2009" in reader
