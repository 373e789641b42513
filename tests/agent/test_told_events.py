"""What the evidence tells of a name, on the sample corpora's own sentences: the clauses holding the name
(or its first word, as reports shorten names), without their dates or appositives, and none of the
clauses that do not hold it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.state import Evidence
from agent.tools.told_events import Told, name_key, told_events

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _doc(doc: str) -> list[Evidence]:
    return [Evidence(chunk_id=doc, doc_id=doc, text=(EXAMPLES / doc).read_text(encoding="utf-8"))]


@pytest.mark.parametrize(("doc", "name", "told"), [
    ("aldermoor/corpus/10-austrian-tour.md", "Orvell Logistics", "Orvell Logistics went bankrupt"),
    ("riverside/corpus/06-fennick-boil-water.md", "Ardent Filtration", "Ardent Filtration had gone into administration"),
    ("corpus/06-kvarts-fire.md", "Kvarts Microsystems",
     "a fire broke out in the clean room of Kvarts Microsystems' plant in Trondheim"),
])  # fmt: skip
def test_the_clause_telling_what_happened_to_the_name_loses_its_date_and_appositive(doc, name, told):
    clauses = told_events(name, _doc(doc))
    assert told in clauses, clauses
    assert all(name_key(name) in c for c in clauses)
    assert not any(c[:1].isdigit() or " 2012" in c or " 2018" in c for c in clauses)  # dates left out


def test_a_name_without_a_capitalised_word_or_absent_from_the_text_tells_nothing():
    told = [Told("On 19 September 2018 Orvell Logistics went bankrupt.")]
    assert told_events("the carrier", told) == [] and told_events("Halloran Metals", told) == []
    assert told_events("Orvell", told) == ["Orvell Logistics went bankrupt"]  # the short form finds it too
    assert name_key("the Kvarts Microsystems' plant") == "Kvarts"
