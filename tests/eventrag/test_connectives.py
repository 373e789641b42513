"""Causal connectives: which span of a sentence is told as the cause of which, in which direction."""

from __future__ import annotations

from eventrag.connectives import causal_links, is_causal


def _pairs(sentence: str, previous: str | None = None) -> list[tuple[str, str, str]]:
    return [(link.connective, link.cause, link.effect) for link in causal_links(sentence, previous)]


def test_forward_connectives_put_the_cause_before_them():
    assert _pairs("The storm led to the closure of the bridge.") == [
        ("led to", "The storm", "the closure of the bridge")
    ]
    assert _pairs("The flood forced the council to close the school.") == [
        ("forced", "The flood", "the council to close the school")
    ]
    assert _pairs("The landslide led the council to close the pass.") == [
        ("led", "The landslide", "the council to close the pass")
    ]
    assert _pairs("The leak made a new pump necessary.") == [("made necessary", "The leak", "a new pump")]


def test_backward_connectives_put_the_cause_after_them():
    assert _pairs("The bridge was closed because the storm damaged its piers.") == [
        ("because", "the storm damaged its piers", "The bridge was closed")
    ]
    assert _pairs("The delay resulted from a strike at the port.") == [
        ("resulted from", "a strike at the port", "The delay")
    ]


def test_a_passive_forward_verb_is_read_backward_and_not_also_forward():
    assert _pairs("The closure was prompted by a storm.") == [("prompted by", "a storm", "The closure")]
    pairs = _pairs("The outage, caused by a cable fault, lasted a day.")
    assert [p[0] for p in pairs] == ["caused by"] and pairs[0][1].startswith("a cable fault")


def test_an_opening_clause_is_the_cause_up_to_its_comma():
    assert _pairs("Because of the crack, the company lowered the reservoir.") == [
        ("because of", "the crack", "the company lowered the reservoir")
    ]
    assert _pairs("After the inspection, the board ordered a recall.") == [
        ("after", "the inspection", "the board ordered a recall")
    ]


def test_time_words_are_not_causes():
    assert not is_causal("After three years, he left the firm.")  # no reaction verb: time passing
    assert not is_causal("The notice was lifted after ten days.")
    assert not is_causal("In the following year the plant grew.")
    assert not is_causal("Meters have been read monthly since 2014.")


def test_an_opener_or_a_reference_takes_the_previous_sentence_as_the_cause():
    previous = "A storm damaged the piers on 2 May."
    (link,) = causal_links("As a result, the council closed the bridge.", previous)
    assert link.across and link.cause == "A storm damaged the piers on 2 May" and link.effect == "the council closed the bridge"
    links = causal_links("This forced the council to close the bridge.", previous)
    assert [(lk.cause, lk.across) for lk in links] == [("A storm damaged the piers on 2 May", True)]


def test_spans_stop_at_clause_breaks_and_at_the_previous_connective():
    # the effect before "after" starts after "followed", not at the sentence's start
    links = causal_links("The order followed an investigation opened after the complaint from the farm.")
    assert [(lk.connective, lk.cause, lk.effect) for lk in links] == [
        ("followed", "an investigation opened after the complaint from the farm", "The order"),
        ("after", "the complaint from the farm", "an investigation opened"),
    ]
    # the effect after "triggered" stops at the participle clause that follows it
    sentence = "The farmer whose complaint had triggered the recall, agreed in March to buy new units after a trial."
    triggered, after = causal_links(sentence)
    assert triggered.cause == "The farmer whose complaint" and triggered.effect == "the recall"
    assert triggered.effect_side.startswith("the recall, agreed in March")
    # the effect before "after" is the farmer's agreeing, not the recall the earlier link ends in
    assert after.cause == "a trial" and after.effect.startswith("agreed in March") and "recall" not in after.effect_side
