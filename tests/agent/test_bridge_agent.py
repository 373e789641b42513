"""Bridge resolution in the agent: a described thing is searched and read first, its name fills the
question the final reader answers; a question without a description takes the ordinary plan."""

from __future__ import annotations

from agent_doubles import ScriptedChatModel

from agent.graph import AgentDeps
from agent.prompts import BRIDGE_SYSTEM, PLAN_SYSTEM
from agent.reader import best_evidence
from agent.runner import run_agent
from eventfold.run_options import RESEARCH_SCAFFOLD, RunOptions

Q = "Which river flows through the city where Marie Curie was born?"
TEMPLATE = {"first": "Where was Marie Curie born?", "then": "Which river flows through #1?"}


def _opts(**kw: object) -> RunOptions:
    return RunOptions(**{**RESEARCH_SCAFFOLD, **kw})


def _text_prompts(model: ScriptedChatModel) -> list[str]:
    return [c["messages"][-1].content for c in model.calls if not c["tools"] and c["json_schema"] is None]


def test_the_described_city_is_found_first_and_fills_the_final_question(backend):
    # the filled question "Which river flows through Warsaw?" names everything: no second model split
    model = ScriptedChatModel([], json_replies=[TEMPLATE], text_replies=["Warsaw.", "the Vistula"])
    events: list[dict] = []
    res = run_agent(Q, AgentDeps(model, backend), _opts(), on_event=events.append)
    run = res.run
    assert model.calls[0]["messages"][0].content == BRIDGE_SYSTEM
    hop_q = "What is the city where Marie Curie was born?"
    assert backend.queries == [Q, hop_q, "Which river flows through Warsaw?"]
    assert backend.top_ks == [5, 5, 8]  # the filled question's hits lead the final reader: it looks deeper
    assert [(s.text, s.answer) for s in run.plan.sub_questions] == [
        (hop_q, "Warsaw."),
        ("Which river flows through Warsaw?", None),
    ]
    assert run.plan.resolved == "Which river flows through Warsaw?"
    hop, final = _text_prompts(model)
    assert f"Question: {hop_q}" in hop
    assert "Question: Which river flows through Warsaw?" in final and "Question: " + Q not in final
    assert "Found so far" not in final  # the filled question names what the hop found
    # the filled question's hits lead the final reader's passages
    final_sq = run.plan.sub_questions[-1]
    run.answer_citations = []  # (the reader's citations lead once it has answered)
    assert [ev.chunk_id for ev in best_evidence(run, len(final_sq.evidence))] == final_sq.evidence
    assert run.answer == "the Vistula" and run.answer_source == "reader"
    assert not any(c["tools"] for c in model.calls)  # resolved: no agent turn, no plan call
    assert run.stop_reason.startswith("the described names are found")
    assert run.counters.chain_reads == 1 and run.counters.reader_calls == 1
    assert [e["answer"] for e in events if e["type"] == "sub_answer"] == ["Warsaw."]


def test_an_unanswered_hop_stays_in_the_plan_and_the_ordinary_plan_follows(backend):
    plan = {"sub_questions": ["Where was Marie Curie born?", "Which river flows through that city?"]}
    model = ScriptedChatModel(
        [("search", {"query": "Vistula"})],
        json_replies=[TEMPLATE, plan],
        text_replies=["Insufficient information.", "Vistula"],
    )
    run = run_agent(Q, AgentDeps(model, backend), _opts()).run
    assert model.calls[2]["messages"][0].content == PLAN_SYSTEM  # after the hop's read: the ordinary plan
    assert [s.text for s in run.plan.sub_questions] == [
        "What is the city where Marie Curie was born?",
        *plan["sub_questions"],
    ]
    assert [s.id for s in run.plan.sub_questions] == [1, 2, 3]
    assert run.plan.resolved is None and run.plan.sub_questions[0].answer is None
    assert run.plan.sub_questions[0].steps == [2] and run.plan.sub_questions[0].evidence  # its search kept
    assert backend.queries[:4] == [Q, "What is the city where Marie Curie was born?", *plan["sub_questions"]]
    assert backend.queries.count(Q) == 1  # the question is searched once
    assert run.answer == "Vistula"


def test_a_question_without_a_description_makes_no_bridge_call(backend):
    plan = {"sub_questions": ["Where was Marie Curie born?", "When was Pierre Curie born?"]}
    model = ScriptedChatModel([("search", {"query": "Curie"})], json_replies=[plan], text_replies=["Warsaw"])
    run = run_agent("Where was Marie Curie born?", AgentDeps(model, backend), _opts()).run
    assert model.calls[0]["messages"][0].content == PLAN_SYSTEM
    assert run.plan.resolved is None


def test_bridge_is_off_outside_the_research_scaffold_and_with_chained_reading(backend):
    assert RunOptions().bridge is False
    plan = {"sub_questions": ["Where was Marie Curie born?", "Which river flows through that city?"]}
    model = ScriptedChatModel([], json_replies=[plan], text_replies=["Warsaw", "x", "Vistula"])
    run_agent(Q, AgentDeps(model, backend), _opts(chain=True, max_steps=3))
    assert all(c["messages"][0].content != BRIDGE_SYSTEM for c in model.calls)
