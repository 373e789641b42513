"""Briefings: a request listing numbered questions is planned as those questions, researched one after
another, every question without evidence searched before the end, each answered from its own evidence,
and reported as one "### n. question" section opening with "Answer:" (what the long-horizon scorer reads)."""

from __future__ import annotations

from agent_doubles import ScriptedChatModel

from agent.briefing import MAX_QUESTIONS, briefing_plan, numbered_questions, title
from agent.graph import AgentDeps
from agent.runner import run_agent
from eval.longhorizon.tasks import render_request
from eventfold.run_options import RESEARCH_SCAFFOLD, RunOptions

QS = ["Where was Marie Curie born?", "Where was Pierre Curie born?", "Which river does Warsaw lie on?"]


def _opts(**kw: object) -> RunOptions:
    return RunOptions(**{**RESEARCH_SCAFFOLD, **kw})


def test_numbered_questions_are_found_in_the_usual_shapes() -> None:
    assert numbered_questions(render_request(QS)) == QS
    assert numbered_questions("Brief me:\n1) Who?\n**2.** When?\n  3. Where?") == ["Who?", "When?", "Where?"]
    assert numbered_questions("1. Only one question?") == []
    assert numbered_questions("Which came first, 1. the war or 2. the peace?") == []  # not one per line
    assert numbered_questions("1. a?\n3. c?\n2. b?") == ["a?", "b?"]  # in order; a gap is not the list
    assert title(render_request(QS)).startswith("Write a briefing that answers the 3 questions")
    many = briefing_plan("\n".join(f"{i}. Question {i}?" for i in range(1, 15)))
    assert many is not None and len(many.sub_questions) == MAX_QUESTIONS and many.briefing
    assert many.beyond == ["Question 13?", "Question 14?"]
    assert briefing_plan("What supplier event led to the 2015 SeaGuard recall?") is None


def test_a_briefing_is_researched_and_reported_per_question(backend) -> None:
    # the model searches question 2 itself (tied to the first open question), then answers early;
    # question 3 has no evidence then, so it is searched before the readers run
    model = ScriptedChatModel(
        [("search", {"query": "Pierre Curie born"}), ("answer", {"answer": "Warsaw"})],
        text_replies=["Warsaw", "Paris", "Insufficient information."],
    )
    events: list[dict] = []
    res = run_agent(render_request(QS), AgentDeps(model, backend), _opts(max_steps=8), on_event=events.append)
    run = res.run
    assert [sq.text for sq in run.plan.sub_questions] == QS and run.plan.briefing
    assert not run.plan.by_llm and not [c for c in model.calls if c["json_schema"]]  # no plan call
    # seed for question 1, the model's search (question 2), the search of question 3 at the end
    assert backend.queries == [QS[0], "Pierre Curie born", QS[2]]
    assert [sq.answer for sq in run.plan.sub_questions] == ["Warsaw", "Paris", None]
    assert all(c in run.plan.sub_questions[0].evidence for c in run.plan.sub_questions[0].citations)
    assert run.answer.startswith("2 of 3 questions answered") and run.answer_source == "reader"
    readers = [c["messages"][-1].content for c in model.calls if not c["tools"] and c["json_schema"] is None]
    assert [q for q in QS if any(f"Question: {q}" in r for r in readers)] == QS  # each read on its own
    assert all("Found so far" not in r for r in readers)  # independent questions: nothing carried
    report = res.report
    assert report.startswith("# Write a briefing that answers the 3 questions")
    for n, q in enumerate(QS, 1):
        assert f"### {n}. {q}" in report
    sections = report.split("### ")
    assert sections[1].split("\n")[1].startswith("Answer: Warsaw [c:d1#0]")
    assert "Answer: not found in the evidence" in sections[3]
    assert QS[2] in report.split("## Open questions")[1]


def test_the_long_horizon_scorer_reads_the_agents_briefing(backend) -> None:
    from eval.longhorizon.sections import locate_answers

    model = ScriptedChatModel([], text_replies=["Warsaw", "Paris", "the Vistula"])
    res = run_agent(render_request(QS), AgentDeps(model, backend), _opts(max_steps=6))
    found = locate_answers(res.report, QS)
    assert [found[n].answer for n in (1, 2, 3)] == ["Warsaw", "Paris", "the Vistula"]
    assert all(found[n].explicit for n in (1, 2, 3))


def test_a_briefing_typed_on_one_line_and_its_question_text() -> None:
    from agent.runner import validate_question

    line = "Brief me on the Curies: 1. Where was Marie Curie born? 2. Where was Pierre Curie born?"
    assert numbered_questions(line) == QS[:2] and title(line) == "Brief me on the Curies:"
    assert numbered_questions("Use method 1. then do 2. the rest") == []  # items must be questions
    assert validate_question("  Brief me:\n\n1.  Where?\n2. When?  ") == "Brief me:\n1. Where?\n2. When?"
    assert validate_question("What  is\nthe capital?") == "What is the capital?"


def test_a_temporal_question_in_a_briefing_is_answered_from_dates(backend) -> None:
    qs = ["Where was Marie Curie born?", "Who was born first, Marie Curie or Pierre Curie?",
          "How many years after Pierre Curie was born was Marie Curie born?"]  # fmt: skip
    model = ScriptedChatModel([], text_replies=["Warsaw", "Marie Curie", "3 years"])  # readers' wrong answers unused
    run = run_agent(render_request(qs), AgentDeps(model, backend), _opts(max_steps=6)).run
    assert [sq.answer for sq in run.plan.sub_questions] == ["Warsaw", "Pierre Curie", "8 years"]
    assert set(run.plan.sub_questions[2].citations) == {"d1#0", "d2#0"}  # both birth sentences
    assert backend.queries.count("When was Pierre Curie born?") == 1  # a side is searched once


def test_a_briefing_past_a_third_of_its_budget_offers_the_finished_questions_to_fold(backend) -> None:
    # the status line asks for `fold all` once the context passes FOLD_HINT (.25) of the budget and every step in
    # the span served a question with evidence; the model follows it, the block is short (the chunks
    # its findings use, the rest counted), and each question is still answered from its own evidence
    model = ScriptedChatModel(
        [("fold", {"target": "all", "summary": "The context is past 62% of the budget."}), ("search", {"query": "Pierre Curie born"}),
         ("fold", {"target": "all"})],
        text_replies=["Warsaw", "Paris", "the Vistula"],
    )  # fmt: skip
    import re

    probe = ScriptedChatModel([("answer", {"answer": "Warsaw"})], text_replies=["Warsaw"] * 3)
    run_agent(render_request(QS), AgentDeps(probe, backend), _opts(max_steps=2, context_budget=100_000))
    opened = int(re.search(r"context (\d+) of", probe.calls[0]["messages"][-1].content).group(1))
    budget = int(opened * 1.6)  # the seeded context is past .25 of it, far from the guard
    opts = _opts(max_steps=10, fold_summary="deterministic", context_budget=budget)
    res = run_agent(render_request(QS), AgentDeps(model, backend), opts)
    run = res.run
    statuses = [c["messages"][-1].content for c in model.calls if c["tools"]]
    hint = 'call fold with target "all" before any search (question 1 has evidence, kept for the answers)'
    assert hint in statuses[0] and "next: the context is past 6" in statuses[0]  # 62% of the budget
    assert run.counters.folds == 2 and run.counters.guard_folds == 0  # the model's own folds
    f1, f2 = run.memory.folds["F1"], run.memory.folds["F2"]
    assert f1.summary_source == "deterministic" and f1.origin == "model"  # a briefing's fold is its index
    # a briefing's fold is an index of its finished questions, their best source cited; the second
    # `fold all` nests the first: one block for questions 1-2, however many questions are done
    assert f1.findings == ["question 1 -> Marie Curie [c:d1#0]"]  # the request and the plan hold its words
    assert f1.evidence == ["the sources cited above (+3 more shown in these steps: unfold to read them)"]
    assert (f2.start, f2.status, f2.children, f1.status) == (1, "active", ["F1"], "absorbed")
    assert [f.split(" ->")[0] for f in f2.findings] == ["question 1", "question 2"]
    assert [sq.answer for sq in run.plan.sub_questions] == ["Warsaw", "Paris", "the Vistula"]
    # the fold hid the searches the model copied its queries from: its result names the next search
    fold_results = [s.results[0].content for s in run.steps if s.kind != "invalid" and s.assistant.tool_calls
                    and s.assistant.tool_calls[0].name == "fold"]
    assert fold_results[0].endswith(f'Next: search sub-question 2 with its full text as the query: "{QS[1]}"')
    assert fold_results[-1].endswith(f'Next: search sub-question 3 with its full text as the query: "{QS[2]}"')
    # a folded question's plan line is its number and its block (the index cites its source): the
    # status line does not repeat its words and ids
    assert "  1. [done: folded in F1]" in statuses[1] and QS[0][:30] not in statuses[1]
    assert "  2. [done: c:" in statuses[2]  # searched since the fold: shown in full until folded


def test_no_fold_is_offered_outside_briefings_or_below_the_hint_share(backend) -> None:
    from agent.state import RunState
    from agent.status import fold_hint

    run = RunState(question=render_request(QS))
    run.plan = briefing_plan(run.question)
    run.plan.tie(1, 1, ["d1#0"])
    assert fold_hint(run, _opts(context_budget=1000), 240) is None  # below .25 of the budget
    assert fold_hint(run, _opts(context_budget=1000, fold=False), 900) is None  # ReAct
    single = RunState(question=QS[0])
    assert fold_hint(single, _opts(context_budget=1000), 900) is None  # not a briefing


def test_a_briefings_status_shows_the_next_question_in_full_and_the_others_short() -> None:
    from agent.state import RunState
    from agent.status import status_line

    long_qs = [f"Question {i}: " + "which of the many long-named things " * 3 + "?" for i in (1, 2, 3)]
    run = RunState(question=render_request(long_qs))
    run.plan = briefing_plan(run.question)
    run.plan.tie(1, 1, ["d1#0", "d2#0"])
    run.queries["question 1 which of the many"] = [1]
    lines = status_line(run, _opts(), 100).splitlines()
    plan = lines[lines.index("plan:") + 1 : lines.index("plan:") + 4]
    assert plan[0].startswith("  1. [done: c:d1#0] Question 1:") and plan[0].endswith("\u2026") and len(plan[0]) < 80
    assert plan[1] == f"  2. [open] {long_qs[1]}"  # the next question, in full: the model searches it
    assert plan[2].startswith("  3. [open] Question 3:") and len(plan[2]) < 70
    assert not [ln for ln in lines if ln.startswith(("searched:", "leads"))]  # noise a small model copies


def test_a_question_read_as_not_found_is_searched_in_its_own_words_once(backend) -> None:
    # the model searches other words for question 2 (a query copied from elsewhere): its reader finds
    # nothing, so question 2 is searched verbatim, its new results read first, and read again
    model = ScriptedChatModel(
        [("search", {"query": "Vistula river", "sub_question": 2})],
        text_replies=["Warsaw", "Insufficient information.", "Paris"],
    )
    res = run_agent(render_request(QS[:2]), AgentDeps(model, backend), _opts(max_steps=6))
    sq2 = res.run.plan.sub_questions[1]
    assert backend.queries == [QS[0], "Vistula river", QS[1]] and sq2.answer == "Paris"
    verbatim = res.run.steps[-2]  # the search in its own words, the step before the forced one
    assert verbatim.assistant.tool_calls[0].arguments["query"] == QS[1]
    assert sq2.evidence[0] in verbatim.chunk_ids  # its results are read first
    readers = [c["messages"][-1].content for c in model.calls if not c["tools"] and c["json_schema"] is None]
    assert sum(f"Question: {QS[1]}" in r for r in readers) == 2  # read again after the search
