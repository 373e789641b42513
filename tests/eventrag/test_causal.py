"""The form of origin questions ("what event led to X"): target, qualifier, chain; and dates in codes."""

from __future__ import annotations

import pytest

from eventrag.dates import find_dates
from eventrag.query.causal import parse_causal


@pytest.mark.parametrize(
    ("question", "target", "kind", "chain"),
    [
        ("What supplier event led to the 2015 SeaGuard recall?", "the 2015 SeaGuard recall", "supplier event", False),
        (
            "What event at a supplier set off the chain of events that led to the January 2015 SeaGuard S2 recall?",
            "the January 2015 SeaGuard S2 recall",
            "event at a supplier",
            True,
        ),
        ("What was the event that triggered the First World War?", "the First World War", "event", False),
        ("Which incident sparked the 2011 protests in Cairo?", "the 2011 protests in Cairo", "incident", False),
        ("What happened at the plant that led to the shutdown of the reactor?", "the shutdown of the reactor", "event at the plant", False),
        ("What kind of event caused the series of events leading to the bridge collapse?", "the bridge collapse", "event", True),
        ("What customer complaint led to the NMMB investigation?", "the NMMB investigation", "customer complaint", False),
        ("What led to the closure of the mine in 1987?", "the closure of the mine in 1987", "event", False),
        ("Why did the council close the ferry in March 1936?", "the council close the ferry in March 1936", "event", False),
        ("Why was the stadium demolished?", "the stadium demolished", "event", False),
    ],
)
def test_origin_questions_give_their_target_and_the_kind_of_event_asked(question, target, kind, chain):
    cq = parse_causal(question)
    assert cq is not None
    assert (cq.target, cq.kind, cq.chain) == (target, kind, chain)


@pytest.mark.parametrize(
    "question",
    [
        "Which company led to the founding of Apple?",  # asks for a company, not an event
        "Who caused the accident?",
        "What is the name of the river that caused the flood?",
        "What year did the fire lead to the recall?",  # asks for a year
        "When did the recall happen?",
        "What caused it?",  # no target to date
        "What caused the drifting readings at Fjordlaks?",  # may ask why (a mechanism), not which event
        "Which port authority was the first customer of the TG-1?",
        "What led to it?",  # no target
        "Why did it?",
        "What causes the northern lights?",  # a mechanism
        "Why is the sea salty?",  # a state, not a past event
    ],
)
def test_other_questions_are_not_origin_questions(question):
    assert parse_causal(question) is None


def test_the_year_the_target_names():
    assert parse_causal("What supplier event led to the 2015 SeaGuard recall?").target_year == "2015"
    assert parse_causal("Which event caused the bridge collapse?").target_year is None


def test_a_year_inside_a_code_is_not_a_date():
    assert find_dates("breaking the conditions of certificate NMMB-2013-114, and") == []
    assert [t.raw for _, _, t in find_dates("in 2013-14 and from 1998-2001")] == ["2013-14", "1998-2001"]
    assert [t.raw for _, _, t in find_dates("rules under ISO/2009 since 1950.")] == ["1950"]
