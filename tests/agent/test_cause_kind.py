"""The kind of cause a question names ("what supplier event led to X"): the timeline lists causes told as
that kind first, the furthest back in the chain first, on the three sample corpora (real rules-mode index,
embedded graph store, real embedder); a kind of generic words changes nothing; the workflow passes the
question's kind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_doubles import MemoryBackend, ScriptedChatModel
from test_tools_capability import _call, _open
from test_workflow import DOCS, OPTS, _calls

from agent.causal import Ranked
from agent.cause_kind import by_kind, kind_stems
from agent.graph import AgentDeps
from agent.runner import run_agent

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# corpus, the event a call names, the kind the question names, words of the cause asked for, of the nearer
# cause of the same kind it led to (the one ranked first without the kind)
KINDS = {
    "demo": ("corpus", "the 2015 SeaGuard recall", "supplier event", "fire broke out", "Lindqvist"),
    "a5": ("aldermoor/corpus", "the 2010-11 season cuts at the Aldermoor Philharmonic", "banking event",
           "taken over by Castellan Bank", "had ended the Kingsgate sponsorship"),
    "r3": ("riverside/corpus", "the July 2013 boil-water notice in Fennick", "supplier event",
           "Ardent Filtration", "membrane failure"),
}  # fmt: skip


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    opened = {c: _open(EXAMPLES / c, tmp_path_factory.mktemp(c.split("/")[0])) for c, *_ in KINDS.values()}
    yield opened
    for s in opened.values():
        s.close()


@pytest.mark.parametrize("qid", sorted(KINDS))
def test_the_cause_of_the_kind_asked_for_furthest_back_is_listed_first(stacks: dict[str, Any], qid: str):
    corpus, subject, kind, cause, nearer = KINDS[qid]
    plain = _call(stacks[corpus], "timeline", subject=subject, relation="causes").data["events"]
    result = _call(stacks[corpus], "timeline", subject=subject, relation="causes", kind=kind)
    events = result.data["events"]
    assert cause in events[0]["text"], (qid, [e["text"] for e in events])
    assert any(nearer in e["text"] for e in events[1:]), (qid, [e["text"] for e in events])
    assert cause not in plain[0]["text"].split(" — ")[0]  # without the kind the nearest link leads
    matched = result.data["of_kind"]
    assert f'told as "{kind}"' in result.content and matched >= 1
    listed = [e["text"][:60] for e in events[:matched]]
    assert all(t in result.content for t in listed[:5])  # the kind's causes are listed, the others only counted
    numbered = [line.split("] ", 1)[-1] for line in result.content.splitlines() if line[:1].isdigit()]
    assert not any(line.split(" ", 1)[-1].startswith(e["text"][:60]) for e in events[matched:] for line in numbered
                   if e["text"][:60] not in listed)  # fmt: skip
    assert f"{len(events) - matched} other cause(s)" in result.content or len(events) == matched
    assert sorted(e["text"] for e in events) == sorted(e["text"] for e in plain)  # reordered, none added or lost


def test_a_kind_of_generic_event_words_changes_nothing(stacks: dict[str, Any]):
    corpus, subject, *_ = KINDS["demo"]
    plain = _call(stacks[corpus], "timeline", subject=subject, relation="causes")
    generic = _call(stacks[corpus], "timeline", subject=subject, relation="causes", kind="event")
    assert generic.data["events"] == plain.data["events"] and generic.data["of_kind"] == 0
    assert "best evidence first" in generic.content
    assert kind_stems("event at a supplier") == kind_stems("supplier") != frozenset()


def test_by_kind_puts_the_deepest_cause_of_the_kind_first_and_keeps_the_rest_in_order():
    causes = [Ranked("the bank ended the sponsorship", 0.9, "connective", "", "c1", depth=1),
              Ranked("the storm", 0.8, "connective", "", "c2", depth=1),
              Ranked("the bank took over the society", 0.1, "BEFORE", "", "c3", depth=2),
              Ranked("the concert", 0.05, "BEFORE", "", "c4", depth=3)]  # fmt: skip
    ordered, matched = by_kind(causes, "banking event", lambda r: "")
    assert [r.chunk_id for r in ordered] == ["c3", "c1", "c2", "c4"] and matched == 2
    reports = {"c4": "The banking crisis of 1990."}  # of the kind by the report that tells it
    ordered, matched = by_kind(causes, "banking", lambda r: reports.get(r.chunk_id, ""))
    assert [r.chunk_id for r in ordered] == ["c4", "c3", "c1", "c2"] and matched == 3


def test_the_workflow_passes_the_kind_its_question_names():
    model = ScriptedChatModel([], text_replies=["A storm flooded the Lindqvist plant"])
    run = run_agent("What supplier event led to the recall of the S2 units?", AgentDeps(model, MemoryBackend(DOCS)),
                    OPTS).run  # fmt: skip
    calls = _calls(run)
    assert calls[1] == ("timeline", {"subject": "the recall of the S2 units", "relation": "causes",
                                     "kind": "supplier event"})  # fmt: skip
