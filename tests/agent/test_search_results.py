"""What a search shows the policy: the hits it has not been shown yet come first; and, after `resolve`,
the status line restates the question with the name found (the hop the answer must now cover)."""

from __future__ import annotations

from agent_doubles import ScriptedChatModel

from agent.graph import AgentDeps
from agent.runner import run_agent
from eventfold.run_options import RunOptions

OPTS = {"fold_summary": "deterministic", "suggest": False}


def _result_ids(content: str) -> list[str]:
    return [line.split("[c:", 1)[1].split("]", 1)[0] for line in content.splitlines() if line.startswith("[")]


def test_a_hit_already_shown_comes_after_the_hits_not_seen_yet(backend):
    model = ScriptedChatModel([
        ("search", {"query": "Marie Curie born"}),
        ("search", {"query": "Marie Curie born Warsaw 1867 Nobel"}),
        ("answer", {"answer": "Warsaw", "citations": ["d1#0"]}),
    ])  # fmt: skip
    run = run_agent("Where was Marie Curie born?", AgentDeps(model, backend), RunOptions(**OPTS)).run
    first, second = (_result_ids(s.results[0].content) for s in run.steps[:2])
    assert first[0] == "d1#0"  # the best match of both queries
    assert second[0] not in first and "d1#0" in second[1:]


def test_after_resolve_the_status_line_restates_the_question_with_the_name(backend):
    question = "Where was the husband of Marie Sklodowska born?"
    model = ScriptedChatModel([
        ("resolve", {"description": "the husband of Marie Sklodowska"}),
        ("search", {"query": "Where was Pierre Curie born?"}),
        ("answer", {"answer": "Paris", "citations": ["d2#0"]}),
    ], json_replies=[{"name": "Pierre Curie"}] * 3)  # fmt: skip
    run = run_agent(question, AgentDeps(model, backend), RunOptions(**OPTS)).run
    status = [c["messages"][-1].content for c in model.calls if c["tools"]]
    assert "with the name found" not in status[0]
    assert f"question: {question}" in status[1] and "with the name found: Where was Pierre Curie born?" in status[1]
    assert run.answer == "Paris"
