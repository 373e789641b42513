"""Bridge questions: the description a model's #1-template left out is taken only when the template
keeps the rest of the question and what it replaced describes (not names) something."""

from __future__ import annotations

import pytest

from eventrag.query.bridge import (
    carried,
    descriptions,
    is_description,
    may_describe,
    nested_bridge,
    rule_bridge,
    split_bridge,
)

Q3 = "What role did the inspector who signed the SeaGuard S2 recall order take up on 1 April 2022?"
Q8 = "Which port authority was the first customer of the product whose production moved to Plymouth in 2019?"


def test_the_description_between_the_kept_words_is_taken():
    b = split_bridge(Q3, "What role did #1 take up on 1 April 2022?")
    assert b is not None
    assert b.description == "the inspector who signed the SeaGuard S2 recall order"
    assert b.inner == "Who is the inspector who signed the SeaGuard S2 recall order?"
    assert b.fill("Dagny Solberg") == "What role did Dagny Solberg take up on 1 April 2022?"
    b8 = split_bridge(Q8, "which port authority was the first customer of #1")  # case and "?" aside
    assert b8 is not None and b8.inner == "What is the product whose production moved to Plymouth in 2019?"
    assert b8.fill("TG-1") == "Which port authority was the first customer of TG-1?"


def test_a_description_at_the_start_or_with_a_possessive_is_taken():
    q = "The runner-up in the 1999 World Drivers' Championship appears on the cover of which game?"
    b = split_bridge(q, "#1 appears on the cover of which game?")
    assert b is not None and b.description == "The runner-up in the 1999 World Drivers' Championship"
    q2 = "In which state did Hello Love's performer die?"
    b2 = split_bridge(q2, "In which state did #1 die?")
    assert b2 is not None and b2.inner == "Who is Hello Love's performer?"


@pytest.mark.parametrize(
    "template",
    [
        None,
        "",
        Q3,  # unchanged: nothing described
        "What role did #1 take up on 1 April?",  # a kept word dropped
        "What job did #1 take up on 1 April 2022?",  # a kept word changed
        "What role did #1 take up on #1?",  # two placeholders
        "What role did the inspector who signed the SeaGuard S2 recall #1 take up on 1 April 2022?",  # one word
        "What role did the insp#1 take up on 1 April 2022?",  # not at a word boundary
    ],
)
def test_a_template_that_does_not_keep_the_question_gives_no_bridge(template):
    assert split_bridge(Q3, template) is None


def test_a_name_is_not_a_description():
    q = "On what date did the Nordic Marine Metrology Board certify the SeaGuard S3?"
    assert split_bridge(q, "On what date did #1 certify the SeaGuard S3?") is None
    assert split_bridge(q, "On what date did the Nordic Marine Metrology Board certify #1?") is None
    assert split_bridge("Are Christopher Nolan and Sathish Kalathil both film directors?",
                        "Are Christopher Nolan and #1 both film directors?") is None  # fmt: skip
    assert is_description("the composer of Aschenbrodel") and not is_description("the Bubye River")
    assert not is_description("Haymo of Faversham")


def test_only_a_noun_with_a_relative_clause_of_participle_or_possessive_may_describe():
    assert may_describe(Q3) and may_describe("Where did Brother's performers form?")
    assert not may_describe("In which town is HT-Core made?")
    assert not may_describe("When did the SeaGuard S3 launch?")
    assert may_describe("What county shares a border with the county in which Johnnycake is located?")
    assert may_describe("Which company made the pressure element fitted in the units recalled in 2015?")
    assert not may_describe("If Gallu is a demon Lilu is what?")  # a determiner, nothing describing
    assert not may_describe("Which of the two tornado outbreaks killed the most people?")


def test_a_hop_answer_is_carried_as_a_name_not_a_sentence():
    assert carried(" Dagny Solberg. ") == "Dagny Solberg"
    assert carried(None) is None and carried("") is None
    assert carried("The recall order was signed by the senior inspector of the board in 2015 after a complaint") is None


def test_a_description_nested_in_a_description_is_split_by_rule():
    q = "In which town is the pressure element of the sensor that Nordhav Energy chose in 2017 made?"
    b = split_bridge(q, "In which town is #1 made?")
    nested = nested_bridge(b)
    assert nested is not None and nested.description == "the sensor that Nordhav Energy chose in 2017"
    assert nested.inner == "What is the sensor that Nordhav Energy chose in 2017?"
    assert nested.fill("SeaGuard S3") == "What is the pressure element of SeaGuard S3?"
    assert nested_bridge(split_bridge(Q3, "What role did #1 take up on 1 April 2022?")) is None


def test_a_description_after_the_verb_running_to_the_end_is_found_without_a_model():
    q = "Which company made the pressure element fitted in the SeaGuard S2 units recalled in January 2015?"
    b = rule_bridge(q)
    assert b is not None and b.outer == "Which company made #1?"
    assert b.inner == "What is the pressure element fitted in the SeaGuard S2 units recalled in January 2015?"
    assert rule_bridge("Who wrote the book named after the artist known for Thriller?") is not None
    assert rule_bridge(Q3) is None  # "did": the description does not run to the end
    assert rule_bridge("Which company made the SeaGuard S2?") is None  # a name
    assert rule_bridge("Which company made the pressure element?") is None  # nothing marks a description


def test_a_name_narrowed_by_a_participle_is_not_a_description():
    assert not is_description("the SeaGuard S2 units recalled in January 2015")
    assert is_description("the German musician whose godfather is Telemann")
    q = "Which company made the pressure element fitted in the SeaGuard S2 units recalled in January 2015?"
    assert nested_bridge(rule_bridge(q)) is None  # the units are named: the element is the one hop


@pytest.mark.parametrize(("question", "expected"), [
    ("At the 2011 census, what was the population of the city where Kerry Saxby-Junna was born?",
     ["the city where Kerry Saxby-Junna was born", "the population of the city where Kerry Saxby-Junna was born"]),
    ("What is the name of the waterfall in the country where the Bubye River is found?",
     ["the country where the Bubye River is found", "the waterfall in the country where the Bubye River is found",
      "the name of the waterfall in the country where the Bubye River is found"]),
    ("Who was the first president of the association which published Journal of Psychotherapy Integration?",
     ["the association which published Journal of Psychotherapy Integration",
      "the first president of the association which published Journal of Psychotherapy Integration"]),
    ("The basis of the confederation's jurisdiction began with the signing of what treaty?", []),  # the gap itself
    ("What country was the author of Brand a citizen of?", []),  # "a citizen of" ends in a function word
    ("Which singer is American, Mark King or Nick Hexum?", []),
])  # fmt: skip
def test_the_descriptions_inside_a_question_are_listed_innermost_first(question, expected):
    assert descriptions(question) == expected
