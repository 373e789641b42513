"""Causes ranked by the evidence linking them to the subject (`agent.causal`), and the timeline tool over
an in-memory backend: never by time order or position in a document. (The real index: test_tools_capability.)"""

from __future__ import annotations

from agent_doubles import MemoryBackend, ScriptedChatModel

from agent.causal import GraphLink, rank_causes
from agent.state import RunState
from agent.tools import build_registry
from agent.tools.context import ToolContext
from eventfold.run_options import RunOptions
from eventrag.schema import Chunk

DOCS = {
    "storm": (
        "Storm at Kell Bridge",
        "On 3 March 2020, the Kell footbridge was repainted by volunteers from the rowing club.\n\n"
        "On 20 March 2020, a storm tore two piers from the Kell footbridge. "
        "Because of the damage, the county closed the Kell footbridge on 21 March 2020. "
        "The closure of the footbridge forced the school to cancel its river fair.",
    ),
    "ferry": ("Ferry service", "On 1 April 2020, the county started a ferry service while the bridge was shut."),
}
SUBJECT = "the closure of the Kell footbridge in March 2020"


def _chunks() -> list[Chunk]:
    return MemoryBackend(DOCS).chunks


def test_the_cause_ranks_above_the_earlier_event_of_the_same_document_and_the_effect():
    ranking = rank_causes(SUBJECT, _chunks())
    assert ranking.subject is not None and ranking.subject.date == "2020-03-21"
    texts = [c.text for c in ranking.causes]
    assert texts[0] == "the damage" and ranking.causes[0].link == "connective"
    assert ranking.causes[0].date == ""  # no sentence dates "the damage" by its words: no guess
    assert ranking.causes[0].event_chunk == "storm#1"
    assert not any("repainted" in t for t in texts[:1])
    assert not any("river fair" in t for t in texts)  # the subject's effect is never a cause
    assert any("river fair" in e.text for e in ranking.effects)


def test_an_earlier_event_in_the_same_document_is_not_preferred_to_the_linked_cause():
    """No episode rule: the repainting is earlier and in the same document, but nothing links it."""
    ranking = rank_causes(SUBJECT, _chunks())
    repaint = [c for c in ranking.causes if "repainted" in c.text]
    assert all(c.score < ranking.causes[0].score for c in repaint)
    assert all(c.link == "BEFORE" for c in repaint)


def test_a_chain_of_causes_is_followed_back_with_a_discount():
    docs = {
        "a": ("Plant", "The pump failure led to a shortage of water in Dorle. "
                       "The pump failed because the spare parts had been sold off in 2019."),
    }  # fmt: skip
    causes = rank_causes("the shortage of water in Dorle", MemoryBackend(docs).chunks).causes
    assert [c.text for c in causes[:2]] == ["The pump failure", "the spare parts had been sold off in 2019"]
    assert causes[0].depth == 1 and causes[1].depth == 2 and causes[1].score < causes[0].score


def test_a_cause_dated_after_the_subject_loses_its_score():
    docs = {"a": ("Mill", "On 5 May 2018 the mill closed because of the flood of June 2019.\n\n"
                          "On 4 May 2018 the mill closed for a day because of a power cut.")}  # fmt: skip
    causes = rank_causes("the mill closed on 5 May 2018", MemoryBackend(docs).chunks).causes
    flood = next(c for c in causes if "flood" in c.text)
    assert flood.date == "2019-06-01" and flood.score < 0.5


def test_a_causes_edge_of_the_event_graph_links_a_cause_no_sentence_states():
    link = GraphLink(cause="A pipe burst under Mill Street on 2 June 2021.",
                     effect="The council closed Mill Street on 3 June 2021.", chunk_id="g#0")  # fmt: skip
    chunks = [Chunk(chunk_id="g#0", doc_id="g", title="Mill Street", text=f"{link.cause} Traffic moved. {link.effect}")]
    causes = rank_causes("the closure of Mill Street in June 2021", chunks, [link]).causes
    assert causes[0].link == "CAUSES" and "pipe burst" in causes[0].text and causes[0].date == "2021-06-02"


def test_the_timeline_tool_shows_cited_lines_and_structured_events():
    backend = MemoryBackend(DOCS)
    ctx = ToolContext(run=RunState(question="q"), backend=backend, model=ScriptedChatModel([]), options=RunOptions())
    result = build_registry(ctx).call("timeline", {"subject": SUBJECT, "relation": "causes"})
    lines = result.content.splitlines()
    assert lines[1].startswith("subject (the event itself): [c:storm#1] 2020-03-21")
    assert lines[2] == "what led to it, best evidence first:"
    assert lines[3].startswith('1. [c:storm#1] undated the damage (linked by "Because of the damage, the county')
    assert result.data["events"][0] | {"score": 0} == {
        "text": "the damage", "date": None, "chunk_id": "storm#1", "score": 0, "link": "connective",
        "support": "Because of the damage, the county closed the Kell footbridge on 21 March 2020.",
        "support_chunk": "storm#1", "depth": 1,
    }  # fmt: skip
    assert [ev.chunk_id for ev in result.evidence] == ["storm#1", *([] if len(result.evidence) == 1 else ["storm#0"])]
    bad = build_registry(ctx).call("timeline", {"subject": SUBJECT, "relation": "why"})
    assert bad.error and "causes" in bad.content  # the valid relations are named


def test_the_timeline_tool_says_when_nothing_matches():
    ctx = ToolContext(run=RunState(question="q"), backend=MemoryBackend(DOCS), model=ScriptedChatModel([]),
                      options=RunOptions())  # fmt: skip
    result = build_registry(ctx).call("timeline", {"subject": "the moon landing", "relation": "causes"})
    assert not result.error and result.data == {"subject": None, "events": []} and "No event matching" in result.content
