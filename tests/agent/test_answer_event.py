"""A question asking for an event is not answered by a bare name: the answer contract refuses "Orvell
Logistics" for "What supplier event led to …?" once, and the retry's grammar offers what the evidence
tells of the name, or, where it tells nothing, extends the name with what happened (a 1.5B model told
so in words gave the same name again)."""

from __future__ import annotations

import re

import pytest
from agent_doubles import MemoryBackend, ScriptedChatModel

from agent.graph import AgentDeps
from agent.runner import run_agent
from agent.tools.answer import SENTENCE_WORDS, name_problem
from agent.tools.registry import Pattern, narrowed
from eventfold.run_options import RunOptions

OPTS = {"fold_summary": "deterministic", "suggest": False}
SUPPLIER = "What supplier event led to the cancellation of the Philharmonic's 2018 tour of Austria?"


@pytest.mark.parametrize(("question", "answer", "refused"), [
    (SUPPLIER, "Orvell Logistics", True),
    (SUPPLIER, "Orvell Logistics went bankrupt", False),
    (SUPPLIER, "the bankruptcy of Orvell Logistics", False),
    ("What banking event led to the 2010-11 season cuts?", "Castellan Bank", True),
    ("Why did Owen Pritchard resign as chief executive in March 2016?", "Board of Directors", True),
    ("Why did Owen Pritchard resign as chief executive in March 2016?", "the membrane failure", False),
    ("What event made Marie Curie famous?", "2 February 2014", False),  # a date is no name
    ("What event made Marie Curie famous?", "yes", False),
    ("Who succeeded the chief executive who resigned on 31 March 2016?", "Elena Marsh", False),  # asks for a name
    ("On what date did the event that caused the closure of Riverside Road happen?", "Samuel Okafor", False),
    ("What event at a supplier set off the chain of events?", "Kvarts Microsystems", True),
    ("Which firm restored the organ damaged in the February 2014 storm?", "Harrow & Finch", False),
])  # fmt: skip
def test_a_question_asking_for_an_event_refuses_a_bare_name(question: str, answer: str, refused: bool):
    found = name_problem(question, answer)
    assert (found is not None) is refused
    assert found is None or found.startswith("the question asks for an event: ")


def test_the_retry_after_a_bare_name_no_evidence_tells_of_must_say_what_the_name_did(backend):
    question = "What event of 1867 opens Marie Curie's life?"
    model = ScriptedChatModel([
        ("search", {"query": "Marie Curie born Warsaw"}),
        ("answer", {"answer": "Krakow", "citations": ["d1#0"]}),
        ("answer", {"answer": "Krakow saw Marie Curie born", "citations": ["d1#0"]}),
    ])  # fmt: skip
    run = run_agent(question, AgentDeps(model, backend), RunOptions(**OPTS)).run
    results = [s.results[0].content for s in run.steps]
    assert results[1].startswith("error: the question asks for an event: 'Krakow' is a name")
    grammars = [next(t for t in c["tools"] if t.name == "answer").grammar_parameters for c in model.calls if c["tools"]]
    assert "pattern" not in grammars[1]["properties"]["answer"]
    pattern = grammars[2]["properties"]["answer"]["pattern"]
    assert re.fullmatch(pattern, "Krakow saw Marie Curie born") and not re.fullmatch(pattern, "Krakow")
    # what happened may come before the name ("was taken over by Castellan Bank") or after a comma
    assert re.fullmatch(pattern, "Marie Curie was born in Krakow") and re.fullmatch(pattern, "Krakow, her city, saw her born")
    assert not re.fullmatch(pattern, "Marie Curie was born in Paris")
    assert run.answer == "Krakow saw Marie Curie born" and run.counters.tool_errors == 1


def test_the_retry_after_a_bare_name_the_evidence_tells_of_picks_what_it_tells(backend):
    """The refusal names what the seen evidence tells of the name, and the retry's grammar offers those
    clauses alone, without their dates: the model picks an event, it does not recall one."""
    model = ScriptedChatModel([
        ("search", {"query": "Marie Curie born Warsaw"}),
        ("answer", {"answer": "Warsaw", "citations": ["d1#0"]}),
        ("answer", {"answer": "Marie Curie was born in Warsaw", "citations": ["d1#0"]}),
    ])  # fmt: skip
    run = run_agent("What event of 1867 opens Marie Curie's life?", AgentDeps(model, backend), RunOptions(**OPTS)).run
    assert '"Marie Curie was born in Warsaw"' in run.steps[1].results[0].content
    offered = next(t for t in model.calls[-1]["tools"] if t.name == "answer").grammar_parameters
    enum = offered["properties"]["answer"]["enum"]
    assert "Marie Curie was born in Warsaw" in enum and "Pierre Curie was born in Paris" not in enum
    assert run.answer == "Marie Curie was born in Warsaw" and run.counters.tool_errors == 1


def test_after_a_timeline_of_causes_the_retry_offers_what_the_causes_tell_even_past_an_answers_length(backend):
    """With causes listed, only their sentences are offered; a clause copied from one is recorded even
    when it runs past the length the contract gives a free answer."""
    long_cause = "Warsaw's secret Flying University taught Marie Curie physics and chemistry in the evenings"
    docs = {"d1": ("Curie", f"In 1889, {long_cause}. Warsaw had no university open to women.\n\n"
                            "Because of the evening classes, Marie Curie left for the Sorbonne in 1891.")}
    model = ScriptedChatModel([
        ("search", {"query": "Marie Curie Sorbonne"}),
        ("timeline", {"subject": "Marie Curie left for the Sorbonne", "relation": "causes"}),
        ("answer", {"answer": "Warsaw", "citations": ["d1#0"]}),
        ("answer", {"answer": long_cause, "citations": ["d1#0"]}),
    ])  # fmt: skip
    run = run_agent("Why did Marie Curie leave for the Sorbonne?", AgentDeps(model, MemoryBackend(docs)),
                    RunOptions(**OPTS)).run  # fmt: skip
    assert run.steps[2].results[0].content.startswith("error: the question asks for an event: 'Warsaw' is a name")
    enum = next(t for t in model.calls[-1]["tools"] if t.name == "answer").grammar_parameters["properties"]["answer"]["enum"]
    assert enum == [long_cause], enum  # "Warsaw had no university open to women" is no listed cause's
    assert len(long_cause.split()) > SENTENCE_WORDS and run.answer == long_cause


def test_a_pattern_choice_narrows_a_string_to_a_json_schema_pattern():
    params = {"type": "object", "properties": {"answer": {"type": "string", "description": "d"}}, "required": ["answer"]}
    schema, ok = narrowed(params, {"answer": Pattern("^Orvell Logistics [a-z][a-z ]+$")})
    assert ok and schema["properties"]["answer"] == {"type": "string", "description": "d",
                                                     "pattern": "^Orvell Logistics [a-z][a-z ]+$"}
    assert Pattern("^a [a-z]+$").matches("a b") and not Pattern("^a [a-z]+$").matches("a")


def test_a_refused_causal_sentence_offers_each_cause_of_a_long_cause_clause(backend):
    """A cause clause too long to be an answer is offered by its conjuncts: two causes, each a few words."""
    cause = "her research on radioactivity with polonium and her long work on radium in Paris"
    sentence = f"Marie Curie won the Nobel Prize in 1903 due to {cause}"
    model = ScriptedChatModel([
        ("search", {"query": "Marie Curie Nobel Prize"}),
        ("timeline", {"subject": "Marie Curie won the Nobel Prize", "relation": "causes"}),
        ("answer", {"answer": sentence, "citations": ["d1#1"]}),
        ("answer", {"quote": sentence, "answer": "her research on radioactivity with polonium", "citations": ["d1#1"]}),
    ])  # fmt: skip
    run = run_agent("Why did Marie Curie win the Nobel Prize?", AgentDeps(model, backend), RunOptions(**OPTS)).run
    offered = next(t for t in model.calls[-1]["tools"] if t.name == "answer").grammar_parameters
    enum = offered["properties"]["answer"]["enum"]
    assert "her research on radioactivity with polonium" in enum and "her long work on radium in Paris" in enum
    assert cause not in enum  # 14 words: a sentence, not an answer
    assert run.answer == "her research on radioactivity with polonium"


def test_a_refused_name_holding_a_quote_mark_leaves_the_retry_free(backend):
    """The pattern's characters are written into a JSON string as they stand: a name with a quote mark
    would make the grammar emit invalid JSON, so its retry gets no pattern."""
    model = ScriptedChatModel([
        ("search", {"query": "Marie Curie born Warsaw"}),
        ("answer", {"answer": 'Maria "Manya" Sklodowska', "citations": ["d1#0"]}),
        ("answer", {"answer": "Warsaw saw Marie Curie born", "citations": ["d1#0"]}),
    ])  # fmt: skip
    run = run_agent("What event of 1867 opens Marie Curie's life?", AgentDeps(model, backend), RunOptions(**OPTS)).run
    assert run.steps[1].results[0].content.startswith("error: the question asks for an event")
    offered = next(t for t in model.calls[-1]["tools"] if t.name == "answer").grammar_parameters
    assert "pattern" not in offered["properties"]["answer"]
    assert run.answer == "Warsaw saw Marie Curie born"


def test_after_a_kinds_timeline_the_retry_offers_only_the_causes_it_listed():
    """A kind's timeline shows only the causes of that kind; a cause it only counted is never offered."""
    from agent.llm import Message
    from agent.memory.trajectory import Step
    from agent.state import RunState
    from agent.tools.answer import told_of

    events = [{"text": "A fire broke out at Kvarts Microsystems' plant in Trondheim."},
              {"text": "Kvarts Microsystems released HTI from the exclusivity clause."}]  # fmt: skip

    def told(of_kind: int) -> list[str]:
        run = RunState(question="What supplier event led to the recall?")
        data = {"relation": "causes", "events": events, "kind": "supplier event", "of_kind": of_kind}
        run.steps.append(Step(n=1, assistant=Message(role="assistant", content=""), data=[data]))
        return told_of(run, "Kvarts Microsystems")

    assert told(1) == ["a fire broke out at Kvarts Microsystems' plant in Trondheim"]
    # no cause of the kind: the whole ranking was listed, and each cause tells its clause
    assert told(0)[1] == "Kvarts Microsystems released HTI from the exclusivity clause"
