"""The graph driven by a scripted chat model: search -> fold -> unfold -> answer, resume, streaming,
token accounting with a real tokenizer."""

from __future__ import annotations

import json

from agent_doubles import ScriptedChatModel, count_text, prompt_text

from agent.graph import AgentDeps, build_graph
from agent.runner import resume_run, run_agent
from eventfold.run_options import RunOptions

Q = "Where was Marie Curie born?"


def test_search_fold_unfold_answer(backend, tmp_path):
    model = ScriptedChatModel(
        [
            ("search", {"query": "Marie Curie born"}),
            ("search", {"query": "Warsaw capital"}),
            ("fold", {"start_step": 1, "end_step": 2}),
            ("unfold", {"fold_id": "F1"}),
            ("answer", {"answer": "Warsaw", "citations": ["d1#0", "c:made-up"]}),
        ],
        json_replies=[
            {
                "title": "Curie birthplace",
                "findings": [{"fact": "Marie Curie was born in Warsaw", "chunk_ids": ["d1#0"]}],
                "open_questions": [],
            }
        ],
    )
    events: list[dict] = []
    opts = RunOptions()
    res = run_agent(Q, AgentDeps(model, backend), opts, runs_dir=tmp_path, on_event=events.append)
    run = res.run
    assert run.status == "answered" and run.answer == "Warsaw"
    assert [s.assistant.tool_calls[0].name for s in run.steps] == [
        "search",
        "search",
        "fold",
        "unfold",
        "answer",
    ]
    assert run.counters.folds == 1 and run.counters.unfolds == 1 and run.counters.guard_folds == 0
    assert run.memory.folds["F1"].status == "unfolded" and run.memory.folds["F1"].summary_source == "llm"
    # the model saw the block while folded, and the originals again after the unfold
    after_fold = model.calls[4]["messages"]  # calls: 2 searches, fold summary (json), fold turn, unfold turn
    assert any(m.content.startswith("## [F1] steps 1\u20132 \u00b7 Curie birthplace") for m in after_fold)
    assert not any("[step 1]" in m.content for m in after_fold)
    after_unfold = model.calls[5]["messages"]
    assert any(m.content.startswith("[step 1]") for m in after_unfold)
    # report: the citation resolves to chunk, doc and title; the invented id is dropped
    assert "**Answer:** Warsaw [c:d1#0]" in res.report
    assert "- `[c:d1#0]` *Marie Curie* \u00b7 doc `d1`" in res.report and "made-up" not in res.report
    traj = json.loads(res.trajectory_path.read_text())
    fold = traj["state"]["memory"]["folds"]["F1"]
    assert (fold["start"], fold["end"]) == (1, 2) and "originals" not in fold  # the trajectory holds them
    assert res.report_path.read_text() == res.report
    kinds = [e["type"] for e in events]
    assert {"tool_call", "tool_result", "fold", "unfold", "context", "report"} <= set(kinds)


def test_token_accounting_matches_the_tokenizer(backend):
    model = ScriptedChatModel([("search", {"query": "Curie"}), ("answer", {"answer": "Warsaw"})])
    res = run_agent(Q, AgentDeps(model, backend), RunOptions())
    turns = [c for c in model.calls if c["tools"]]
    expected = [count_text(prompt_text(c["messages"], c["tools"])) for c in turns]
    assert res.run.counters.context_samples == expected
    assert res.run.counters.peak_context_tokens >= max(expected)
    assert res.run.counters.prompt_tokens == sum(expected)


def test_budget_guard_folds_oldest_span_only_on_overflow(backend):
    script = [
        ("search", {"query": q}) for q in ["Marie Curie", "Pierre Curie", "Warsaw Poland", "Nobel Prize"]
    ]
    model = ScriptedChatModel([*script, ("answer", {"answer": "Warsaw"})])
    roomy = run_agent(Q, AgentDeps(model, backend), RunOptions(fold_summary="deterministic"))
    assert roomy.run.counters.guard_folds == 0
    peak = roomy.run.counters.peak_context_tokens
    model = ScriptedChatModel([*script, ("answer", {"answer": "Warsaw"})])
    tight = run_agent(
        Q,
        AgentDeps(model, backend),
        RunOptions(fold_summary="deterministic", context_budget=max(256, peak - 150)),
    )
    c = tight.run.counters
    assert c.guard_folds >= 1 and c.peak_context_tokens < peak
    first = tight.run.memory.folds["F1"]
    assert first.origin == "guard" and first.start == 1
    # no-fold is plain ReAct: no fold tools offered, no guard
    model = ScriptedChatModel([*script, ("answer", {"answer": "Warsaw"})])
    react = run_agent(
        Q, AgentDeps(model, backend), RunOptions(fold=False, context_budget=max(256, peak - 150))
    )
    assert react.run.counters.guard_folds == 0
    assert {t.name for t in model.calls[0]["tools"]} == {"search", "read", "answer"}


def test_step_cap_ends_with_the_reader_over_the_evidence(backend):
    model = ScriptedChatModel([("search", {"query": f"curie {i}"}) for i in range(10)], text_replies=["Warsaw"])
    res = run_agent(Q, AgentDeps(model, backend), RunOptions(max_steps=3))
    run = res.run
    assert run.status == "forced" and run.stop_reason == "step cap of 3 reached"
    assert run.answer == "Warsaw" and run.answer_source == "reader" and run.answer_citations == ["d1#0"]
    assert len([s for s in run.steps if s.kind == "action"]) == 3
    last = model.calls[-1]
    assert last["max_tokens"] == 64 and not last["tools"] and "Sentences:" in last["messages"][-1].content


def test_repeated_query_is_refused_then_the_reader_answers(backend):
    model = ScriptedChatModel([("search", {"query": "Curie!"})] * 6, text_replies=["Warsaw"])
    res = run_agent(Q, AgentDeps(model, backend), RunOptions(max_repeat_queries=1, max_refusals=3))
    c = res.run.counters
    assert c.repeated_queries == 4 and res.run.status == "forced" and res.run.answer == "Warsaw"
    assert "you already searched" in res.run.steps[2].results[0].content
    assert len(backend.queries) == 2


def test_run_resumes_from_its_checkpoint(backend, tmp_path):
    # no plan from the model: the question is the plan; its search completes it and the reader answers
    model = ScriptedChatModel([("search", {"query": "Curie"})], text_replies=["Warsaw"])
    deps, opts = AgentDeps(model, backend), RunOptions(plan="rules")
    graph = build_graph(deps, opts, checkpointer=None)
    assert set(graph.get_graph().nodes) >= {"plan", "agent", "tools", "guard", "finish", "report"}
    from agent.runner import open_checkpointer
    from agent.state import RunState

    run = RunState(run_id="r1", question=Q)
    with open_checkpointer(tmp_path) as saver:
        g = build_graph(deps, opts, checkpointer=saver)
        cfg = {"configurable": {"thread_id": "r1"}}
        g.invoke(run.to_graph(), cfg, interrupt_after=["tools"])  # stop after the first model step
        assert len(g.get_state(cfg).values["steps"]) == 2  # the plan's opening search, the model's search
    res = resume_run("r1", deps, opts, tmp_path)
    assert res.run.answer == "Warsaw" and res.run.answer_source == "reader" and len(res.run.steps) == 3
    assert (tmp_path / "r1" / "report.md").is_file()


def test_langgraph_json_points_to_the_graph_factory():
    import importlib
    import inspect
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = json.loads((root / "langgraph.json").read_text())
    path, _, attr = spec["graphs"]["eventfold_agent"].partition(":")
    module = importlib.import_module(path.removeprefix("./").removesuffix(".py").replace("/", "."))
    factory = getattr(module, attr)
    assert list(inspect.signature(factory).parameters) == ["config"]


def test_guard_spares_a_fold_the_model_just_unfolded(backend):
    def script():
        searches = [("search", {"query": q}) for q in ["Marie Curie", "Pierre Curie", "Warsaw Poland"]]
        return ScriptedChatModel(
            [
                *searches,
                ("fold", {"start_step": 1, "end_step": 3}),
                ("unfold", {"fold_id": "F1"}),
                ("answer", {"answer": "Warsaw"}),
            ]
        )

    dry = run_agent(
        Q, AgentDeps(script(), backend), RunOptions(fold_summary="deterministic", context_budget=100_000)
    )
    s = dry.run.counters.context_samples
    budget = max(s[:5]) + 5  # everything fits until the unfold at step 5 brings steps 1-3 back
    assert s[5] - 30 > budget
    model = script()
    res = run_agent(
        Q, AgentDeps(model, backend), RunOptions(fold_summary="deterministic", context_budget=budget)
    )
    folds = res.run.memory.folds
    assert folds["F1"].status == "unfolded" and folds["F1"].unfolded_at == 5
    assert res.run.counters.guard_folds >= 1 and all(
        f.start > 3 for f in folds.values() if f.origin == "guard"
    )
    turn_after_unfold = [c for c in model.calls if c["tools"]][5]["messages"]
    assert any(m.content.startswith("[step 1]") for m in turn_after_unfold)  # the model saw the originals


def test_long_report_keeps_only_citations_of_seen_chunks(backend):
    model = ScriptedChatModel(
        [
            ("search", {"query": "Marie Curie born Warsaw"}),
            ("answer", {"answer": "Warsaw", "citations": ["d1#0"]}),
        ],
        text_replies=["Marie Curie was born in Warsaw [c:d1#0], the capital of Poland [c:d3#0] [c:nope]."],
    )
    res = run_agent(Q, AgentDeps(model, backend), RunOptions(report_mode="long"))
    assert "Marie Curie was born in Warsaw [c:d1#0], the capital of Poland [c:d3#0] ." in res.report
    assert "nope" not in res.report  # a citation of a chunk the run never saw is dropped


def test_long_report_leaves_out_sentences_its_sources_do_not_support(backend):
    written = ("## Birth\nMarie Curie was born in Warsaw [c:d1#0]. The Curie Pension Scheme covers all "
               "self-employed workers [c:d1#0]. Marie Curie was born in Warsaw in 1901 [c:d1#0].\n"
               "## Pensions\nIndonesia runs a mandatory pension scheme [c:d3#0].")  # fmt: skip
    model = ScriptedChatModel(
        [("search", {"query": "Marie Curie born Warsaw"}), ("answer", {"answer": "Warsaw", "citations": ["d1#0"]})],
        text_replies=[written],
    )
    report = run_agent(Q, AgentDeps(model, backend), RunOptions(report_mode="long")).report
    assert "## Birth\nMarie Curie was born in Warsaw [c:d1#0]." in report
    assert "Pension" not in report and "Indonesia" not in report  # the invented sentences and their heading
    assert "1901" not in report  # a number its source does not state
    assert "_3 sentence(s) of the written summary left out" in report
    nothing = ScriptedChatModel(
        [("search", {"query": "Marie Curie"}), ("answer", {"answer": "Insufficient information."})],
        text_replies=["Insufficient information."] * 4,
    )
    run = run_agent(Q, AgentDeps(nothing, backend), RunOptions(report_mode="long", max_steps=3)).run
    assert run.evidence and run.answer.startswith("Insufficient")
    assert not any("Short answer found" in c["messages"][-1].content for c in nothing.calls)  # nothing to write up
