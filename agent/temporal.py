"""Temporal questions answered from the dated sentences of the evidence (no model call).

For "which came first, A or B" / "who is older" / "how many full years after A did B" (parsed by
`eventrag.query.temporal`) the plan is one "When ...?" sub-question per side, searched as the run
opens. Each side is then dated by the evidence sentence that names it best (IDF-weighted word overlap
with the side and the compared predicate, "born", "formed"..., the passage title counting half, plus
the embedder's cosine when there is one; a passage titled with the side's name gains), and the
answer is computed from the two dates. When a side has no dated sentence the run goes on as for any
question, and the reader answers in the end, given the dates that were found.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from agent.focus import Embed, Passage, Sentence, sentences_of, words
from agent.state import Evidence, RunState
from eventrag.embed import l2_normalise
from eventrag.query.temporal import (
    DateAnswer,
    DatedSide,
    TemporalQuestion,
    date_near,
    duration_answer,
    order_answer,
)
from eventrag.schema import EventTime

# the same fact under another word: a sentence says "registered" or "established" for "founded"
_SYNONYMS = {
    "born": ("birth", "née"),
    "birth": ("born",),
    "founded": ("established", "formed", "registered", "created", "incorporated"),
    "founding": ("founded", "established", "formed", "registered"),
    "formed": ("founded", "established", "formation"),
    "forming": ("formed", "founded", "formation"),
    "published": ("first issue", "launched", "established", "founded"),
    "released": ("release", "premiered", "launched"),
    "launch": ("launched",),
    "died": ("death",),
}
MIN_OVERLAP = 0.5  # share of the side's word weight a dated sentence must match


def _stem(word: str) -> str:
    return word[:5] if len(word) >= 5 else word


def _matches(word: str, bag: set[str], text: str) -> bool:
    if word in bag or (len(word) >= 5 and any(_stem(t) == _stem(word) for t in bag)):
        return True
    return any(syn in text for syn in _SYNONYMS.get(word, ()))


def _scores(query: str, side: str, sents: Sequence[Sentence]) -> list[float]:
    """Each sentence's share of `query`'s IDF-weighted words it (or, at half weight, its title) has,
    plus a third of the share of the `side`'s own words its title holds (the side's own article)."""
    bags = [set(words(s.text)) for s in sents]
    df = Counter(w for bag in bags for w in bag)
    q = list(dict.fromkeys(words(query)))
    idf = {w: math.log(1 + len(bags) / (1 + df[w])) for w in q}
    total = sum(idf.values()) or 1.0
    own = [w for w in q if w in set(words(side))]
    own_total = sum(idf[w] for w in own) or 1.0
    out = []
    for s, bag in zip(sents, bags, strict=True):
        low, title, title_low = s.text.lower(), set(words(s.title)), s.title.lower()
        got = 0.0
        for w in q:
            if _matches(w, bag, low):
                got += idf[w]
            elif _matches(w, title, title_low):
                got += idf[w] / 2
        titled = sum(idf[w] for w in own if w in title) / own_total
        out.append(got / total + titled / 3)
    return out


def dated_sentence(
    query: str, side: str, passages: Sequence[Passage], embed: Embed | None = None
) -> tuple[Sentence, EventTime] | None:
    """The dated sentence of `passages` that names `query` best (`side`: its own words, whose article
    counts) and the date in it nearest those words; None when none names it well enough."""
    sents = [s for s in sentences_of(passages) if date_near(s.text, []) is not None]
    if not sents:
        return None
    score = _scores(query, side, sents)
    ranked = sorted(range(len(sents)), key=lambda j: (-score[j], j))
    if embed is not None:
        vecs = l2_normalise(embed([query] + [sents[j].text for j in ranked[:8]]))
        sims = vecs[1:] @ vecs[0]
        head = sorted(range(len(sims)), key=lambda k: (-(score[ranked[k]] + 0.3 * float(sims[k])), k))
        ranked = [ranked[k] for k in head] + ranked[8:]
    best = sents[ranked[0]]
    if score[ranked[0]] < MIN_OVERLAP:
        return None
    anchors = [w for w in words(query) if w in best.text.lower()]
    time = date_near(best.text, anchors)
    return (best, time) if time is not None else None


def date_side(q: TemporalQuestion, i: int, passages: Sequence[Passage], embed: Embed | None = None) -> DatedSide | None:
    """Side `i`'s date: from the dated sentence of `passages` that names it best (None if none does)."""
    found = dated_sentence(q.side_query(i), q.sides[i], passages, embed)
    if found is None:
        return None
    best, time = found
    passage = passages[best.passage]
    return DatedSide(side=q.sides[i], time=time, sentence=best.text, chunk_id=getattr(passage, "chunk_id", ""))


def _side_passages(run: RunState, i: int) -> list[Evidence]:
    """The side's own search results first, then every other passage seen, in rank order."""
    return own_first(run, run.plan.sub_questions[i].evidence if i < len(run.plan.sub_questions) else [])


def own_first(run: RunState, own_ids: Sequence[str]) -> list[Evidence]:
    """The passages of `own_ids` first, then every other passage seen, in rank order."""
    own = [run.evidence[c] for c in own_ids if c in run.evidence]
    rest = sorted((ev for c, ev in run.evidence.items() if c not in own_ids), key=lambda e: (e.rank or 99, e.step))
    return own + rest


def date_answer(run: RunState, embed: Embed | None = None) -> DateAnswer | None:
    """The answer computed from the dates of the two sides (each side's date also becomes its
    sub-question's answer, for the report and the reader); None when a date is missing or they tie."""
    q = run.plan.temporal
    if q is None:
        return None
    sides = [date_side(q, i, _side_passages(run, i), embed) for i in range(2)]
    for i, side in enumerate(sides):
        if side is not None and i < len(run.plan.sub_questions):
            run.plan.sub_questions[i].answer = side.time.raw or side.time.start
    return sides_answer(q, sides)


def sides_answer(q: TemporalQuestion, sides: Sequence[DatedSide | None]) -> DateAnswer | None:
    """The order or the duration the two dated sides give; None when a date is missing or they tie."""
    dated = [s for s in sides if s is not None]
    if len(dated) < 2:
        return None
    a, b = dated[0].time, dated[1].time
    answer = order_answer(q, a, b) if q.kind == "order" else duration_answer(q, a, b)
    if not answer:
        return None
    return DateAnswer(answer=_tidy(answer), sides=dated)


def _tidy(answer: str) -> str:
    return re.sub(r"\s+", " ", answer).strip(" ,.;:")
