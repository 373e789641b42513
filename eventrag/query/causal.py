"""Origin questions: "What supplier event led to the 2015 SeaGuard recall?", "What event at a supplier set
off the chain of events that led to the January 2015 SeaGuard S2 recall?", "Which incident caused the
outage?", "What led to the boil-water notice?", "Why did the company lower the reservoir in August 2011?"
("What caused X?" is left out: it may ask for a mechanism rather than an event.)

Such a question asks for an event that links to a known event (the *target*) as its cause. This module
only reads the question's form: its target, what kind of event is asked for ("supplier event", "event at
a supplier", "customer complaint") and whether the chain's start is asked for. The causes themselves are
ranked from the evidence that links them to the target (`agent.causal`, the timeline tool).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from eventrag.dates import find_dates

_CUES = (
    "led to|lead to|leads to|leading to|set off|sets off|caused|causes|triggered|triggers|started|sparked|"
    "prompted|brought about|resulted in|gave rise to|precipitated|set in motion"
)
# "What [kind of] event [at a supplier] led to X?", "What was the event that set off X?", "What caused X?"
_FORM = re.compile(
    rf"^\s*(?:what|which)\b(?P<head>[^?]*?)\s*\b(?:ultimately\s+|eventually\s+|first\s+|originally\s+|"
    rf"directly\s+)?(?P<cue>{_CUES})\s+(?P<target>[^?]+?)[\s?.!]*$",
    re.I,
)
# the head must ask for an event, not for a person or a thing ("Which company led to ..." is not one)
_EVENT_NOUN = re.compile(
    r"\b(?:events?|incidents?|accidents?|happenings?|occurrences?|developments?|problems?|failures?|"
    r"disasters?|mishaps?|setbacks?|decisions?|changes?|happened|happening|occurred|"
    r"launch(?:es)?|complaints?|fires?|floods?|storms?|strikes?|mergers?|acquisitions?|sales?|crash(?:es)?|"
    r"explosions?|wars?|battles?|elections?|meetings?|announcements?|lawsuits?|rulings?|recalls?|"
    r"resignations?|investigations?|scandals?|crises|crisis|outbreaks?|collapses?|shortages?|delays?|"
    r"losses|loss|defeats?|protests?|attacks?|breakdowns?|outages?|leaks?|deals?|contracts?|orders?)\b",
    re.I,
)
# "Why did Corrow Valley Water lower the reservoir in August 2011?", "Why was the scheme cancelled?": the
# reason asked for is what led to the past event the rest of the question tells ("Why is the sea salty?"
# asks for a mechanism: left to the reader)
_WHY = re.compile(r"^\s*why\s+(?:did|was|were|had)\s+(?P<target>[^?]+?)[\s?.!]*$", re.I)
# "What year did the fire lead to ...", "What time of day did ...": asks for something else about it
_NOT_EVENT = re.compile(r"\b(?:did|does|do|year|date|day|month|time|when|where|who|how)\b", re.I)
_HEAD_FILLER = re.compile(r"^(?:\s*(?:was|is|were|are|the|a|an|single|one|initial|first|original|root)\b)+", re.I)
_HEAD_TAIL = re.compile(r"\s*\b(?:that|which|to have|has|had|have)\s*$", re.I)
# "the chain of events that led to X", "the events leading to X": the target is X, the start is asked for
_CHAIN = re.compile(
    rf"^(?:the|a)\s+(?:(?:whole|entire)\s+)?(?:chain|series|sequence|string|cascade)\s+of\s+events?\s+"
    rf"(?:that|which)?\s*(?:{_CUES})\s+",
    re.I,
)
_EVENTS_TO = re.compile(rf"^(?:the\s+)?events?\s+(?:that|which)?\s*(?:{_CUES})\s+", re.I)
_KIND_WORDS = re.compile(r"\b(?:kind|type|sort)\s+of\b", re.I)


class CausalQuestion(BaseModel):
    target: str  # the event the chain ends in: "the January 2015 SeaGuard S2 recall"
    kind: str = "event"  # the kind of event asked for: "supplier event", "event at a supplier", "customer complaint"
    chain: bool = False  # the question names the chain ("set off the chain of events that led to")

    @property
    def target_year(self) -> str | None:
        """The year the target names ("the 2015 SeaGuard recall"), if it names one."""
        years = [d.start[:4] for _, _, d in find_dates(self.target) if d.start]
        return years[0] if years else None


def parse_causal(question: str) -> CausalQuestion | None:
    """The question's target and the kind of event asked for when it asks which event led to (set off, caused) a known
    event; None for any other question (including "Which company led to ...": not an event)."""
    text = " ".join(question.split())
    why = _WHY.match(text)
    if why is not None:
        target = why["target"].strip(" ,;:")
        return CausalQuestion(target=target) if len(target.split()) >= 3 else None  # "Why did it?"
    m = _FORM.match(text)
    if m is None:
        return None
    head = _KIND_WORDS.sub(" ", m["head"]).strip()
    # "What led to X?" asks for the event that did; "What caused X?" / "What causes X?" may ask for a
    # mechanism, and "Which company led to X?" for a thing: left to the reader
    plain = not head and m["cue"].lower() not in {"caused", "causes"}
    if not (_EVENT_NOUN.search(head) or plain) or _NOT_EVENT.search(head):
        return None
    target, chain = m["target"].strip(" ,;:"), m["cue"].lower() in {"set off", "sets off", "set in motion"}
    inner = _CHAIN.match(target) or _EVENTS_TO.match(target)
    if inner is not None:
        target, chain = target[inner.end():].strip(), True
    if len(target.split()) < 2 or _FORM.match(target):
        return None  # "What caused it?", or a nested question
    kind = " ".join(_HEAD_TAIL.sub("", _HEAD_FILLER.sub("", head)).split()).strip(" ,;:")
    return CausalQuestion(target=target, kind=re.sub(r"\bhappened\b", "event", kind) or "event", chain=chain)
