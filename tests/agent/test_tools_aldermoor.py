"""The capability tools on the third sample corpus (examples/aldermoor), written after the tools as a check
that they carry to a domain they were not tuned on: real rules-mode index, embedded graph store, the real
embedder. Each causal question's cause ranks above the unrelated earlier event its report tells and above
the effect told beside it, also when the subject's own sentence gives the reason without a connective; a
described thing is dated by the sentence that names the thing, not by one naming its modifiers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_tools_capability import _call, _open, cause_first

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "aldermoor" / "corpus"

# subject a call names, words of its real cause, the unrelated earlier event, the effect told beside it
CAUSAL = {
    "a1": ("the closure of Tarrow Hall in February 2014", ["water damage"], ["carol concert"], ["St Cuthbert"]),
    "a2": ("Matthias Korel resign as principal conductor in November 2016", ["vote of no confidence"], ["premiere"],
           ["guest conductors"]),
    "a3": ("the cuts to the Philharmonic's 2010-11 season", ["Castellan Bank had ended"], ["Gramophone Award"],
           ["administrative jobs", "youth orchestra"]),
}  # fmt: skip


@pytest.fixture(scope="module")
def aldermoor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    stack = _open(CORPUS, tmp_path_factory.mktemp("aldermoor"))
    yield stack
    stack.close()


@pytest.mark.parametrize("qid", sorted(CAUSAL))
def test_timeline_ranks_the_cause_above_the_earlier_event_and_the_effect(aldermoor: Any, qid: str):
    subject, cause, earlier, effect = CAUSAL[qid]
    events = _call(aldermoor, "timeline", subject=subject, relation="causes").data["events"]
    cause_first(events, qid, cause, earlier, effect)


def test_a_reason_told_in_the_subjects_own_sentence_ranks_the_event_it_echoes_first(aldermoor: Any):
    """"resigned …, saying he could not lead an orchestra whose players had voted against him": no connective,
    three earlier events of the report name Korel; the one the sentence echoes comes first, not the earliest."""
    result = _call(aldermoor, "timeline", subject=CAUSAL["a2"][0], relation="causes")
    events = result.data["events"]
    assert "vote of no confidence" in events[0]["text"] and events[0]["link"] == "BEFORE", [e["text"] for e in events]


def test_the_subject_is_the_sentence_telling_the_event_the_head_noun_names(aldermoor: Any):
    """"the cancellation of the … tour": the sentence that cancels it, not the one that plans the tour and
    names more of the modifiers' words."""
    result = _call(aldermoor, "timeline", subject="the cancellation of the Philharmonic's 2018 tour of Austria",
                   relation="causes")  # fmt: skip
    subject = result.data["subject"]
    assert subject["date"] == "2018-10-02" and "cancelled the tour" in subject["text"]


def test_dates_a_described_thing_by_its_own_sentence(aldermoor: Any):
    """"the storm that damaged its roof" is the storm of 3 February, not the closure "because of the damage"
    the day after."""
    result = _call(aldermoor, "dates", first="the storm that damaged its roof", second="Tarrow Hall reopen",
                   op="difference", unit="days")  # fmt: skip
    assert result.data["first"]["date"] == "2014-02-03" and result.data["days"] == 156, result.content
