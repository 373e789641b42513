"""The agent with a scripted small-model double that makes the mistakes a 1.5B model made on the
demo question: an out-of-range fold, prose instead of a call, a re-read, a repeated search. The run
still follows its plan and ends with an answer drawn from the evidence (the reader's), and every
mistake is answered with the valid choices."""

from __future__ import annotations

from agent_doubles import ScriptedChatModel

from agent.graph import AgentDeps, AgentGraph
from agent.runner import run_agent
from agent.state import RunState
from eventfold.llm.prompts import tools_instruction
from eventfold.run_options import RunOptions

Q = "Where was Marie Curie born?"
PLAN = {"sub_questions": ["Marie Curie birth place", "Warsaw country"]}


def test_mistakes_still_end_with_an_answer_from_the_evidence(backend):
    model = ScriptedChatModel(
        [
            ("fold", {"start_step": 4, "end_step": 12}),  # impossible range (3 steps do not exist)
            "I think the answer is Paris.",  # prose, no call
            ("search", {"query": "Marie Curie born"}),
            ("read", {"id": "c:d1#0"}),
            ("read", {"id": "d1#0"}),  # re-read
            ("search", {"query": "Marie Curie born!"}),  # repeated search
        ],
        json_replies=[PLAN],
        text_replies=["Warsaw"],
    )
    events: list[dict] = []
    res = run_agent(Q, AgentDeps(model, backend), RunOptions(plan="llm", verify_answer=True), on_event=events.append)
    run = res.run
    assert [s.text for s in run.plan.sub_questions] == PLAN["sub_questions"]
    assert run.steps[0].kind == "seed" and backend.queries[0] == Q
    results = [s.results[0].content if s.results else "" for s in run.steps]
    assert "valid targets now: all (steps 1-1)" in results[1]
    assert run.steps[2].kind == "invalid" and "search" in results[2]
    assert "valid id values" in results[5] and "d1#0" not in results[5].split("valid id values:")[1]
    assert "searched sub-question 2 instead" in results[6]
    assert backend.queries[-1] == "Warsaw country"
    # every sub-question has evidence: the loop stopped and the reader answered from the evidence
    assert run.plan.complete and run.stop_reason == "every sub-question has evidence"
    assert run.answer == "Warsaw" and run.answer_source == "reader"
    assert run.answer_citations and run.answer_citations[0] == "d1#0"
    reader_prompt = model.calls[-1]["messages"][-1].content
    assert "Marie Curie was born in Warsaw" in reader_prompt and "Question: " + Q in reader_prompt
    c = run.counters
    assert (c.tool_calls, c.tool_errors, c.invalid_turns, c.repeated_queries) == (5, 2, 1, 1)
    assert c.reader_calls == 1 and c.folds == 0
    assert "## Findings" in res.report and "### 2. Warsaw country" in res.report
    assert "**Answer:** Warsaw [c:d1#0]" in res.report and "## Open questions" in res.report
    assert any(e["type"] == "plan" for e in events)


def test_grammar_admits_only_valid_calls_and_the_prompt_stays_fixed(backend):
    model = ScriptedChatModel(
        [("search", {"query": "Marie Curie born"}), ("fold", {"target": "sq1"}), ("unfold", {"fold_id": "f1"})],
        json_replies=[PLAN],
        text_replies=["Warsaw"],
    )
    run_agent(Q, AgentDeps(model, backend), RunOptions(plan="llm", fold_summary="deterministic", max_steps=4))
    turns = [c["tools"] for c in model.calls if c["tools"]]
    first = {t.name: t for t in turns[0]}
    assert not first["unfold"].available and first["read"].available
    assert first["fold"].grammar_parameters["properties"]["target"]["enum"] == ["all"]
    assert first["search"].grammar_parameters["properties"]["sub_question"]["enum"] == [1, 2]
    third = {t.name: t for t in turns[2]}
    assert third["unfold"].available
    assert third["unfold"].grammar_parameters["properties"]["fold_id"]["enum"] == ["F1"]
    # the prompt's tool list is the same text at every turn (the KV prefix survives)
    assert len({tools_instruction(t) for t in turns}) == 1
    assert len(tools_instruction(turns[0])) < 900


def test_status_line_shows_plan_and_fold_targets(backend):
    model = ScriptedChatModel([("search", {"query": "Marie Curie born"})], json_replies=[PLAN], text_replies=["Warsaw"])
    run_agent(Q, AgentDeps(model, backend), RunOptions(plan="llm", max_steps=3))
    status = [c for c in model.calls if c["tools"]][-1]["messages"][-1].content
    assert status.startswith("[status] step 3 of 3")
    assert "1. [done: c:d1#0" in status and "2. [open] Warsaw country" in status
    assert "fold targets: all (steps 1-2), sq1 (steps 2-2)" in status and "unfold: nothing folded" in status
    # names in the shown results that neither the question nor a search named yet
    assert "leads (names in the results, not searched yet): Warsaw; Pierre Curie" in status


def test_supported_answer_stands_unsupported_one_goes_to_the_reader(backend):
    good = ScriptedChatModel([("answer", {"answer": "Warsaw"})], json_replies=[PLAN])
    res = run_agent(Q, AgentDeps(good, backend), RunOptions(plan="llm", verify_answer=True))
    assert res.run.status == "answered" and res.run.answer_source == "model"
    assert res.run.answer_citations == ["d1#0"]  # found in the evidence, cited for the model
    bad = ScriptedChatModel([("answer", {"answer": "Krakow"})], json_replies=[PLAN], text_replies=["Warsaw"])
    res = run_agent(Q, AgentDeps(bad, backend), RunOptions(plan="llm", verify_answer=True))
    assert res.run.answer == "Warsaw" and res.run.answer_source == "reader"
    assert res.run.stop_reason == "the answer cited no evidence"


def test_failing_calls_end_with_the_reader_not_a_guess(backend):
    model = ScriptedChatModel(["no idea"] * 5, json_replies=[PLAN], text_replies=["Insufficient information"])
    res = run_agent(Q, AgentDeps(model, backend), RunOptions(plan="llm", max_refusals=3))
    assert res.run.stop_reason == "3 failed steps in a row"
    assert res.run.answer == "Insufficient information" and res.run.answer_citations == []
    assert "Where was Marie Curie born?" in res.report.split("## Open questions")[1]


def test_registry_is_built_once_per_run(backend, monkeypatch):
    import agent.graph as graph_mod

    built = []
    real = graph_mod.build_registry
    monkeypatch.setattr(graph_mod, "build_registry", lambda *a, **k: built.append(1) or real(*a, **k))
    model = ScriptedChatModel(
        [("search", {"query": "Marie Curie born"}), ("search", {"query": "Warsaw"})],
        json_replies=[PLAN],
        text_replies=["Warsaw"],
    )
    run_agent(Q, AgentDeps(model, backend), RunOptions(plan="llm", verify_answer=True))
    assert len(built) == 1


def test_fold_keeps_no_copies_and_unfold_is_byte_exact(backend):
    model = ScriptedChatModel(
        [("search", {"query": "Marie Curie born"}), ("fold", {"target": "all"}), ("unfold", {"fold_id": "F1"})],
        json_replies=[PLAN],
    )
    res = run_agent(Q, AgentDeps(model, backend), RunOptions(plan="llm", fold_summary="deterministic", max_steps=4))
    run = res.run
    assert run.counters.folds == 1 and "originals" not in run.memory.folds["F1"].model_dump()
    g = AgentGraph(AgentDeps(model, backend), RunOptions(plan="llm", verify_answer=True))
    unfolded = g.render(run)
    before = RunState.model_validate(run.model_dump())
    before.memory.folds["F1"].status = "active"
    assert [m.content for m in g.render(before)] != [m.content for m in unfolded]
    fresh = RunState(question=Q, steps=run.steps[:2], plan=run.plan, evidence=run.evidence)
    assert [m.model_dump() for m in g.render(fresh)] == [m.model_dump() for m in unfolded][: len(g.render(fresh))]


def test_research_options_search_every_sub_question_first_then_the_model_acts_once(backend):
    from eventfold.run_options import RunOptions as Opts
    from eventfold.settings import Settings

    opts = Opts.for_research(Settings())
    assert (opts.plan, opts.verify_answer, opts.auto_search, opts.chain) == ("llm", True, True, False)
    model = ScriptedChatModel([("answer", {"answer": "Warsaw", "citations": ["d1#0"]})], json_replies=[PLAN])
    res = run_agent(Q, AgentDeps(model, backend), opts)
    run = res.run
    assert [s.kind for s in run.steps] == ["seed", "seed", "seed", "action"]
    assert [sq.steps for sq in run.plan.sub_questions] == [[2], [3]] and run.plan.complete
    assert run.status == "answered" and run.answer_source == "model"
    assert (run.counters.llm_calls, run.counters.chain_reads) == (2, 0)  # plan, one turn
    status = [c for c in model.calls if c["tools"]][0]["messages"][-1].content
    assert "next: every sub-question has evidence" in status


def test_a_repeated_search_after_the_plan_follows_the_first_lead(backend):
    from agent.leads import leads

    opts = RunOptions(plan="llm", verify_answer=True, auto_search=True)
    model = ScriptedChatModel([("search", {"query": "Warsaw country"})], json_replies=[PLAN], text_replies=["Warsaw"])
    res = run_agent(Q, AgentDeps(model, backend), opts)
    step = res.run.steps[3]
    assert "searched the lead 'Pierre Curie' instead" in step.results[0].content
    assert backend.queries[-1] == "Pierre Curie" and res.run.counters.tool_errors == 0
    assert "Pierre Curie" not in leads(res.run)  # searched: no longer a lead


def test_reader_passages_put_what_the_models_follow_up_added_first(backend):
    from agent.reader import best_evidence

    opts = RunOptions(plan="llm", verify_answer=True, auto_search=True, search_top_k=2)
    model = ScriptedChatModel([("search", {"query": "Vistula river"})], json_replies=[PLAN], text_replies=["Warsaw"])
    run = run_agent(Q, AgentDeps(model, backend), opts).run
    assert [c for c in run.steps[3].chunk_ids if run.evidence[c].step == 4] == ["d3#1"]  # new to the run
    run.answer_citations = []
    assert best_evidence(run, 6)[0].chunk_id == "d3#1"
    sentences = model.calls[-1]["messages"][-1].content.split("Sentences:\n")[1]
    assert "It lies on the Vistula river." in sentences.split("\n")[0]
