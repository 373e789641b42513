"""The agent loop with a scripted model double: every call is the policy's, every tool is reachable in
one run, invalid calls are answered with the valid choices and the run goes on, an answer citing an
unseen chunk is refused, nothing runs before the first turn, at the last step only `answer` is offered,
and the model's answer stands as it wrote it. The real 0.5B model runs in test_ask_e2e.py."""

from __future__ import annotations

import pytest
from agent_doubles import ScriptedChatModel

from agent.graph import AgentDeps, AgentGraph
from agent.policy import WorkflowPolicy
from agent.runner import run_agent
from agent.state import RunState
from agent.tools.answer import echo_problem, options_problem, shape_problem
from eventfold.run_options import RunOptions

Q = "Where was Marie Curie born?"
OPTS = {"fold_summary": "deterministic", "suggest": False}
EVERY_TOOL = [
    ("search", {"query": "Marie Curie born"}),
    ("read", {"id": "d1#0"}),
    ("timeline", {"subject": "Marie Curie won the Nobel Prize", "relation": "before"}),
    ("dates", {"first": "Marie Curie was born", "second": "Pierre Curie was born", "op": "difference"}),
    ("resolve", {"description": "the husband of Marie Sklodowska"}),
    ("fold", {"target": "all"}),
    ("unfold", {"fold_id": "F1"}),
    ("answer", {"answer": "Warsaw", "citations": ["d1#0"]}),
]


def _turns(model: ScriptedChatModel) -> list[dict]:
    return [c for c in model.calls if c["tools"]]


def test_a_scripted_model_reaches_every_tool_in_one_run(backend):
    model = ScriptedChatModel(list(EVERY_TOOL), json_replies=[{"name": "Pierre Curie"}] * 3)
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(max_steps=10, **OPTS)).run
    called = [c.name for s in run.steps for c in s.assistant.tool_calls]
    assert called == [name for name, _ in EVERY_TOOL]
    errors = [s.results[0].content for s in run.steps if s.results[0].content.startswith("error")]
    assert errors == []
    assert "8 full years" in run.steps[3].results[0].content and run.steps[3].data[0]["years"] == 8
    assert "name: Pierre Curie" in run.steps[4].results[0].content
    c = run.counters
    assert (c.tool_calls, c.distinct_tools, c.folds, c.unfolds, c.guard_folds) == (8, 8, 1, 1, 0)
    assert run.status == "answered" and run.answer == "Warsaw" and run.answer_source == "model"
    assert run.answer_citations == ["d1#0"] and all(s.kind == "action" for s in run.steps)


def test_nothing_runs_before_the_models_first_call(backend):
    seen: list[int] = []

    def first(messages):
        seen.append(len(backend.queries))
        assert [m.role for m in messages] == ["system", "user", "user"]  # prompt, question, status line
        return ("search", {"query": "Marie Curie"})

    model = ScriptedChatModel([first, ("answer", {"answer": "Warsaw", "citations": ["d1#0"]})])
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(**OPTS)).run
    assert seen == [0] and backend.queries == ["Marie Curie"] and run.steps[0].kind == "action"
    assert model.calls[0]["tools"] and model.calls[0]["json_schema"] is None  # the first LLM call is the turn


def test_invalid_calls_are_answered_with_the_valid_choices_and_the_run_goes_on(backend):
    model = ScriptedChatModel([
        "I think the answer is Paris.",  # prose, no call
        ("fetch_everything", {"q": "x"}),  # a tool that does not exist
        ("search", {"query": ""}),  # bad arguments
        ("lookup", {"query": "Marie Curie born"}),  # an alias: repaired to search
        ("answer", {"answer": "Warsaw", "citations": ["d1#0"]}),
    ])  # fmt: skip
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(**OPTS)).run
    results = [s.results[0].content for s in run.steps]
    assert run.steps[0].kind == "invalid" and "Reply with one call of: search, timeline, dates, resolve, answer." in results[0]
    assert "unknown tool 'fetch_everything'; available tools: search, read" in results[1]
    assert results[2].startswith("error: query is empty")
    assert results[3].startswith("Results for 'Marie Curie born'")
    assert run.status == "answered" and run.answer == "Warsaw"
    c = run.counters
    assert (c.invalid_turns, c.tool_errors, c.repaired_calls, c.tool_calls) == (1, 2, 1, 4)


def test_an_answer_citing_an_unseen_chunk_is_refused_with_the_valid_ids(backend):
    model = ScriptedChatModel([
        ("search", {"query": "Marie Curie born"}),
        ("answer", {"answer": "Warsaw", "citations": ["d3#7"]}),
        ("answer", {"answer": "Krakow"}),  # no citation, and no seen chunk holds it
        ("answer", {"answer": "Warsaw, Poland", "citations": ["c:d1#0"]}),
    ])  # fmt: skip
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(**OPTS)).run
    refused = run.steps[1].results[0].content
    assert refused.startswith("error: citation d3#7 is not a chunk this run has seen")
    assert "cite ids from the results: d1#0, d1#1" in refused
    assert "'Krakow' cites no chunk and no seen chunk contains it" in run.steps[2].results[0].content
    # the model's own words stand: nothing rewrites the answer
    assert run.answer == "Warsaw, Poland" and run.answer_citations == ["d1#0"] and run.answer_source == "model"


def test_at_the_last_step_only_answer_is_offered(backend):
    model = ScriptedChatModel([("search", {"query": "Marie Curie born"}), ("search", {"query": "Warsaw"})])
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(max_steps=2, **OPTS)).run
    turns = _turns(model)
    assert "fold" in [t.name for t in turns[0]["tools"]]
    # before the last step only tools with nothing to act on yet (no chunk seen, nothing folded) are off
    assert [t.name for t in turns[0]["tools"] if not t.available] == ["read", "fold", "unfold"]
    # the last turn keeps every spec (the prompt's tool list, and so the cached prefix, stays the same);
    # only answer is available to the grammar
    assert [t.name for t in turns[1]["tools"]] == [t.name for t in turns[0]["tools"]]
    assert [t.name for t in turns[1]["tools"] if t.available] == ["answer"]
    status = [c["messages"][-1].content for c in turns]
    assert "last step: only answer is offered" in status[1] and "last step" not in status[0]
    # a backend without a grammar may still call another tool: refused, and the run ends at the cap
    assert run.steps[1].results[0].content == "error: search is not offered at the last step; only answer is"
    assert run.status == "forced" and run.stop_reason == "step cap of 2 reached" and run.answer is None
    assert "**Answer:** (no answer)" in run_agent(Q, AgentDeps(ScriptedChatModel([]), backend),
                                                  RunOptions(**OPTS)).report  # an LLM failure: no answer made up


def test_the_status_line_states_facts_and_never_asks_for_a_fold(backend):
    model = ScriptedChatModel([("search", {"query": "Marie Curie born"}), ("search", {"query": "Warsaw"}),
                               ("answer", {"answer": "Warsaw", "citations": ["d1#0"]})])  # fmt: skip
    run_agent(Q, AgentDeps(model, backend), RunOptions(context_budget=2000, **OPTS))
    status = [c["messages"][-1].content for c in _turns(model)]
    assert status[0].startswith("[status] step 1 of 12 · context ") and "of 2000 tokens" in status[0]
    assert "fold targets: all (steps 1-2) · open folds: none" in status[2]
    assert "queries run (2): marie curie born; warsaw" in status[2]
    assert "chunks seen (" in status[2] and "d1#0" in status[2]
    assert not any("call fold" in s.lower() or "next:" in s for s in status)


def test_the_model_sees_the_workflow_suggestion_and_the_trajectory_records_if_it_followed(backend):
    model = ScriptedChatModel([("search", {"query": "Marie Curie"}), ("answer", {"answer": "Warsaw", "citations": ["d1#0"]})])
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(fold_summary="deterministic")).run
    status = [c["messages"][-1].content for c in _turns(model)]
    assert "suggested: search(query='Where was Marie Curie born?')" in status[0]
    assert "suggested: read(id='d1#0')" in status[1]
    assert [s.followed for s in run.steps] == [True, False]
    assert (run.counters.suggestions_shown, run.counters.suggestions_followed) == (2, 1)


def test_a_bridge_only_the_models_split_finds_is_suggested_as_the_workflow_policy_runs_it(backend):
    """The suggestion is the workflow policy's own next call: for a bridge question the rules cannot split,
    resolve (the description found by one model call, counted in the run), not a plain search."""
    question = "What is the name of the waterfall in the country where the Bubye River is found?"
    split = {"first": "Where is the Bubye River found?", "then": "What is the name of the waterfall in #1?"}
    model = ScriptedChatModel([("search", {"query": "Bubye River"}), ("answer", {"answer": "Warsaw", "citations": ["d1#0"]})],
                              json_replies=[split])  # fmt: skip
    run = run_agent(question, AgentDeps(model, backend), RunOptions(fold_summary="deterministic")).run
    status = [c["messages"][-1].content for c in _turns(model)]
    assert "suggested: resolve(description='the country where the Bubye River is found')" in status[0]
    assert run.steps[0].followed is False and run.counters.llm_calls == 3  # the split, then two turns
    assert WorkflowPolicy().suggest(RunState(question=question)).name == "search"  # the rules alone


def test_after_an_answer_naming_what_the_question_names_the_suggestion_reads_another_hit(backend):
    """The workflow policy's next call after such a refusal (and so the suggestion, while `answer` is not
    offered) is the best hit of its search not read yet, not `answer`."""
    model = ScriptedChatModel([
        ("search", {"query": "Warsaw river"}),
        ("read", {"id": "d1#0"}),
        ("answer", {"answer": "Warsaw", "citations": ["d1#0"]}),
        ("read", {"id": "d3#1"}),
        ("answer", {"answer": "the Vistula", "citations": ["d3#1"]}),
    ])  # fmt: skip
    run = run_agent("Which river does Warsaw lie on?", AgentDeps(model, backend), RunOptions(fold_summary="deterministic")).run
    status = [c["messages"][-1].content for c in _turns(model)]
    assert "suggested: answer" in status[2] and "suggested: read(id='d3#1')" in status[3]
    assert all(s.followed for s in run.steps)
    assert run.answer == "the Vistula" and run.counters.tool_errors == 1


def test_after_an_answer_naming_neither_option_is_refused_the_grammar_offers_the_two(backend):
    """A small model told the two options gives its refused answer again; the retry's grammar admits the
    options alone (the prompt's schema stays the same), and the policy picks one."""
    question = "Which is older: the Warsaw Conservatory or the Sorbonne?"
    model = ScriptedChatModel([
        ("search", {"query": "Warsaw"}),
        ("answer", {"answer": "Marie Curie", "citations": ["d1#0"]}),
        ("answer", {"answer": "the Sorbonne", "citations": ["d1#0"]}),
    ])  # fmt: skip
    run = run_agent(question, AgentDeps(model, backend), RunOptions(**OPTS)).run
    assert run.steps[1].results[0].content.startswith("error: the question asks to choose: 'the Warsaw Conservatory' "
                                                      "or 'the Sorbonne'")
    specs = [next(s for s in c["tools"] if s.name == "answer") for c in _turns(model)]
    grammars = [(s.grammar_parameters or s.parameters)["properties"]["answer"] for s in specs]
    assert [g.get("enum") for g in grammars] == [None, None, ["the Warsaw Conservatory", "the Sorbonne"]]
    assert specs[2].parameters == specs[0].parameters
    assert run.status == "answered" and run.answer == "the Sorbonne"


def test_the_guard_folds_only_on_overflow_and_counts_it(backend):
    turns = [("search", {"query": q}) for q in ("Marie Curie", "Pierre Curie", "Warsaw river", "Nobel Prize")]
    model = ScriptedChatModel([*turns, ("answer", {"answer": "Warsaw", "citations": ["d1#0"]})])
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(context_budget=1700, **OPTS)).run
    assert run.counters.guard_folds >= 1 and run.counters.folds == 0
    assert all(f.origin == "guard" for f in run.memory.folds.values())
    assert run.status == "answered"


def test_the_registry_is_built_once_and_unfold_is_byte_exact(backend, monkeypatch):
    import agent.graph as graph_mod

    built = []
    real = graph_mod.build_registry
    monkeypatch.setattr(graph_mod, "build_registry", lambda *a, **k: built.append(1) or real(*a, **k))
    model = ScriptedChatModel([("search", {"query": "Marie Curie born"}), ("fold", {"target": "all"}),
                               ("unfold", {"fold_id": "F1"})])  # fmt: skip
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(max_steps=4, **OPTS)).run
    assert len(built) == 1 and run.counters.folds == 1
    g = AgentGraph(AgentDeps(model, backend), RunOptions(**OPTS))
    fresh = RunState(question=Q, steps=run.steps[:1], evidence=run.evidence)
    assert [m.model_dump() for m in g.render(fresh)] == [m.model_dump() for m in g.render(run)][: len(g.render(fresh))]


def test_a_single_question_report_fits_one_screen_with_clean_sentences(backend):
    from agent_doubles import MemoryBackend

    docs = {"n1": ("NMMB Orders the SeaGuard S2 Recall",
                   "NMMB Orders the SeaGuard S2 Recall\nDate: 2015-01-09\nOn 9 January 2015, the board ordered the "
                   "recall of all SeaGuard S2 units. The order was signed by Dagny Solberg.")}  # fmt: skip
    model = ScriptedChatModel([("search", {"query": "SeaGuard S2 recall"}),
                               ("answer", {"answer": "9 January 2015", "citations": ["n1#0"]})])  # fmt: skip
    res = run_agent("When was the SeaGuard S2 recall ordered?", AgentDeps(model, MemoryBackend(docs)), RunOptions(**OPTS))
    lines = res.report.splitlines()
    assert len(lines) <= 25
    assert "- On 9 January 2015, the board ordered the recall of all SeaGuard S2 units. [c:n1#0]" in lines
    assert not any("Date: 2015" in ln for ln in lines)
    assert any(ln.startswith("- policy model · 2 tool calls (2 distinct tools") for ln in lines)
    assert "wall time" in res.report and "## Steps" not in res.report
    full = run_agent("When was the SeaGuard S2 recall ordered?", AgentDeps(ScriptedChatModel(
        [("search", {"query": "SeaGuard S2 recall"}), ("answer", {"answer": "9 January 2015", "citations": ["n1#0"]})]),
        MemoryBackend(docs)), RunOptions(report_mode="full", **OPTS)).report  # fmt: skip
    assert "## Steps" in full and "## Evidence seen" in full


def test_a_sentence_or_the_question_repeated_as_answer_is_refused_once_then_recorded(backend):
    model = ScriptedChatModel([
        ("search", {"query": "Marie Curie born"}),
        ("answer", {"answer": "Marie Curie was born in the city of Warsaw, which was then part of the Russian Empire",
                    "citations": ["d1#0"]}),
        ("answer", {"answer": "Marie Curie born", "citations": ["d1#0"]}),
        ("answer", {"answer": "Marie Curie born", "citations": ["d1#0"]}),
    ])  # fmt: skip
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(**OPTS)).run
    results = [s.results[0].content for s in run.steps]
    assert results[1].startswith("error: the answer is a sentence of 17 words; put that sentence in quote, and in "
                                 "answer only what the question asks")
    assert results[2].startswith("error: the answer repeats the question; give only what the question asks")
    # the policy decides: the same answer given again stands as written
    assert run.status == "answered" and run.answer == "Marie Curie born" and run.counters.tool_errors == 2


def test_a_second_sentence_of_another_length_is_recorded_not_refused_again(backend):
    first = "Marie Curie was born in the city of Warsaw, which was then part of the Russian Empire"
    second = "Marie Curie was born in Warsaw, then a city of the Russian Empire, in the year 1867"
    model = ScriptedChatModel([("search", {"query": "Marie Curie born"}), ("answer", {"answer": first, "citations": ["d1#0"]}),
                               ("answer", {"quote": first, "answer": second, "citations": ["d1#0"]})])  # fmt: skip
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(**OPTS)).run
    assert run.status == "answered" and run.answer == second and run.counters.tool_errors == 1


def test_a_long_answer_at_the_last_step_is_recorded_not_refused(backend):
    long = "She was born in Warsaw, the capital of Congress Poland, on 7 November 1867 to a family of teachers"
    model = ScriptedChatModel([("search", {"query": "Marie Curie born"}), ("answer", {"answer": long, "citations": ["d1#0"]})])
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(max_steps=2, **OPTS)).run
    assert run.status == "answered" and run.answer == long


def test_after_a_sentence_is_refused_the_answer_call_opens_with_its_quote(backend):
    """A small model given the same schema writes its refused sentence again; the retry's grammar asks for
    the sentence first (`quote`), then the answer. Elsewhere the quote is optional."""
    sentence = "Marie Curie was born in the city of Warsaw, which was then part of the Russian Empire"
    model = ScriptedChatModel([
        ("search", {"query": "Marie Curie born"}),
        ("answer", {"answer": sentence, "citations": ["d1#0"]}),
        ("answer", {"quote": sentence, "answer": "Warsaw", "citations": ["d1#0"]}),
    ])  # fmt: skip
    run = run_agent(Q, AgentDeps(model, backend), RunOptions(**OPTS)).run
    specs = [next(s for s in c["tools"] if s.name == "answer") for c in _turns(model)]
    grammars = [s.grammar_parameters or s.parameters for s in specs]
    assert [list(g["properties"])[0] for g in grammars] == ["answer", "answer", "quote"]
    assert [g["required"][0] for g in grammars] == ["answer", "answer", "quote"]
    assert specs[2].parameters == specs[0].parameters  # the prompt's schema stays the same
    assert run.answer == "Warsaw" and run.steps[-1].data[0]["quote"] == sentence


def test_after_a_causal_sentence_is_refused_the_grammar_offers_its_cause_and_effect(backend):
    """In a run that asked the timeline for causes, a refused sentence stating a cause and its effect is
    retried with its parts as the answer's choices (those the contract accepts: not one repeating the
    question); without the causes call, or for a sentence with no connective, the retry is free."""
    sentence = "Her research on radioactivity led to the Nobel Prize in Physics in the year 1903"
    question = "Why did Marie Curie win the Nobel Prize?"

    def run_with(first: tuple[str, dict]) -> tuple[RunState, list]:
        model = ScriptedChatModel([
            ("search", {"query": "Marie Curie Nobel Prize"}), first,
            ("answer", {"answer": sentence, "citations": ["d1#1"]}),
            ("answer", {"quote": sentence, "answer": "Her research on radioactivity", "citations": ["d1#1"]}),
        ])  # fmt: skip
        run = run_agent(question, AgentDeps(model, backend), RunOptions(**OPTS)).run
        specs = [next(s for s in c["tools"] if s.name == "answer") for c in _turns(model)]
        return run, [(s.grammar_parameters or s.parameters)["properties"]["answer"].get("enum") for s in specs]

    run, enums = run_with(("timeline", {"subject": "Marie Curie won the Nobel Prize", "relation": "causes"}))
    assert run.steps[1].data[0]["relation"] == "causes"
    assert enums == [None, None, None, ["Her research on radioactivity", "the Nobel Prize in Physics in the year 1903"]]
    assert run.answer == "Her research on radioactivity" and run.steps[-1].data[0]["quote"] == sentence
    _, enums = run_with(("read", {"id": "d1#1"}))
    assert enums == [None] * 4


def test_an_answer_naming_only_what_the_question_names_is_refused_and_one_more_step_taken(backend):
    """"Pierre Curie" answers nothing of "Where was the husband of Marie Sklodowska born?" once resolve has
    filled that name in: the refusal gives the question with the name, `answer` is not offered in the
    next turn (a small model repeats itself at once), and the policy's answer given again stands."""
    question = "Where was the husband of Marie Sklodowska born?"
    model = ScriptedChatModel([
        ("search", {"query": "Marie Sklodowska husband"}),
        ("answer", {"answer": "Marie Sklodowska", "citations": ["d2#1"]}),
        ("resolve", {"description": "the husband of Marie Sklodowska"}),
        ("answer", {"answer": "Pierre Curie", "citations": ["d2#0"]}),
        ("search", {"query": "Where was Pierre Curie born?"}),
        ("answer", {"answer": "Pierre Curie", "citations": ["d2#0"]}),
    ], json_replies=[{"name": "Pierre Curie"}])  # fmt: skip
    run = run_agent(question, AgentDeps(model, backend), RunOptions(**OPTS)).run
    results = [s.results[0].content for s in run.steps]
    assert results[1].startswith("error: the answer only names what the question names ('Marie Sklodowska')")
    assert results[3].startswith("error: the answer only names what the question names once resolved "
                                 "('Pierre Curie' is 'the husband of Marie Sklodowska'); it asks: Where was "
                                 "Pierre Curie born?")
    offered = [next(s for s in c["tools"] if s.name == "answer").available for c in _turns(model)]
    assert offered == [True, True, False, True, False, True]
    assert run.status == "answered" and run.answer == "Pierre Curie" and run.counters.tool_errors == 2


@pytest.mark.parametrize(("question", "answer", "refused"), [
    ("What is the name of the waterfall in the country where the Bubye River is found?", "Bubye River", True),
    ("What is the name of the waterfall in the country where the Bubye River is found?", "Victoria Falls", False),
    ("Who is the wife of Kim Jong-chul?", "Kim Jong-suk", False),  # words as written, not stems
    ("Which singer is American, Mark King or Nick Hexum?", "Nick Hexum", False),  # an option
    ("Between Iain Banks and Irwin Shaw, which writer has had a more diverse career?", "Irwin Shaw", False),
    ("Did the Fennick boil-water notice come before 2014?", "yes", False),
])  # fmt: skip
def test_which_answers_only_name_what_the_question_names(question: str, answer: str, refused: bool):
    assert (echo_problem(RunState(question=question), question, answer) is not None) is refused


MERGER = "Which served more people at the time of the 2008 merger: the Fennick Water Board or Sallow District Waterworks?"


@pytest.mark.parametrize(("question", "answer", "refused"), [
    (MERGER, "Corrow Valley Water", True),  # the company the two merged into: neither option
    (MERGER, "the Fennick Water Board", False),
    (MERGER, "Sallow", False),
    (MERGER, "Insufficient information", False),  # an abstention is no pick
    ("Which cost more: the repair of the Hollin spillway or the replacement of the Sallow Road main?", "£20 million",
     True),
    ("Which singer is American, Mark King or Nick Hexum?", "Nick Hexum", False),
    ("Who directed the film that was shot in or around Leland, North Carolina in 1986?", "Stephen King", False),
])  # fmt: skip
def test_an_answer_to_a_question_ending_in_two_options_names_one(question: str, answer: str, refused: bool):
    found = options_problem(question, answer)
    assert (found is not None) is refused
    assert found is None or found.startswith("the question asks to choose: ")


@pytest.mark.parametrize(("question", "answer", "problem"), [
    ("Why did Owen Pritchard resign as chief executive in March 2016?",
     "Owen Pritchard resigned as chief executive in March 2016", "repeats the question"),
    ("Which happened first: the launch of Marlow Oceanics' Tidemark 200 or the fire at Kvarts Microsystems?",
     "the launch of Marlow Oceanics' Tidemark 200", None),  # one of the options is the answer
    ("Are Lake Vattern and Lake Vanern both in Sweden?", "yes", None),
    ("What led to the nine-day closure of Sallow Road in February 2015?",
     "The trunk main burst at Upper Sallow caused the nine-day closure of Sallow Road in February 2015.",
     "a sentence of 17 words"),
    ("What led to the nine-day closure of Sallow Road in February 2015?",
     "The burst of the cast-iron trunk main under Sallow Road", None),
])  # fmt: skip
def test_what_counts_as_a_short_answer(question: str, answer: str, problem: str | None):
    found = shape_problem(question, answer)
    assert (found is None) if problem is None else (found is not None and problem in found)
