"""Causes of an event ranked by the evidence that links them to it, never by time order or position.

`rank_causes(subject, passages, graph_links)` reads the passages' sentences and scores each candidate
cause by what states its link to the subject:

1. a causal connective (`eventrag.connectives`): the subject's words on the effect side of a link
   ("The order followed an investigation opened *after* the complaint") make the other side a cause,
   weighted by the connective ("because" 1.0, "after" 0.5) and by how well the effect side names the
   subject; a link whose *cause* side names the subject marks its effect side as an effect, never a cause;
2. a CAUSES edge of the event graph (`graph_links`, extracted at index time) into an event that names
   the subject;
3. a chain: the causes of a cause found so (up to `MAX_DEPTH` links), each link discounting the score;
4. weakly, a dated event before the subject that names a rare participant of the subject's own
   sentences (the element the recall order names, the supplier the contract names): link "BEFORE";
5. with `chain=N`, the causes of the N best causes themselves (`_chained`): each of them ranked as a
   subject in its own right, its causes added a link deeper, scored CHAIN_DISCOUNT x its score x theirs
   and kept with their own link and the cause they lead through (`via`). A cause found only through the
   intermediate's entity link must be the nearest dated event before it in its own document, with a rare
   shared participant (see `_next_before`): an entity link alone is weak, and a second one inside a report
   would pull in any earlier event the report tells.

A cause dated after the subject cannot be its cause and loses most of its score. Words match by stem
and weigh by rarity among the passages' sentences (IDF), so the corpus' topic word counts for little.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from agent.focus import Embed, Passage, Sentence, sentences_of, stem, words
from agent.temporal import dated_sentence
from eventrag.connectives import CausalLink, causal_links, is_causal
from eventrag.dates import find_dates
from eventrag.index.rules_extract import find_entities
from eventrag.query.temporal import date_near
from eventrag.schema import EventTime

Link = Literal["CAUSES", "connective", "BEFORE", "none"]
MAX_DEPTH = 3  # links of a chain followed back from the subject
CHAIN_DISCOUNT = 0.8  # each link further from the subject
MIN_MATCH = 0.5  # share of a text's weighted words a span must hold to name it
ENTITY_WEIGHT = 0.3  # a shared rare participant is weaker evidence than any connective
LATE_PENALTY = 0.2  # a "cause" dated after the subject
RARE_NAME = 0.5  # a chained entity link's shared participant: at least this rare (1.0: no other sentence names it)
SHORT_SPAN = 3  # a cause of at most this many words ("the crack") is shown with the sentence telling it
_OPENS_WITH_REFERENCE = re.compile(r"^(?:this|that|these|it|they|he|she|the\s+[a-z]+)\b", re.I)

@dataclass(frozen=True)
class GraphLink:
    """A CAUSES edge of the event graph: the texts of its two events and the chunk that states them."""

    cause: str
    effect: str
    chunk_id: str

@dataclass
class Ranked:
    """A candidate event: its text, when (if dated), the chunk that states it, and its link to the subject."""

    text: str
    score: float
    link: Link
    support: str  # the sentence(s) stating the link
    chunk_id: str  # the chunk holding the support
    time: EventTime | None = None
    event_chunk: str = ""  # the chunk whose sentence dates the event (may differ from the support's)
    depth: int = 1
    via: str = ""  # a chained cause: the cause of the subject it leads to the subject through

    @property
    def full_support(self) -> str:
        """The support, with the event it leads through for a chained cause."""
        return f"{self.support} (via: {self.via})" if self.via else self.support

    @property
    def date(self) -> str:
        return self.time.start if self.time is not None and self.time.start else ""

@dataclass
class Ranking:
    subject: Ranked | None  # the sentence that names the subject best (score: its match)
    causes: list[Ranked] = field(default_factory=list)  # best first
    effects: list[Ranked] = field(default_factory=list)  # what the evidence says the subject caused

class Matcher:
    """IDF-weighted, stem-level share of a text's words that another text holds."""

    def __init__(self, sentences: Sequence[str]) -> None:
        bags = [{stem(w) for w in words(s)} for s in sentences]
        self.df = Counter(w for bag in bags for w in bag)
        self.n = max(1, len(bags))

    def idf(self, stem: str) -> float:
        return math.log(1 + self.n / (1 + self.df[stem]))

    def share(self, query: str, text: str) -> float:
        q = {stem(w) for w in words(query)}
        if not q:
            return 0.0
        have = {stem(w) for w in words(text)}
        total = sum(self.idf(w) for w in q)
        return sum(self.idf(w) for w in q & have) / total if total else 0.0

def _chunk(passages: Sequence[Passage], s: Sentence) -> str:
    return str(getattr(passages[s.passage], "chunk_id", "") or passages[s.passage].doc_id)

@dataclass
class _Stated:
    link: CausalLink
    chunk_id: str
    context: str  # the previous sentence, when the effect side opens by referring back to it
    cause_context: str = ""  # the previous sentence, when the cause opens the sentence referring back ("The closure")

def _stated_links(sents: Sequence[Sentence], passages: Sequence[Passage], graph: Sequence[GraphLink]) -> list[_Stated]:
    where = {(s.passage, s.position): s for s in sents}
    out: list[_Stated] = []
    for s in sents:
        prev = where.get((s.passage, s.position - 1))
        for link in causal_links(s.text, prev.text if prev else None):
            refers = prev is not None and not link.across and s.text.startswith(link.effect[:20]) and bool(
                _OPENS_WITH_REFERENCE.match(link.effect))
            cause_refers = prev is not None and not link.across and s.text.startswith(link.cause[:20]) and bool(
                _OPENS_WITH_REFERENCE.match(link.cause))
            out.append(_Stated(link, _chunk(passages, s), prev.text if refers and prev else "",
                               prev.text if cause_refers and prev else ""))
    for g in graph:
        out.append(_Stated(CausalLink(g.cause, g.effect, "CAUSES", 0.9, f"{g.cause} -> {g.effect}"), g.chunk_id, ""))
    return out

def _dated(text: str) -> EventTime | None:
    found = [t for _, _, t in find_dates(text) if t.start]
    return found[0] if found else None

def find_subject(subject: str, passages: Sequence[Passage], embed: Embed | None = None) -> Ranked | None:
    """The sentence naming the subject best: dated when a dated one names it (its date must hold a year
    the subject names), else the best undated one; None when none names it."""
    year = next((t.start[:4] for _, _, t in find_dates(subject) if t.start), None)
    found = dated_sentence(subject, subject, passages, embed)
    if found is not None:
        sent, time = found
        if year is None or (time.start or "")[:4] <= year <= (time.end or time.start or "")[:4]:
            return Ranked(sent.text, 1.0, "none", sent.text, _chunk(passages, sent), time, _chunk(passages, sent), 0)
    sents = sentences_of(passages)
    if not sents:
        return None
    m = Matcher([s.text for s in sents])
    scored = [(m.share(subject, s.text), -i, s) for i, s in enumerate(sents)]
    share, _, best = max(scored, key=lambda x: (x[0], x[1]))
    if share < MIN_MATCH:
        return None
    return Ranked(best.text, share, "none", best.text, _chunk(passages, best), _dated(best.text), _chunk(passages, best), 0)

def _undated(subject: str) -> str:
    """`subject` without the dates it names (unchanged when fewer than two words would be left)."""
    out = subject
    for start, end, _ in sorted(find_dates(subject), key=lambda d: -d[0]):
        out = out[:start] + " " + out[end:]
    out = " ".join(re.sub(r"\b(?:in|on|of|during|from)\s*$", "", out.strip()).split())
    return out if len(words(out)) >= 2 else subject


def _cause_share(m: Matcher, query: str, st: _Stated) -> float:
    """How well the cause of a link names `query`: its span, or (a little less) with the sentence before it
    when it opens by referring back ("The closure meant ..." after the sentence telling the closure)."""
    own = m.share(query, st.link.cause)
    return max(own, 0.9 * m.share(query, f"{st.cause_context} {st.link.cause}")) if st.cause_context else own


def _effect_share(m: Matcher, query: str, st: _Stated) -> float:
    """How well the effect side of a link names `query`: its clause, else (a little less) the whole side of
    the sentence it is told on ("a notice, issued on 16 July 2013 in Fennick"), with the previous sentence
    when that side opens by referring back ("The order ... followed")."""
    side = f"{st.context} {st.link.effect_side}" if st.context else st.link.effect_side
    return max(m.share(query, st.link.effect), 0.9 * m.share(query, side))

def _when(text: str, support: str, sents: Sequence[Sentence], passages: Sequence[Passage], subject: Ranked | None,
          m: Matcher) -> tuple[EventTime | None, str, str]:
    """The date of a cause span, the chunk and the sentence that date it: its own date, else that of the
    dated sentence naming it best (neither the sentence stating the link, whose date may be the
    effect's, nor the subject's)."""
    own = _dated(text)
    if own is not None:
        return own, "", ""
    skip = {subject.text if subject else "", *(s.text for s in sents if s.text in support)}
    # the sentence that tells the event itself: not one that names it as the cause of something else
    # (ranked lower), nor one that explains it (its date is the explanation's: "X failed because of Y in 2019")
    scored = [(m.share(text, s.text), m.share(s.text, text) - 0.2 * is_causal(s.text), -i, s)
              for i, s in enumerate(sents) if s.text not in skip and _dated(s.text)]
    scored = [x for x in scored if x[0] >= MIN_MATCH
              and not any(m.share(text, link.effect) >= MIN_MATCH for link in causal_links(x[3].text))]
    best = max(scored, key=lambda x: x[:3], default=None)
    if best is None or best[0] < MIN_MATCH:
        return None, "", ""
    sent = best[3]
    return date_near(sent.text, words(text)), _chunk(passages, sent), sent.text

def _antecedent(span: str, sentence: str, sents: Sequence[Sentence], passages: Sequence[Passage],
                m: Matcher) -> Sentence | None:
    """The sentence a short cause ("the closure") refers back to: the first of its own report, before
    `sentence`, that names it, where the report introduces the event; never another report's namesake."""
    here = next((s for s in sents if s.text == sentence), None)
    if here is None:
        return None
    order = {id(s): (getattr(passages[s.passage], "index", 0), s.position)  # the sentences of its report, in order
             for s in sents if passages[s.passage].doc_id == passages[here.passage].doc_id}
    before = [s for s in sents if id(s) in order and order[id(s)] < order[id(here)]
              and m.share(span, s.text) >= MIN_MATCH]
    return min(before, key=lambda s: order[id(s)], default=None)

def _late(time: EventTime | None, subject: Ranked | None) -> bool:
    if time is None or subject is None or subject.time is None or not subject.time.start:
        return False
    return (time.start or "") > (subject.time.end or subject.time.start)

def _told_later(sentence: str, subject: Ranked | None) -> bool:
    """Every date `sentence` names comes after the subject (and it names one)."""
    times = [t for _, _, t in find_dates(sentence) if t.start]
    return bool(times) and all(_late(t, subject) for t in times)


def _before(time: EventTime, subject: Ranked) -> bool:
    """`time` ends before the subject starts (an undated subject: any date)."""
    if subject.time is None or not subject.time.start:
        return True
    return (time.end or time.start or "") < subject.time.start


def _follow(
    m: Matcher, query: str, stated: Sequence[_Stated], base: float, depth: int, seen: set[str]
) -> list[tuple[_Stated, float, int]]:
    """The links whose effect side names `query` and whose cause side does not, with their scores,
    and (recursively) the causes of those causes. A link whose effect names `query` only through the
    sentence before it ("The pump failed because ..." after "The pump failure led to the shortage") is
    left for the next hop when its own clause names a cause found here: it explains that cause."""
    found: list[tuple[_Stated, float, int]] = []
    borrowed: list[tuple[_Stated, float]] = []
    for st in stated:
        e, c = _effect_share(m, query, st), _cause_share(m, query, st)
        if e < MIN_MATCH or c >= e or st.link.cause in seen:
            continue
        if m.share(query, st.link.effect) < MIN_MATCH:
            borrowed.append((st, e))
        else:
            found.append((st, base * st.link.weight * e, depth))
    for st, e in borrowed:
        if not any(m.share(f[0].link.cause, st.link.effect) >= MIN_MATCH for f in found):
            found.append((st, base * st.link.weight * e, depth))
    seen.update(st.link.cause for st, _, _ in found)
    if depth < MAX_DEPTH:
        for st, score, _ in list(found):
            found += _follow(m, st.link.cause, stated, score * CHAIN_DISCOUNT, depth + 1, seen)
    return found

def _effects(m: Matcher, subject: str, stated: Sequence[_Stated]) -> list[Ranked]:
    out = []
    for st in stated:
        c, e = _cause_share(m, subject, st), _effect_share(m, subject, st)
        if c >= MIN_MATCH and c > e:
            out.append(Ranked(st.link.effect, 0.0, "connective", st.link.sentence, st.chunk_id))
    return out

def _names(text: str, name: str) -> bool:
    """`text` (lower case) names `name` as whole words: "Vell" is not named by "Kvell"."""
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def _echoed(m: Matcher, own: set[str], text: str) -> float:
    """The share of the subject sentence's own word stems `own` (those the query does not use) that `text`
    holds: a subject told with its reason ("saying he could not lead an orchestra whose players had voted
    against him") echoes the event it refers to ("71 of the 78 players voted against him")."""
    total = sum(m.idf(w) for w in own)
    return sum(m.idf(w) for w in own & {stem(w) for w in words(text)}) / total if total else 0.0


def _entity_links(
    subject: Ranked, sents: Sequence[Sentence], passages: Sequence[Passage], m: Matcher, query: str
) -> list[Ranked]:
    """Dated sentences before the subject that name a rare participant of the subject's sentence, stronger
    as they echo more of what the subject's sentence says besides the query (`_echoed`)."""
    low = [s.text.lower() for s in sents]
    names = {n.lower() for _, n in find_entities(subject.text)}
    # a name is as rare as its commonest word ("Halvorsen Tidewater Instruments" is no rarer than
    # "Halvorsen"), against a name no other sentence holds: the company every sentence names weighs little
    rarest = m.idf("") or 1.0
    rarity = {n: min((m.idf(stem(w)) for w in words(n)), default=0.0) / rarest for n in names}
    own = {stem(w) for w in words(subject.text)} - {stem(w) for w in words(query)}
    out: list[Ranked] = []
    for s, text in zip(sents, low, strict=True):
        time = _dated(s.text)
        if s.text == subject.text or time is None or not _before(time, subject):
            continue
        shared = sorted(n for n in names if _names(text, n))
        got = min(1.0, sum(rarity[n] for n in shared))
        if got > 0:
            got = min(1.0, got + _echoed(m, own, s.text))
            support = f"names {', '.join(shared)}, as the later event does"
            out.append(Ranked(s.text, ENTITY_WEIGHT * got, "BEFORE", support, _chunk(passages, s), time, _chunk(passages, s)))
    return out

def rank_causes(
    subject: str, passages: Sequence[Passage], graph_links: Sequence[GraphLink] = (), embed: Embed | None = None,
    *, limit: int = 8, chain: int = 0,
) -> Ranking:
    """The candidate causes of `subject` in `passages`, best first (see the module's doc); with `chain`, the
    causes of its `chain` best causes too (point 5)."""
    sents = sentences_of(passages)
    m = Matcher([s.text for s in sents])
    target = find_subject(subject, passages, embed)
    stated = _stated_links(sents, passages, graph_links)
    core = _undated(subject)  # "the closure of the footbridge" is how a sentence may name it, its date aside
    effects = _effects(m, core, stated)
    found = _follow(m, core, stated, 1.0, 1, set())
    ranked: list[Ranked] = []
    for st, score, depth in found:
        link: Link = "CAUSES" if st.link.connective == "CAUSES" else "connective"
        text = st.link.cause
        ante = _antecedent(text, st.link.sentence, sents, passages, m) if len(words(text)) <= SHORT_SPAN else None
        if ante is not None:  # "Because of the closure, …": the closure its own report told before
            told, event_chunk = ante.text, _chunk(passages, ante)
            time = _dated(ante.text) or _when(ante.text, st.link.sentence, sents, passages, target, m)[0]
        else:
            time, event_chunk, told = _when(text, st.link.sentence, sents, passages, target, m)
        if not told and st.cause_context:  # "The discovery prompted ...": the sentence before tells the discovery
            told, time, event_chunk = st.cause_context, _dated(st.cause_context), st.chunk_id
        if told and len(words(text)) <= SHORT_SPAN:  # "the crack": the sentence telling it says what it was
            text = f"{text} — {told}"
        if time is None and _told_later(st.link.sentence, target):
            score *= LATE_PENALTY  # an undated cause in a sentence all of whose dates come after the subject
        ranked.append(Ranked(text, score, link, st.link.sentence, st.chunk_id, time, event_chunk or st.chunk_id, depth))
    if target is not None:
        ranked += _entity_links(target, sents, passages, m, subject)
    causes = _settle(ranked, effects, target, m, subject)
    if chain and target is not None:
        mids = [r for r in causes[:chain] if _penalty(r, effects, target, m) == 1.0]
        causes = _settle(ranked + _chained(mids, passages, graph_links, embed, limit), effects, target, m, subject)
        # the best cause found through each intermediate stays listed, past `limit` if need be
        vias = {c.via for c in causes[:limit]}
        extra = [c for c in causes[limit:] if c.via and c.via not in vias and not vias.add(c.via)]
        return Ranking(target, causes[:limit] + extra, effects)
    return Ranking(target, causes[:limit], effects)


def _chained(mids: Sequence[Ranked], passages: Sequence[Passage], graph_links: Sequence[GraphLink],
             embed: Embed | None, limit: int) -> list[Ranked]:
    """The causes of each of `mids` (causes of the subject), a link deeper: connective and CAUSES links as
    found, entity links only to the nearest dated event before the intermediate in its own document."""
    out: list[Ranked] = []
    for mid in mids:
        if mid.depth >= MAX_DEPTH:
            continue
        own = rank_causes(mid.text, passages, graph_links, embed, limit=limit)
        for c in own.causes:
            if mid.depth + c.depth > MAX_DEPTH or own.subject is None:
                continue
            if c.link == "BEFORE" and not _next_before(c, own.subject, passages):
                continue
            out.append(replace(c, score=CHAIN_DISCOUNT * mid.score * c.score, depth=mid.depth + c.depth,
                               via=mid.text))
    return out


def _next_before(cause: Ranked, mid: Ranked, passages: Sequence[Passage]) -> bool:
    """`cause` (an entity link of `mid`) shares a rare participant with it (`RARE_NAME`) and is, in `mid`'s
    own document, the dated event nearest before it: no other dated sentence of that document falls
    between them. An admission test, not a ranking: the candidates kept are still ranked by their links."""
    doc = {str(getattr(p, "chunk_id", "") or p.doc_id): p.doc_id for p in passages}
    if (cause.score < ENTITY_WEIGHT * RARE_NAME or mid.time is None or cause.time is None
            or doc.get(cause.chunk_id) != doc.get(mid.chunk_id)):
        return False
    own = [p for p in passages if p.doc_id == doc.get(mid.chunk_id)]
    between = [t for s in sentences_of(own) if s.text not in (cause.text, mid.text)
               for t in [_dated(s.text)] if t is not None and _before(t, mid) and (t.start or "") > (cause.date or "")]
    return not between


def _penalty(r: Ranked, effects: Sequence[Ranked], subject: Ranked | None, m: Matcher) -> float:
    """The factor `r`'s score loses: dated after the subject, or one of the subject's own effects."""
    factor = LATE_PENALTY if _late(r.time, subject) else 1.0
    return factor * LATE_PENALTY if any(m.share(e.text, r.text) >= 0.6 for e in effects) else factor


def _settle(ranked: list[Ranked], effects: Sequence[Ranked], subject: Ranked | None, m: Matcher,
            subject_words: str) -> list[Ranked]:
    """Late causes and the subject's own effects lose their score; the same event found twice is kept once
    (its best score); best first, ties by depth then text order."""
    out: list[Ranked] = []
    for r in sorted(ranked, key=lambda r: -r.score):
        score = r.score * _penalty(r, effects, subject, m)
        if r.text == subject_words or (subject is not None and r.text == subject.text):
            continue  # the subject itself
        same = next((o for o in out if m.share(r.text, o.text) >= 0.8 and m.share(o.text, r.text) >= 0.8), None)
        if same is None:
            out.append(replace(r, score=round(score, 4)))
    return sorted(out, key=lambda r: (-r.score, r.depth))
