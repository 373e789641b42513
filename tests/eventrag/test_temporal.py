"""Temporal questions: their form and sides parsed, and the answer computed exactly from two dates."""

from __future__ import annotations

import pytest

from eventrag.dates import parse_absolute
from eventrag.query.temporal import date_near, duration_answer, order_answer, parse_temporal


def _t(raw: str):
    t = parse_absolute(raw)
    assert t is not None
    return t


@pytest.mark.parametrize(
    "question, sides, want, predicate",
    [
        ("Which happened first: the launch of the Tidemark 200 or the fire at Kvarts?",
         ("the launch of the Tidemark 200", "the fire at Kvarts"), "earliest", ""),
        ("Which band was formed first The Exies or Circus Diablo ?", ("The Exies", "Circus Diablo"), "earliest", "formed"),
        ("Who is the oldest, Sid Haig or Vic Darchinyan?", ("Sid Haig", "Vic Darchinyan"), "earliest", "born"),
        ("Who is younger, Ada Lovelace or Charles Babbage?", ("Ada Lovelace", "Charles Babbage"), "latest", "born"),
        ("Who died earlier, Werner Mensching or Karel Zich?", ("Werner Mensching", "Karel Zich"), "earliest", "died"),
        ("Guitar World or Science News, which was published first?", ("Guitar World", "Science News"), "earliest", "published"),
    ],
)  # fmt: skip
def test_order_questions_give_their_sides_and_what_is_compared(question, sides, want, predicate):
    q = parse_temporal(question)
    assert q is not None and q.kind == "order"
    assert (q.sides, q.want, q.predicate) == (sides, want, predicate)
    assert all(s.startswith("When ") and s.endswith("?") for s in q.questions)


def test_duration_questions_split_at_the_right_auxiliary_and_resolve_the_pronoun():
    q = parse_temporal("How many full years after Halvorsen Tidewater Instruments was founded did Brandt Meridian acquire it?")
    assert q is not None and q.kind == "duration" and q.full and q.unit == "years"
    assert q.sides == ("Halvorsen Tidewater Instruments was founded", "Brandt Meridian acquire Halvorsen Tidewater Instruments")
    assert q.questions == (
        "When was Halvorsen Tidewater Instruments founded?",
        "When did Brandt Meridian acquire Halvorsen Tidewater Instruments?",
    )
    q = parse_temporal("How many years passed between the fall of Rome and the coronation of Charlemagne?")
    assert q is not None and q.sides == ("the fall of Rome", "the coronation of Charlemagne") and not q.full


@pytest.mark.parametrize(
    "question",
    [
        "Who was the first president of the association which published the journal?",  # "first", no alternatives
        "Which river flows through the birthplace of the author of Dracula?",
        "Which film has the director born later, Romance On The Run or The Palace Of Angels?",  # the directors' dates
        "Which film has the director who is older, God's Gift To Women or Aldri Annet Enn Brak?",
        "Is Paris or Rome the capital of Italy?",
    ],
)
def test_questions_the_sides_dates_do_not_decide_are_left_alone(question):
    assert parse_temporal(question) is None


def test_full_years_count_anniversaries_and_coarse_dates_count_calendar_years():
    q = parse_temporal("How many full years after A was founded did B buy it?")
    assert q is not None
    assert duration_answer(q, _t("14 April 2009"), _t("15 October 2020")) == "11 years"
    assert duration_answer(q, _t("14 April 2009"), _t("13 April 2020")) == "10 years"
    assert duration_answer(q, _t("15 October 2020"), _t("14 April 2009")) == "11 years"  # order of the sides
    assert duration_answer(q, _t("14 April 2009"), _t("1 May 2010")) == "1 year"
    assert duration_answer(q, _t("2009"), _t("October 2020")) == "11 years"
    days = parse_temporal("How many days after the fire was the contract signed?")
    assert days is not None and duration_answer(days, _t("2 February 2014"), _t("17 February 2014")) == "15 days"
    assert duration_answer(days, _t("2014"), _t("17 February 2014")) is None  # a year cannot give days


def test_order_needs_disjoint_dates():
    first = parse_temporal("Which came first, the fire or the recall?")
    last = parse_temporal("Which came later, the fire or the recall?")
    assert first is not None and last is not None
    fire, recall = _t("2 February 2014"), _t("9 January 2015")
    assert order_answer(first, fire, recall) == "the fire" and order_answer(first, recall, fire) == "the recall"
    assert order_answer(last, fire, recall) == "the recall"
    assert order_answer(first, _t("2014"), _t("2 February 2014")) is None  # the same year: undecided


def test_the_date_nearest_the_sides_words_is_taken():
    s = "Robert Young (1964 – 9 September 2014) was a Scottish musician who died in Glasgow."
    assert date_near(s, ["died"]).start == "2014-09-09"
    assert date_near(s, []).start == "1964-01-01"
    assert date_near("No date here at all.", ["x"]) is None
