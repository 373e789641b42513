"""The workflow policy: question forms mapped to the same tool calls the model has, in the same
trajectory format, its answer its own `answer` call (text from the reader or the dates tool)."""

from __future__ import annotations

from agent_doubles import MemoryBackend, ScriptedChatModel

from agent import prompts
from agent.graph import AgentDeps
from agent.policy.workflow import classify
from agent.runner import run_agent
from eventfold.run_options import RunOptions

DOCS = {
    "r": ("The recall", "A storm flooded the Lindqvist plant in March 2014. Because the flood ruined the pressure "
          "elements, the board ordered the recall of the S2 units on 9 January 2015. After the recall, sales fell."),
    "b": ("Bridges", "The Velora Bridge opened in 1931.\n\nThe old ferry closed in 1936."),
    "c": ("Curie", "Marie Curie was born in Warsaw in 1867.\n\nPierre Curie married Marie Sklodowska in 1895."),
    "p": ("Pierre Curie", "Pierre Curie was born in Paris in 1859."),
}  # fmt: skip
OPTS = RunOptions(policy="workflow", fold_summary="deterministic")


def _calls(run) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for s in run.steps for c in s.assistant.tool_calls]


def test_a_causal_question_takes_a_search_then_the_timeline_of_causes():
    q = "What event led to the recall of the S2 units?"
    model = ScriptedChatModel([], text_replies=["A storm flooded the Lindqvist plant"])
    run = run_agent(q, AgentDeps(model, MemoryBackend(DOCS)), OPTS).run
    calls = _calls(run)
    assert [n for n, _ in calls] == ["search", "timeline", "answer"]
    assert calls[1][1] == {"subject": "the recall of the S2 units", "relation": "causes"}
    assert run.answer == "A storm flooded the Lindqvist plant" and run.answer_source == "workflow"
    prompt = [c for c in model.calls if not c["tools"]][-1]["messages"]
    reader = prompt[-1].content
    events = [e["text"] for e in run.steps[1].data[0]["events"][:3]]
    assert events and all(e in reader for e in events)  # the reader picks among the ranked causes
    assert prompt[0].content == prompts.CAUSES_SYSTEM and "Insufficient" not in prompt[0].content
    assert "sales fell" not in reader  # the effect is no cause
    assert run.answer_citations and all(c in run.evidence for c in run.answer_citations)
    assert all(s.kind == "action" and s.suggested is None for s in run.steps)  # the same step format, no suggestion


def test_a_causal_reader_answering_with_an_events_number_answers_with_that_event():
    """The causal reader is shown numbered events; a reply of just a number ("[1]") is that event's text, not
    an answer of "[1]"."""
    model = ScriptedChatModel([], text_replies=["[1]"])
    run = run_agent("What event led to the recall of the S2 units?", AgentDeps(model, MemoryBackend(DOCS)), OPTS).run
    first = run.steps[1].data[0]["events"][0]["text"]
    assert run.answer == " ".join(first.split()) and "[" not in run.answer


def test_a_causal_question_whose_timeline_lists_no_cause_reads_the_subjects_report_for_the_general_reader():
    """The causal reader must pick one of its events; with none listed, the report telling the subject is
    read (its cause may be told there without a connective), and the gathered evidence goes to the reader
    that may reply "Insufficient information"."""
    docs = {"m": ("The mine", "For sixty years the coal from the pits on the edge of the moor went by rail to the "
                  "steelworks at Orrin and to the power station at Calder Bank, which took most of it. The last coal "
                  "buyer ended its contract in March 1987. Without a buyer, the mine closed in June 1987.")}  # fmt: skip
    model = ScriptedChatModel([], text_replies=["The last coal buyer ended its contract"])
    run = run_agent("What led to the closure of the Harlow mine?", AgentDeps(model, MemoryBackend(docs)), OPTS).run
    calls = _calls(run)
    assert [n for n, _ in calls] == ["search", "timeline", "read", "answer"] and run.steps[1].data[0]["events"] == []
    assert calls[2][1] == {"id": run.steps[1].data[0]["subject"]["chunk_id"]}
    readers = [c["messages"] for c in model.calls if not c["tools"]]
    assert [m[0].content for m in readers] == [prompts.READER_SYSTEM] and "last coal buyer" in readers[0][-1].content
    assert run.answer == "The last coal buyer ended its contract"


def test_a_temporal_question_takes_the_dates_tool_and_states_its_computation():
    q = "How many years after the Velora Bridge opened did the old ferry close?"
    model = ScriptedChatModel([])
    run = run_agent(q, AgentDeps(model, MemoryBackend(DOCS)), OPTS).run
    calls = _calls(run)
    assert [n for n, _ in calls] == ["dates", "answer"] and calls[0][1]["op"] == "difference"
    assert run.answer == "5 years" and run.counters.reader_calls == 0
    order = run_agent("Who was born first, Marie Curie or Pierre Curie?", AgentDeps(ScriptedChatModel([]),
                      MemoryBackend(DOCS)), OPTS).run  # fmt: skip
    assert _calls(order)[0] == ("dates", {"first": "Marie Curie born", "second": "Pierre Curie born", "op": "order"})
    assert order.answer == "Pierre Curie"


def test_a_bridge_question_resolves_its_description_then_searches_the_filled_question():
    q = "In which city was the husband of Marie Sklodowska born?"
    split = {"first": "Who is the husband of Marie Sklodowska?", "then": "In which city was #1 born?"}
    model = ScriptedChatModel([], json_replies=[split, {"name": "Pierre Curie"}], text_replies=["Paris"])
    run = run_agent(q, AgentDeps(model, MemoryBackend(DOCS)), OPTS).run
    calls = _calls(run)
    assert [n for n, _ in calls] == ["resolve", "search", "answer"]
    assert calls[0][1] == {"description": "the husband of Marie Sklodowska"}
    assert run.steps[0].data[0]["name"] == "Pierre Curie"
    assert calls[1][1] == {"query": "In which city was Pierre Curie born?"}
    assert run.answer == "Paris" and run.answer_source == "workflow"


def test_any_other_question_takes_a_search_and_a_read():
    model = ScriptedChatModel([], text_replies=["Warsaw"])
    run = run_agent("Where was Marie Curie born?", AgentDeps(model, MemoryBackend(DOCS)), OPTS).run
    assert [n for n, _ in _calls(run)] == ["search", "read", "answer"]
    assert run.answer == "Warsaw" and run.answer_citations[0] == "c#0"


def test_classify_without_a_model_uses_the_rule_split():
    assert classify("What event led to the recall of the S2 units?").form == "causal"
    assert classify("What led to the recall of the S2 units?").target == "the recall of the S2 units"
    assert classify("Why did the board recall the S2 units in 2015?").form == "causal"
    assert classify("Who was born first, Marie Curie or Pierre Curie?").form == "temporal"
    found = classify("Which company made the pressure element fitted in the S2 units recalled in 2015?")
    assert found.form == "bridge" and found.bridge is not None
    assert classify("Where was Marie Curie born?").form == "lookup"
