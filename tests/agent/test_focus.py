"""Focused reading: the reader sees the sentences that answer, two hops deep, not whole passages."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agent import prompts
from agent.focus import focus, sentences_of
from agent.reader import reader_messages


@dataclass
class P:
    doc_id: str
    title: str
    text: str


RECALL = P(
    "08-recall.md",
    "NMMB orders the recall",
    "# NMMB Orders the SeaGuard S2 Recall\nDate: 2015-01-09\n\nOn 9 January 2015, the board ordered HTI to "
    "recall every SeaGuard S2 sensor fitted with the LS-7 pressure element. The order covered 1,200 units.",
)
FIRE = P(
    "06-kvarts-fire.md",
    "Fire at Kvarts",
    "In the early hours of 2 February 2014, a fire broke out at the plant in Trondheim. Kvarts released HTI "
    "from the exclusivity clause on 10 February. On 17 February 2014 Ekberg signed an emergency supply "
    "contract with Lindqvist Sensorteknik of Gothenburg for the LS-7.",
)
FILLER = [
    P(f"f{i}.md", f"Filler {i}", f"HTI's harbour office in town {i} opened a new quay in spring. Visitors came by ferry "
      f"to see quay {i}. The mayor of town {i} gave a speech about ferries.")  # fmt: skip
    for i in range(6)
]
Q1 = "Which company made the pressure element fitted in the SeaGuard S2 units recalled in January 2015?"


def test_headings_and_date_lines_are_layout_not_sentences():
    texts = [s.text for s in sentences_of([RECALL])]
    assert texts[0].startswith("On 9 January 2015") and len(texts) == 2
    assert not any(t.startswith(("#", "Date:")) for t in texts)


def test_the_bridge_sentence_comes_along_with_the_one_the_question_matches():
    """Hop 1 finds the recall sentence (LS-7); hop 2 the sentence naming LS-7's maker, which shares
    almost no word with the question."""
    chosen = focus(Q1, FILLER + [FIRE, RECALL], first=2, second=1)
    texts = [s.text for s in chosen]
    assert any("fitted with the LS-7" in t for t in texts)
    assert any("Lindqvist Sensorteknik" in t for t in texts)
    assert len(chosen) == 3 and not any("quay" in t for t in texts)
    # the recall notice states January 2015, which the question names: read first; then passage order
    recall = len(FILLER) + 1
    assert [(s.passage, s.position) for s in chosen] == sorted(((s.passage, s.position) for s in chosen),
                                                               key=lambda x: (x[0] != recall, x))


def test_without_the_bridge_hop_the_makers_sentence_is_lost():
    chosen = focus(Q1, FILLER + [FIRE, RECALL], first=3, second=0)
    assert any("fitted with the LS-7" in s.text for s in chosen)
    assert not any("Lindqvist" in s.text for s in chosen)


def test_an_embedder_adds_its_cosine_to_the_word_overlap():
    def embed(texts: list[str]) -> np.ndarray:  # test double: only the ferry sentence is "similar"
        return np.array([[1.0, 0.0] if (i == 0 or "ferry" in t) else [0.0, 1.0] for i, t in enumerate(texts)])

    chosen = focus("How do people reach the town?", FILLER[:3], embed=embed, first=2, second=0)
    assert all("ferry" in s.text for s in chosen)


def test_few_sentences_are_all_kept_and_duplicates_once():
    assert [s.text for s in focus("anything", [FIRE, FIRE])] == [s.text for s in sentences_of([FIRE])]


def test_reader_prompt_lists_numbered_sentences_with_their_titles_and_the_question_twice():
    msgs = reader_messages(Q1, [RECALL, FIRE])
    assert msgs[0].content == prompts.READER_SYSTEM
    user = msgs[1].content
    assert user.count(Q1) == 2 and "[1] (NMMB orders the recall) On 9 January 2015" in user
    assert "Date: 2015-01-09" not in user and "Lindqvist Sensorteknik" in user


def test_the_reader_uses_the_embedder_of_the_retriever_behind_the_backend():
    from agent.focus import backend_embed
    from agent.search_backend import ModeBackend

    class Embedder:
        def embed(self, texts):
            return np.ones((len(texts), 2))

    class Retriever:
        embedder = Embedder()

    retriever = Retriever()
    assert backend_embed(retriever).__self__ is retriever.embedder
    assert backend_embed(ModeBackend(retriever, "event")).__self__ is retriever.embedder  # type: ignore[arg-type]
    assert backend_embed(object()) is None


S3 = P("10-seaguard-s3.md", "SeaGuard S3 and the HT-Core element",
       "On 12 April 2016, HTI launched the SeaGuard S3, built around a pressure element of its own design. The "
       "element, called HT-Core, is a direct answer to the seal failure behind the SeaGuard S2 recall.")


def test_passages_stating_the_day_or_month_the_question_names_are_read_first():
    """The question names January 2015: the recall notice (9 January 2015) is read before the S3 passage
    that retrieval ranked first; a question with a year only, or none, keeps the passage order."""
    month = [s.passage for s in focus("What is the pressure element fitted in the SeaGuard S2 units recalled "
                                      "in January 2015?", [S3, RECALL])]
    assert month == [1, 1, 0, 0]
    day = focus("What did the board order on 9 January 2015?", [S3, FIRE, RECALL], first=3, second=1)
    assert day[0].passage == 2 and [s.passage for s in day] == sorted((s.passage for s in day), key=lambda p: p != 2)
    for q in ("What is the pressure element of the SeaGuard S2 units recalled in 2015?",
              "What is the pressure element of the recalled SeaGuard S2 units?",
              "What happened in March 2020?"):  # a month no passage states
        assert [s.passage for s in focus(q, [S3, RECALL])] == [0, 0, 1, 1]


SUCCESSION = P(
    "15-succession.md",
    "Halvorsen retires",
    "On 31 March 2022, Ingrid Halvorsen retired as head of Brandt Meridian Tidewater. Brandt Meridian chief "
    "executive Jurgen Albers named Dagny Solberg, the division's chief operating officer, as her successor from "
    "1 April 2022. Solberg had joined HTI as head of quality in September 2015.",
)


def test_a_sentence_that_refers_back_brings_the_one_before_it():
    """"as her successor": the sentence saying whose successor, and in what role, comes along, though it
    shares few words with the question; without a reference back nothing is added."""
    q = "What role did Dagny Solberg take up on 1 April 2022?"
    texts = [s.text for s in focus(q, FILLER + [SUCCESSION], first=1, second=0)]
    assert texts == [
        "On 31 March 2022, Ingrid Halvorsen retired as head of Brandt Meridian Tidewater.",
        texts[1],
    ] and "her successor" in texts[1]
    assert len(focus(q, FILLER + [SUCCESSION], first=1, second=0, context=0)) == 1
    plain = focus("What did HTI's harbour office in town 3 open?", FILLER, first=1, second=0)
    assert len(plain) == 1  # "HTI's harbour office ... opened a new quay": no reference back


S3_ELEMENT = P(
    "10-seaguard-s3.md",
    "SeaGuard S3",
    "On 12 April 2016, HTI launched the SeaGuard S3, the first of its products built around a pressure element "
    "of its own design. The element, called HT-Core, is made in the clean room that HTI opened in Sandnes. "
    "The board certified the S3 on 1 March 2016.",
)


def test_a_sentence_the_next_one_continues_brings_it():
    """"The element, called HT-Core" continues the sentence the question matches; "The board certified"
    does not (the board is not in the sentence before it)."""
    q = "What is the pressure element of SeaGuard S3?"
    texts = [s.text for s in focus(q, FILLER + [S3_ELEMENT], first=1, second=0)]
    assert len(texts) == 2 and texts[0].startswith("On 12 April 2016") and "called HT-Core" in texts[1]
