"""Origin questions in the agent: the target is dated from the evidence, the dated events before it are
shown in time order, the model picks one by number, the reader words the answer from that sentence."""

from __future__ import annotations

from agent_doubles import MemoryBackend, ScriptedChatModel

from agent.causal import clause_of, episode_start, find_target, timeline
from agent.graph import AgentDeps
from agent.prompts import ORIGIN_SYSTEM, PLAN_SYSTEM
from agent.runner import run_agent
from agent.state import Evidence
from eventfold.run_options import RESEARCH_SCAFFOLD, RunOptions
from eventrag.query.causal import parse_causal

DOCS = {
    "fire": (
        "Fire at Kvarts",
        "In the early hours of 2 February 2014, a fire broke out in the clean room of Kvarts' plant. "
        "Halvorsen's 2011 warning had come true: HTI had no other source of pressure elements.\n\n"
        "On 17 February 2014 HTI signed an emergency supply contract for the LS-7 pressure element.",
    ),
    "recall": (
        "The SeaGuard recall",
        "On 9 January 2015, the board ordered HTI to recall every SeaGuard sensor fitted with the LS-7 element. "
        "The order followed the complaint filed by Fjordlaks on 28 November 2014. "
        "HTI had to refund each recalled unit by 30 April 2015.",
    ),
    "deal": ("Supply deal", "On 14 March 2011, HTI signed a five-year supply agreement with Kvarts."),
}
Q = "What supplier event led to the 2015 SeaGuard recall?"


def _opts(**kw: object) -> RunOptions:
    return RunOptions(**{**RESEARCH_SCAFFOLD, **kw})


def _evidence() -> list[Evidence]:
    backend = MemoryBackend(DOCS)
    return [Evidence(chunk_id=c.chunk_id, doc_id=c.doc_id, title=c.title, text=c.text) for c in backend.chunks]


def test_the_timeline_holds_the_dated_events_before_the_target_in_time_order():
    cq = parse_causal(Q)
    found = find_target(cq, _evidence())
    assert found is not None
    target, after = found
    assert target.start == "2015-01-09" and "recall every SeaGuard" in target.text
    assert after.startswith("The order followed the complaint")
    events = timeline(target, _evidence())
    assert [e.start for e in events] == ["2011-03-14", "2014-02-02", "2014-02-17", "2014-11-28"]
    # not the target itself, nothing after it, and not a sentence dated only by an earlier thing it names
    assert not any("refund" in e.text or "warning" in e.text for e in events)


def test_a_target_whose_year_the_evidence_contradicts_gives_no_timeline():
    assert find_target(parse_causal("What supplier event led to the 2016 SeaGuard recall?"), _evidence()) is None


def test_the_reader_answers_over_the_timeline_and_the_event_it_names_is_cited():
    reply = "The supplier event that led to the 2015 SeaGuard recall was a fire in the clean room of Kvarts' plant."
    model = ScriptedChatModel([], text_replies=[reply])
    backend = MemoryBackend(DOCS)
    res = run_agent(Q, AgentDeps(model, backend), _opts())
    run = res.run
    call = model.calls[0]
    assert call["messages"][0].content == ORIGIN_SYSTEM and call["json_schema"] is None
    user = call["messages"][1].content
    assert user.index("(14 March 2011)") < user.index("(2 February 2014)") < user.index("(9 January 2015)")
    assert "refund" not in user and "warning" not in user  # nothing after the target, no year-as-adjective line
    assert run.answer == "a fire in the clean room of Kvarts' plant"  # the restated question cut off
    assert run.answer_source == "timeline" and run.status == "answered"
    assert run.answer_citations == ["fire#0", "recall#0"]  # the event it names, and the target
    assert run.plan.origin.origin.start == "2014-02-02" and "2 February 2014" in run.stop_reason
    assert [s.text for s in run.plan.sub_questions] == [
        "When was the 2015 SeaGuard recall?",
        "What led to the 2015 SeaGuard recall?",
    ]
    assert backend.queries[:2] == [Q, "the 2015 SeaGuard recall"]
    assert len(model.calls) == 1  # no plan call, no agent turn, no second reading
    assert "## Findings" in run.report and "a fire in the clean room" in run.report
    timeline_lines = run.report.split("## Timeline")[1].split("## Findings")[0].strip().splitlines()[2:]
    assert len(timeline_lines) == 5 and "the answer" in timeline_lines[1] and "asked about" in timeline_lines[4]


def test_an_episode_is_answered_from_its_start():
    """The reader names the emergency contract (17 February 2014); the same report opens with the fire
    of 2 February 2014 that made it necessary: the fire is the answer, cited and marked."""
    model = ScriptedChatModel([], text_replies=["HTI signed an emergency supply contract for the LS-7 pressure element"])
    run = run_agent(Q, AgentDeps(model, MemoryBackend(DOCS)), _opts()).run
    assert run.answer == "a fire broke out in the clean room of Kvarts' plant"
    assert run.plan.origin.origin.start == "2014-02-02" and run.answer_citations == ["fire#0", "recall#0"]


def test_episode_start_keeps_to_one_document_a_month_and_dated_days():
    cq = parse_causal(Q)
    target = find_target(cq, _evidence())[0]
    events = timeline(target, _evidence())  # 2011-03-14 deal, 2014-02-02 fire, 2014-02-17 contract, 2014-11-28 complaint
    assert episode_start(events, 2) == 1  # the contract -> the fire, same document, 15 days before
    assert episode_start(events, 1) == 1 and episode_start(events, 0) == 0  # already the start
    assert episode_start(events, 3) == 3  # the complaint: another document
    far = [events[1].model_copy(update={"start": "2013-12-01", "end": "2013-12-01"}), events[2]]
    assert episode_start(far, 1) == 1  # 78 days before: another episode
    year = [events[1].model_copy(update={"start": "2014-01-01", "end": "2014-12-31"}), events[2]]
    assert episode_start(year, 1) == 1  # "in 2014" dates no day of the episode
    assert clause_of(events[1]) == "a fire broke out in the clean room of Kvarts' plant"
    assert clause_of(events[0]) == "On 14 March 2011, HTI signed a five-year supply agreement with Kvarts".split(", ", 1)[1]


def test_an_answer_that_names_no_event_of_the_timeline_is_not_taken():
    plan = {"sub_questions": ["What did Kvarts make?", "What did HTI recall?"]}
    model = ScriptedChatModel([], json_replies=[plan], text_replies=["Nordhav Energy", "the fire"])
    run = run_agent(Q, AgentDeps(model, MemoryBackend(DOCS)), _opts(max_steps=4)).run
    assert run.plan.origin is None and run.answer_source != "timeline"


def test_no_answer_from_the_timeline_leaves_the_searches_and_the_ordinary_plan_follows():
    plan = {"sub_questions": ["What did Kvarts make?", "What did HTI recall?"]}
    model = ScriptedChatModel(
        [("search", {"query": "Kvarts"})], json_replies=[plan], text_replies=["Insufficient information.", "the fire"]
    )
    backend = MemoryBackend(DOCS)
    run = run_agent(Q, AgentDeps(model, backend), _opts()).run
    assert model.calls[1]["messages"][0].content == PLAN_SYSTEM
    assert [s.id for s in run.plan.sub_questions] == [1, 2, 3, 4]
    assert run.plan.sub_questions[0].evidence and run.plan.origin is None
    assert run.plan.sub_questions[0].answer == "9 January 2015"  # the target's date, found on the way
    assert backend.queries.count(Q) == 1
    assert run.answer == "the fire" and run.answer_source == "reader"


def test_origin_questions_take_the_ordinary_path_outside_the_scaffold():
    assert RunOptions().causal is False
    plan = {"sub_questions": ["What did Kvarts make?", "What did HTI recall?"]}
    model = ScriptedChatModel([], json_replies=[plan], text_replies=["x"])
    run_agent(Q, AgentDeps(model, MemoryBackend(DOCS)), _opts(causal=False, max_steps=3))
    assert all(c["messages"][0].content != ORIGIN_SYSTEM for c in model.calls)
