"""Chained reading: each sub-question is read in turn, its answer carried into the next search, the
next reader's prompt and the final reader's prompt; an unanswered hop carries nothing."""

from __future__ import annotations

from agent_doubles import ScriptedChatModel

from agent.graph import AgentDeps
from agent.prompts import PLAN_SYSTEM, PLAN_SYSTEM_CHAIN
from agent.runner import run_agent
from eventfold.run_options import RunOptions

Q = "Which river flows through the city where Marie Curie was born?"
PLAN = {"sub_questions": ["Where was Marie Curie born?", "Which river flows through that city?"]}


def _opts(**kw: object) -> RunOptions:
    return RunOptions(**{"plan": "llm", "verify_answer": True, "auto_search": True, "chain": True, **kw})


def _reader_prompts(model: ScriptedChatModel) -> list[str]:
    return [c["messages"][-1].content for c in model.calls if not c["tools"] and c["json_schema"] is None]


def test_each_hop_answer_joins_the_next_search_and_the_readers(backend):
    model = ScriptedChatModel(
        [("search", {"query": "Vistula"})], json_replies=[PLAN], text_replies=["Warsaw", "the Vistula", "Vistula"]
    )
    events: list[dict] = []
    res = run_agent(Q, AgentDeps(model, backend), _opts(), on_event=events.append)
    run = res.run
    assert [sq.answer for sq in run.plan.sub_questions] == ["Warsaw", "the Vistula"]
    assert model.calls[0]["messages"][0].content == PLAN_SYSTEM_CHAIN  # one fact per hop
    # the second hop's search carries the first hop's answer
    assert backend.queries[:3] == [Q, PLAN["sub_questions"][0], "Which river flows through that city? Warsaw"]
    first, second, final = _reader_prompts(model)
    assert "Found so far" not in first and "Question: Where was Marie Curie born?" in first
    assert "Found so far:\n- Where was Marie Curie born? Warsaw\n" in second
    assert "Question: Which river flows through that city?" in second
    assert "It lies on the Vistula river." in second  # the sentence the carried name leads to
    assert "- Where was Marie Curie born? Warsaw\n- Which river flows through that city? the Vistula" in final
    assert "Question: " + Q in final
    # the model saw the sub-answers in its status line
    status = [c for c in model.calls if c["tools"]][0]["messages"][-1].content
    assert "Where was Marie Curie born? -> Warsaw" in status
    assert run.answer == "Vistula" and run.answer_source == "reader"
    assert run.counters.chain_reads == 2 and run.counters.reader_calls == 1
    assert "- **Found:** Warsaw" in res.report and "- **Found:** the Vistula" in res.report
    assert [e["answer"] for e in events if e["type"] == "sub_answer"] == ["Warsaw", "the Vistula"]


def test_an_unanswered_hop_carries_nothing_and_chain_off_reads_no_hops(backend):
    model = ScriptedChatModel([], json_replies=[PLAN], text_replies=["Insufficient information.", "x", "Warsaw"])
    run = run_agent(Q, AgentDeps(model, backend), _opts(max_steps=3)).run
    assert run.plan.sub_questions[0].answer is None
    assert backend.queries[2] == PLAN["sub_questions"][1]  # no answer to carry
    assert "Found so far:\n- Which river flows through that city? x" in _reader_prompts(model)[-1]

    backend.queries.clear()
    model = ScriptedChatModel([], json_replies=[PLAN], text_replies=["Warsaw"])
    run = run_agent(Q, AgentDeps(model, backend), _opts(max_steps=3, chain=False)).run
    assert backend.queries == [Q, *PLAN["sub_questions"]]
    assert run.counters.chain_reads == 0 and all(sq.answer is None for sq in run.plan.sub_questions)
    assert "Found so far" not in _reader_prompts(model)[-1]
    assert model.calls[0]["messages"][0].content == PLAN_SYSTEM


def test_a_sub_question_that_restates_the_question_is_dropped():
    from agent.plan import clean_sub_questions

    q = "Which company made the pressure element fitted in the S2 units recalled in 2015?"
    again = "What company made the pressure element fitted in the S2 units recalled in 2015?"
    when = "When were the S2 units recalled?"
    assert clean_sub_questions(q, [again, when], near=True) == [when]
    assert clean_sub_questions(q, [again, when]) == [again, when]  # the default plan keeps it
    assert clean_sub_questions(q, ["Which element was fitted in the S2 units?"], near=True) == [
        "Which element was fitted in the S2 units?"
    ]
