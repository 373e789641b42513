"""Focused reading: the few sentences of the evidence that bear on the question, two hops deep.

A 1.5B reader given five whole passages (~1,000 tokens) answers from the wrong one: it returned a
document's header date for "on what date did the board certify the S3" while the first passage's
first sentence said "certified the S3 on 1 March 2016". Given only the sentences that match the
question it reads them right, in half the time (the prompt is ~550 tokens instead of ~1,300).

Selection, deterministic and LLM-free:
1. hop 1: every sentence is scored by its IDF-weighted word overlap with the question (+ its cosine
   with the question when an embedder is given); the best `first` are kept;
2. hop 2 (the bridge): names in the hop-1 sentences that the question does not contain (the LS-7
   element named in the recall notice, the director of the film) pick further sentences that mention
   them (rare names weigh more), best `second` of those, so the sentence that names the element's
   maker comes along;
3. context: a hop-1 sentence that refers back ("named Solberg ... as her successor from 1 April 2022")
   brings the sentence before it in its passage ("Halvorsen retired as head of Brandt Meridian
   Tidewater"), and one that the next sentence continues ("... built around a pressure element of its
   own design." → "The element, called HT-Core, is made in ...") brings that one, `context` sentences
   at most: without them a 1.5B read "her successor" as the role Solberg held before ("chief operating
   officer") and named another element ("LS-7") for the S3's.
Headings and "Date:" lines are layout, not statements: they are left out.

Order: by passage, then position — except that when the question names a day or a month ("recalled in
January 2015", "on 1 April 2022"), the passages with a sentence stating that day or month come first. A
1.5B reader answers from what it reads first: given six sentences about the 2016 SeaGuard S3 before the
one about the January 2015 recall, it named the S3's element for "the element fitted in the units
recalled in January 2015"; with the recall's sentences first it named the LS-7.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from eventrag.dates import find_dates, overlaps
from eventrag.embed import l2_normalise
from eventrag.index.chunking import split_sentences
from eventrag.index.rules_extract import find_entities
from eventrag.schema import EventTime

Embed = Callable[[list[str]], np.ndarray]
_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
_STOP = frozenset(
    "a an the of in on at to for and or but by with from as into than then that this these those is are was "
    "were be been being it its what which who whom whose when where why how did does do done has have had "
    "not no yes first last many much".split()
)
_REFERS_BACK = re.compile(r"\b(?:he|she|they|his|her|their|him|them|the same|this|these|that year|that day)\b",
                          re.IGNORECASE)
_OPENS_WITH_REFERENCE = re.compile(r"^(?:(?:he|she|it|they|this|these|its|his|her|their)\b|(?:the|this|that)\s+([a-z]+))",
                                   re.IGNORECASE)
_LAYOUT = re.compile(r"^\s*(?:#.*|date:\s.*)$", re.IGNORECASE | re.MULTILINE)


class Passage(Protocol):
    doc_id: str
    title: str
    text: str


@dataclass(frozen=True)
class Sentence:
    passage: int  # index into the passages given
    position: int  # order within its passage
    title: str
    text: str


def backend_embed(backend: object) -> Embed | None:
    """The embedder of the retriever behind a search backend (`Retriever.embedder`, also through a
    `ModeBackend`), so the reader ranks sentences with the model the search used; None without one."""
    for obj in (backend, getattr(backend, "inner", None)):
        embedder = getattr(obj, "embedder", None)
        if embedder is not None and callable(getattr(embedder, "embed", None)):
            return embedder.embed  # type: ignore[no-any-return]
    return None


_SUFFIX = re.compile(r"(?:ments?|ings?|ures?|ions?|ed|es|s)$")


def stem(word: str) -> str:
    """A light stem: "close", "closure", "closed" and "closes" are one word ("clos"); then at most five letters."""
    base = _SUFFIX.sub("", word) if len(word) > 4 else word
    base = base[:-1] if len(base) > 3 and base.endswith("e") else base
    return (base if len(base) >= 3 else word)[:5]


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


_POST_MODIFIER = frozenset("of that which who whom whose".split())
HEAD_REACH = 4  # the head of a described thing opens it: "the nine-day closure of ..." has it third


def head_word(phrase: str) -> str | None:
    """The noun a described thing is, where a post-modifier marks it: "storm" in "the storm that damaged its
    roof", "cancellation" in "the cancellation of the 2018 tour"; None for a bare name or a clause."""
    toks = _WORD.findall(phrase.lower())
    for i, tok in enumerate(toks[: HEAD_REACH + 1]):
        if tok in _POST_MODIFIER:
            return toks[i - 1] if i > 0 and toks[i - 1] not in _STOP else None
    return None


def sentences_of(passages: Sequence[Passage]) -> list[Sentence]:
    out: list[Sentence] = []
    seen: set[str] = set()
    for p_i, p in enumerate(passages):
        body = _LAYOUT.sub("", p.text)
        for s_i, (a, b) in enumerate(split_sentences(body)):
            text = " ".join(body[a:b].split())
            if len(text) < 12 or text in seen:  # fragments, and the same sentence in two chunks
                continue
            seen.add(text)
            out.append(Sentence(p_i, s_i, p.title or p.doc_id, text))
    return out


def _overlap_scores(question: str, sentences: Sequence[Sentence]) -> np.ndarray:
    bags = [set(words(s.text)) for s in sentences]
    df = Counter(w for bag in bags for w in bag)
    n = len(bags)
    q = set(words(question))
    idf = {w: math.log(1 + n / (1 + df[w])) for w in q}
    total = sum(idf.values()) or 1.0
    return np.array([sum(idf[w] for w in q & bag) / total for bag in bags], dtype=np.float64)


def _bridge_names(chosen: Sequence[Sentence], question: str) -> set[str]:
    q = set(words(question))
    names: set[str] = set()
    for s in chosen:
        for _, name in find_entities(s.text):
            new = set(words(name)) - q
            if any(len(w) > 1 and not w.isdigit() for w in new):
                names.add(name.lower())
    return names


def focus(
    question: str, passages: Sequence[Passage], *, embed: Embed | None = None, first: int = 6, second: int = 4,
    context: int = 2,
) -> list[Sentence]:
    """Up to `first + second` sentences of `passages` for `question` (and up to `context` neighbours
    that hop-1 sentences need to be read: `_antecedents`), in passage order (those stating a day or month the question
    names first: `date_first`)."""
    sents = sentences_of(passages)
    if len(sents) <= first + second:
        return date_first(question, sents)
    score = _overlap_scores(question, sents)
    if embed is not None:
        vecs = l2_normalise(embed([question] + [s.text for s in sents]))
        score = score + vecs[1:] @ vecs[0]
    order = sorted(range(len(sents)), key=lambda i: (-score[i], i))
    hop1 = order[:first]
    names = _bridge_names([sents[i] for i in hop1], question)
    rest = order[first:]
    lowered = [s.text.lower() for s in sents]
    # a rare name is a bridge; one in most sentences (the corpus' topic, e.g. the company) is not
    rarity = {n: math.log(1 + len(sents) / sum(1 for t in lowered if n in t)) for n in names}
    mentions = {i: sum(r for n, r in rarity.items() if n in lowered[i]) for i in rest}
    hop2 = sorted((i for i in rest if mentions[i]), key=lambda i: (-mentions[i], -score[i], i))[:second]
    if len(hop2) < second:  # nothing (more) bridges: the next best by score
        hop2 += [i for i in rest if i not in hop2][: second - len(hop2)]
    chosen = hop1 + hop2 + _antecedents(sents, hop1, set(hop1 + hop2), context)
    return date_first(question, [sents[i] for i in sorted(chosen, key=lambda i: (sents[i].passage, sents[i].position))])


def _antecedents(sents: Sequence[Sentence], hop1: Sequence[int], chosen: set[int], limit: int) -> list[int]:
    """The neighbours the best hop-1 sentences need to be read (`limit` at most, none chosen already):
    the sentence before one that refers back (a pronoun, "the same"), the sentence after one that the
    next continues ("The element, called HT-Core" after "a pressure element of its own design")."""
    where = {(s.passage, s.position): i for i, s in enumerate(sents)}
    out: list[int] = []
    for i in hop1:
        s = sents[i]
        before = where.get((s.passage, s.position - 1))
        after = where.get((s.passage, s.position + 1))
        wanted = [before] if before is not None and _REFERS_BACK.search(s.text) else []
        if after is not None and _continues(s.text, sents[after].text):
            wanted.append(after)
        for j in wanted:
            if len(out) < limit and j not in chosen and j not in out:
                out.append(j)
    return out


def _continues(previous: str, text: str) -> bool:
    """`text` opens by referring to `previous`: with a pronoun, or "The <word>" whose word `previous` used."""
    m = _OPENS_WITH_REFERENCE.match(text)
    if m is None:
        return False
    noun = m.group(1)
    return noun is None or (len(noun) > 3 and noun.lower() in set(words(previous)))


def _days_and_months(text: str) -> list[EventTime]:
    return [t for _, _, t in find_dates(text) if t.granularity in ("day", "month") and t.start is not None]


def date_first(question: str, sentences: list[Sentence]) -> list[Sentence]:
    """`sentences` (in passage order) with the passages that state a day or month the question names
    moved to the front, order otherwise kept; unchanged when the question names none (a year alone is
    too common a mention to reorder by)."""
    asked = _days_and_months(question)
    if not asked:
        return sentences
    agree = {s.passage for s in sentences
             if any(overlaps(t, a.start, a.end or a.start) for t in _days_and_months(s.text) for a in asked)}
    return sorted(sentences, key=lambda s: s.passage not in agree) if agree else sentences
