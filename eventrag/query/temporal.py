"""Temporal questions answered from dates, not by a model: "which came first, A or B", "who is older",
"how many full years after A did B".

A 1.5B reader given both dated sentences still answers "3" for "how many full years after HTI was
founded did Brandt Meridian acquire it" (14 April 2009, 15 October 2020) and picks a side at random
for "which happened first". The arithmetic is exact once each side has its date, so:

- `parse_temporal`: the question's form (order or duration), its two sides, what is compared;
- `date_near`: the date in a sentence that belongs to a side (nearest to the side's words);
- `order_answer` / `duration_answer`: the answer from the two dates, or None when the dates cannot
  decide it (the same year at year granularity, an unknown date).

Finding each side's dated sentence in the evidence is the caller's (the agent's `agent.temporal`).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Literal

from pydantic import BaseModel

from eventrag.dates import find_dates
from eventrag.schema import EventTime

_EARLY = {"first", "earlier", "earliest", "sooner", "older", "oldest"}
_LATE = {"later", "latest", "last", "younger", "youngest", "newer", "newest", "more recently", "most recently"}
_AGE = {"older", "oldest", "younger", "youngest"}
_CMP = "|".join(sorted(_EARLY | _LATE, key=len, reverse=True))
# "Which happened first: A or B?", "Who is the oldest, A or B?", "Which band was formed first A or B?"
_ORDER = re.compile(rf"^\s*(?:which|who|what)\b(?P<pre>[^,:;?]*?)\b(?P<cmp>{_CMP})\b[\s,:;-]*(?P<rest>.+?)[\s?.]*$", re.I)
# "A or B, which came first?"
_ORDER_AFTER = re.compile(rf"^\s*(?P<rest>.+?)\s*[,;:]\s*(?:which|who)\b(?P<pre>[^?]*?)\b(?P<cmp>{_CMP})\b[\s?.]*$", re.I)
_UNIT = r"(?P<unit>years|months|days|decades)"
# "How many full years after A did B?" (A: "HTI was founded", B: "Brandt Meridian acquire it")
_AFTER = re.compile(rf"^\s*how many (?P<full>full |complete |whole )?{_UNIT} (?:after|before|since) (?P<rest>.+?)[\s?.]*$", re.I)
# "How many years passed between A and B?"
_BETWEEN = re.compile(rf"^\s*how many (?P<full>full |complete |whole )?{_UNIT}\b.*?\bbetween (?P<a>.+?) and (?P<b>.+?)[\s?.]*$", re.I)
_AUX_DO = re.compile(r"\s(did|does|do)\s", re.I)
_AUX_BE = re.compile(r"\s(was|were|is|are|had|has|have)\s", re.I)
_BRIDGE = re.compile(r"\b(?:who|whose|whom|that|(?:has|have|had|with)\s+(?:the|a|an|its|their))\b", re.I)
_PRONOUN = re.compile(r"\b(it|him|her|them|they|he|she)\b", re.I)
_FILLER = {"is", "was", "were", "are", "the", "a", "an", "one", "of", "these", "two", "band", "person", "happened", "came", "out"}


class TemporalQuestion(BaseModel):
    kind: Literal["order", "duration"]
    sides: tuple[str, str]
    want: Literal["earliest", "latest"] = "earliest"  # order: which side to name
    unit: Literal["years", "months", "days", "decades"] = "years"  # duration
    full: bool = False  # duration: whole units only ("full years": anniversaries)
    predicate: str = ""  # what is dated for both sides ("born", "formed"; "" = the side says it)

    questions: tuple[str, str] = ("", "")  # each side as a "When ...?" question (the plan's sub-questions)

    def side_query(self, i: int) -> str:
        """What to look for to date side `i`: its words plus the compared predicate."""
        return f"{self.sides[i]} {self.predicate}".strip()


def when_question(side: str, predicate: str = "", aux: str = "") -> str:
    """A side as a "When ...?" question: "HTI was founded" -> "When was HTI founded?"."""
    if aux:
        return f"When {aux.lower()} {side}?"
    m = re.match(r"^(?P<subj>.+?)\s+(?P<aux>was|were|is|are|had|has)\s+(?P<rest>.+)$", side, re.I)
    if m:
        return f"When {m['aux'].lower()} {m['subj']} {m['rest']}?"
    if predicate:
        return f"When was {side} {predicate}?"
    return f"When was {side}?" if len(side.split()) < 3 or side.lower().startswith("the ") else f"When did it happen: {side}?"


def _split_or(rest: str) -> tuple[str, str] | None:
    parts = re.split(r"\s+or\s+", rest.strip(" ,:;?"), flags=re.I)
    if len(parts) != 2 or not all(p.strip() for p in parts):
        return None
    return parts[0].strip(" ,:;"), parts[1].strip(" ,:;?")


def _predicate(pre: str, cmp: str, wh: str) -> str:
    words = [w for w in re.findall(r"[A-Za-z]+", pre.lower()) if w not in _FILLER]
    if cmp.lower() in _AGE and (wh == "who" or not words or "born" in words):
        return "born"
    return " ".join(w for w in words if w not in {"which", "who", "what"})


def _order(question: str) -> TemporalQuestion | None:
    for rx in (_ORDER, _ORDER_AFTER):
        m = rx.match(question)
        if not m:
            continue
        sides = _split_or(m["rest"])
        if sides is None or _BRIDGE.search(m["pre"]):
            continue  # "the film whose director is older": the sides' own dates do not decide it
        wh = question.strip().split()[0].lower()
        cmp = m["cmp"].lower()
        want: Literal["earliest", "latest"] = "earliest" if cmp in _EARLY else "latest"  # "older" = born earlier
        pred = _predicate(m["pre"], cmp, wh)
        questions = (when_question(sides[0], pred), when_question(sides[1], pred))
        return TemporalQuestion(kind="order", sides=sides, want=want, predicate=pred, questions=questions)
    return None


def _split_clause(rest: str) -> tuple[str, str, str] | None:
    """"HTI was founded did Brandt Meridian acquire it" -> ("HTI was founded", "Brandt Meridian acquire it",
    "did"): at the last do-auxiliary, else at the last be/have-auxiliary that leaves a clause of 2+ words."""
    for rx in (_AUX_DO, _AUX_BE):
        hits = [m for m in rx.finditer(rest) if len(rest[: m.start()].split()) >= 2]
        if hits:
            m = hits[-1]
            a, b = rest[: m.start()].strip(), rest[m.end() :].strip()
            if a and b:
                return a, b, m.group(1)
    return None


def _subject(clause: str) -> str:
    m = re.match(r"^(.+?)\s+(?:was|were|is|are|had|has|did)\b", clause, re.I)
    return m.group(1) if m else clause


def _duration(question: str) -> TemporalQuestion | None:
    aux = ""
    m = _AFTER.match(question)
    if m:
        split = _split_clause(m["rest"])
        if split is None:
            return None
        a, b, aux = split
    else:
        m = _BETWEEN.match(question)
        if m is None:
            return None
        a, b = m["a"].strip(), m["b"].strip()
    if _PRONOUN.search(b):
        b = _PRONOUN.sub(_subject(a), b, count=1)
    return TemporalQuestion(
        kind="duration", sides=(a, b), unit=m["unit"].lower(), full=bool(m["full"]),  # type: ignore[arg-type]
        questions=(when_question(a), when_question(b, aux=aux)),
    )


def parse_temporal(question: str) -> TemporalQuestion | None:
    """The question's temporal form, or None when it asks something else."""
    q = " ".join(question.split())
    if len(q) > 400:
        return None
    return _duration(q) or _order(q)


def date_near(sentence: str, anchors: list[str]) -> EventTime | None:
    """The date of `sentence` nearest to the first occurrence of any anchor word (the side's words,
    "born"...), else its first date; None when the sentence has no date."""
    found = [(s, e, t) for s, e, t in find_dates(sentence) if t.start]
    if not found:
        return None
    low = sentence.lower()
    spots = [m.start() for a in anchors if a for m in re.finditer(rf"\b{re.escape(a.lower())}", low)]
    if not spots:
        return found[0][2]
    return min(found, key=lambda d: (min(abs(d[0] - p) for p in spots), d[0]))[2]


def _bounds(t: EventTime) -> tuple[date, date]:
    start = date.fromisoformat(t.start or "")
    return start, date.fromisoformat(t.end or t.start or "")


def order_answer(q: TemporalQuestion, a: EventTime, b: EventTime) -> str | None:
    """The side that came first (or last, per `q.want`); None when the intervals overlap."""
    first = earlier_of(a, b)
    if first is None:
        return None
    pick = first if q.want == "earliest" else 1 - first
    return q.sides[pick]


def _full_between(x: date, y: date, unit: str) -> int:
    months = (y.year - x.year) * 12 + (y.month - x.month) - (1 if y.day < x.day else 0)
    return months // 12 if unit == "years" else months // 120 if unit == "decades" else months


def span_between(a: EventTime, b: EventTime, unit: str = "years", full: bool = True) -> int | None:
    """The time between two dates' starts in `unit` (years, months, days, decades): whole units at day
    precision (`full`), calendar difference when a date is only a year or a month; None when their
    precision cannot give it (days between two years)."""
    (a0, _), (b0, _) = _bounds(a), _bounds(b)
    x, y = sorted((a0, b0))
    coarse = {a.granularity, b.granularity} - {"day"}
    if unit == "days":
        return None if coarse else (y - x).days
    if coarse and ("year" in coarse or "decade" in coarse):
        if unit not in ("years", "decades"):
            return None
        return (y.year - x.year) // (10 if unit == "decades" else 1)
    if full or not coarse:
        return _full_between(x, y, unit)
    n = (y.year - x.year) * 12 + (y.month - x.month)
    return n // 12 if unit == "years" else n // 120 if unit == "decades" else n


def earlier_of(a: EventTime, b: EventTime) -> int | None:
    """0 when `a` ends before `b` starts, 1 when `b` ends before `a` starts, None when they overlap."""
    (a0, a1), (b0, b1) = _bounds(a), _bounds(b)
    return 0 if a1 < b0 else 1 if b1 < a0 else None


def span_text(a: EventTime, b: EventTime, unit: str = "years", full: bool = True) -> str | None:
    """`span_between` as an answer reads it ("11 years", "1 month"); None when the precision cannot give it."""
    n = span_between(a, b, unit, full)
    return None if n is None else f"{n} {unit if n != 1 else unit[:-1]}"


def duration_answer(q: TemporalQuestion, a: EventTime, b: EventTime) -> str | None:
    """The time between the sides' dates in `q.unit` ("11 years"); whole units at day precision,
    calendar difference when a date is a year or month; None when the precision cannot give it."""
    return span_text(a, b, q.unit, q.full)
