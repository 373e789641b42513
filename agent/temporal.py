"""The evidence sentence that dates a described thing ("HTI was founded", "the 2015 recall"), no model call.

A thing is dated by the dated sentence that names it best: IDF-weighted word overlap with its words (a
compared predicate such as "born" or "founded" also matched by its synonyms, "registered",
"established"...), the passage title counting half, plus the embedder's cosine when there is one; a
passage titled with the thing's own name gains. The dates tool (`agent.tools.dates`) dates both sides
of a comparison so; the timeline tool dates its subject so.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from agent.focus import Embed, Passage, Sentence, head_word, sentences_of, stem, words
from eventrag.embed import l2_normalise
from eventrag.query.temporal import date_near
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
HEAD_WEIGHT = 2.0  # the described thing's own noun (`head_word`) against each of its modifiers' words


def _matches(word: str, bag: set[str], text: str) -> bool:
    if word in bag or (len(word) >= 4 and any(stem(t) == stem(word) for t in bag)):
        return True
    return any(syn in text for syn in _SYNONYMS.get(word, ()))


def _scores(query: str, side: str, sents: Sequence[Sentence]) -> list[float]:
    """Each sentence's share of `query`'s IDF-weighted words it (or, at half weight, its title) has,
    plus a third of the share of the `side`'s own words its title holds (the side's own article)."""
    bags = [set(words(s.text)) for s in sents]
    df = Counter(w for bag in bags for w in bag)
    q = list(dict.fromkeys(words(query)))
    head = head_word(query)
    # the thing described weighs twice its modifiers, and only a sentence that names it gets it (not its title):
    # "the storm that damaged its roof" is dated by the storm's sentence, not by the damage's
    idf = {w: math.log(1 + len(bags) / (1 + df[w])) * (HEAD_WEIGHT if w == head else 1.0) for w in q}
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
            elif w != head and _matches(w, title, title_low):
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
