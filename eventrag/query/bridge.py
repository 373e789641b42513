"""Bridge questions: a description stands where a name should be.

"What role did *the inspector who signed the recall order* take up on 1 April 2022?" is two questions:
who is the inspector who signed the recall order (Dagny Solberg), then what role did Dagny Solberg take
up on 1 April 2022. A small reader shown both facts at once answers the first hop's entity; asked one
concrete question at a time it need not. This module holds the pure half of that move:

- `split_bridge(question, template)`: a model copies the question with the description replaced by
  `#1` (the template); the description is what the template left out, accepted only when the template
  keeps every other word of the question and the description is one (a determiner or possessive and a
  common noun: "the composer of Aschenbrodel", "Hello Love's performer" — not a name such as "the Nordic
  Marine Metrology Board");
- `Bridge.inner`: the question that names the described thing ("Who is the inspector who signed ...?");
- `Bridge.fill(answer)`: the outer question with the name found ("What role did Dagny Solberg take up
  on 1 April 2022?");
- `nested_bridge(bridge)`: a description inside the description, split by rule ("the pressure element of
  *the sensor that Nordhav Energy chose*": its inner question is resolved first);
- `rule_bridge(question)`: the fallback when the model's copy is refused: "Which company made *the
  pressure element fitted in the units recalled in 2015*?" (a wh-phrase, a verb, then a description
  that runs to the end of the question and carries a relative clause or a participle);
- `may_describe(question)`: a cheap test that a question can hold a description at all (no model call
  for "In which town is HT-Core made?").
"""

from __future__ import annotations

import re

from pydantic import BaseModel

PLACEHOLDER = "#1"
_DETERMINERS = {"the", "a", "an"}
_FUNCTION = {"of", "and", "the", "a", "an", "in", "on", "at", "for", "to", "by", "with", "from", "or", "de", "von", "van"}
_PERSON = {
    "person", "man", "woman", "author", "writer", "director", "actor", "actress", "singer", "performer",
    "composer", "inspector", "founder", "president", "player", "artist", "painter", "poet", "leader",
    "king", "queen", "father", "mother", "son", "daughter", "wife", "husband", "spouse", "coach", "manager",
    "creator", "producer", "owner", "star", "musician", "member", "chief", "head", "ceo", "minister",
}  # fmt: skip
_RELATIVE = re.compile(r"\b(?:who|that|which|whose|where|whom)\b")
_POSSESSIVE = re.compile(r"['’]s\s+[a-z]")  # "Brother's performers"
_PARTICIPLE = r"[a-z]+(?:ed|en)\s+(?:in|by|at|on|from|with|for|to|after|as|into|near)"  # "recalled in"
_WORD = re.compile(r"[A-Za-z][\w'’-]*")
MAX_ANSWER_WORDS = 10  # a hop's answer longer than this is a sentence, not a name to carry


class Bridge(BaseModel):
    question: str
    description: str  # the words of the question that describe instead of naming
    outer: str  # the question with the description replaced by PLACEHOLDER

    @property
    def inner(self) -> str:
        """The question that names the described thing."""
        words = [w.lower() for w in _WORD.findall(self.description)]
        person = " who " in f" {self.description.lower()} " or any(w in _PERSON for w in words[:3])
        return f"{'Who' if person else 'What'} is {self.description}?"

    def fill(self, answer: str) -> str:
        return self.outer.replace(PLACEHOLDER, answer.strip(), 1)


def _flat(text: str) -> str:
    return " ".join(text.split()).rstrip("?").strip()


def _described(more_words: int) -> re.Pattern[str]:
    """A determiner, its noun with up to `more_words` lowercase words, then what makes it a description."""
    return re.compile(
        rf"\b(?:[Tt]he|[Aa]n?)\s+[A-Za-z][\w-]*(?:\s+[a-z][\w-]*){{0,{more_words}}}\s+"
        rf"(?:who|that|which|whose|where|of|(?:in|on|at|of|from) which|{_PARTICIPLE})\b"
    )


_DESCRIBED = _described(2)


def may_describe(question: str) -> bool:
    """True when a noun after a determiner is followed by a relative clause, "of" or a participle ("the
    inspector who", "the author of", "the county in which", "the units recalled in"), or a possessive
    by a lowercase word ("Brother's performers"): without one there is no description to look for."""
    text = f" {_flat(question)} "
    return bool(_DESCRIBED.search(text) or _POSSESSIVE.search(text))


def is_description(text: str) -> bool:
    """A determiner or possessive and at least one common (lowercase) word that is not a function word;
    after a determiner, a capitalised first word ("the German musician whose ...") only with a relative
    clause."""
    words = text.split()
    if len(words) < 2:
        return False
    possessive = bool(_POSSESSIVE.search(text))
    if words[0].lower() not in _DETERMINERS and not possessive:
        return False
    body = words[1:] if words[0].lower() in _DETERMINERS else words
    if not possessive and body[0][0].isupper() and not _RELATIVE.search(text):
        return False  # "the SeaGuard S2 units recalled in 2015": a name narrowed, not a description
    return any(w[0].islower() and w.strip(",.").lower() not in _FUNCTION for w in body if w[0].isalpha())


def split_bridge(question: str, template: str | None) -> Bridge | None:
    """The description the template replaced by #1, if the template keeps the rest of the question word
    for word (case aside) and what it replaced is a description; None otherwise."""
    if not template or template.count(PLACEHOLDER) != 1:
        return None
    q = _flat(question)
    prefix, suffix = (" ".join(part.split()) for part in template.split(PLACEHOLDER))
    suffix = suffix.rstrip("?").strip()
    low = q.lower()
    if not low.startswith(prefix.lower()) or not low.endswith(suffix.lower()):
        return None
    start, end = len(prefix), len(q) - len(suffix)
    if end - start < 3 or (prefix and q[start] != " ") or (suffix and q[end - 1] != " " and suffix[0].isalnum()):
        return None
    description = q[start:end].strip(" ,")
    if not is_description(description) or len(prefix.split()) + len(suffix.split()) < 1:
        return None
    outer = f"{q[:start].strip()} {PLACEHOLDER} {q[end:].strip()}".strip().replace(f"{PLACEHOLDER} '", f"{PLACEHOLDER}'")
    return Bridge(question=question, description=description, outer=outer + "?")


def same_question(a: str, b: str) -> bool:
    """The same question, case, spacing and the final "?" aside."""
    return _flat(a).lower() == _flat(b).lower()


def carried(answer: str | None) -> str | None:
    """A hop's answer as a name to put into the next question: stripped, without a final period; None
    when there is none or it reads as a sentence."""
    if not answer:
        return None
    text = answer.strip().strip('"').rstrip(".").strip()
    if not text or len(text.split()) > MAX_ANSWER_WORDS:
        return None
    return text


_NESTING = re.compile(r" (?:of|in|by|for|from|at) (?=(?:[Tt]he|[Aa]n?) )")


def nested_bridge(bridge: Bridge) -> Bridge | None:
    """The description nested in `bridge`'s after "of/in/by/for/from/at the ..." ("the pressure element of
    the sensor that Nordhav Energy chose in 2017" → "the sensor that Nordhav Energy chose in 2017"), as a
    bridge of `bridge.inner`; None when there is none."""
    for m in _NESTING.finditer(bridge.description):
        tail = bridge.description[m.end() :]
        if is_description(tail):
            inner = bridge.inner
            return Bridge(question=inner, description=tail, outer=inner.replace(tail, PLACEHOLDER, 1))
    return None


_DETERMINER = re.compile(r"(?:^|(?<=\s))(?:[Tt]he|[Aa]n?)\s")
_HEAD = _described(3)  # a span's start: a longer noun than may_describe needs ("an independent mom-and-pop house that")
_CLAUSE_END = re.compile(r"\s*(?:[,;:?]|\b(?:and|or)\s|$)")
_ASKING = {"what", "whom", "who", "which", "when", "where", "why", "how"}
_NEVER_RELATIVE = {"what", "when", "why", "how"}  # "of what treaty": the question's gap, not a description
MAX_DESCRIPTIONS = 3


def descriptions(question: str) -> list[str]:
    """The spans of `question` that describe a thing instead of naming it, innermost first: from a
    determiner whose noun a relative clause, "of" or a participle follows to the end of its clause
    ("...the city where Kerry Saxby-Junna was born?" -> "the city where Kerry Saxby-Junna was born").
    Each is a `resolve` argument: the question's start, a span ending in a question word or a function
    word ("a citizen of") is none."""
    text = _flat(question)
    found: list[str] = []
    for m in _DETERMINER.finditer(text):
        head = _HEAD.match(text, m.start())
        if m.start() == 0 or head is None:
            continue
        span = text[m.start() : _CLAUSE_END.search(text, head.end()).start()].strip(" ,")
        low = span.lower().split()
        if (is_description(span) and len(low) >= 4 and low[-1] not in _ASKING | _FUNCTION
                and not _NEVER_RELATIVE & set(low) and span not in found):  # fmt: skip
            found.append(span)
    return found[::-1][:MAX_DESCRIPTIONS]


_VERBS = r"(?:[a-z]+ed|made|built|wrote|bought|sold|ran|led|won|owns|makes|builds|writes|runs|leads|supplies|supplied)"
_RULE = re.compile(rf"^(?P<head>(?:Which|What|Who)(?: [a-z]+){{0,2}} {_VERBS}) (?P<desc>(?:the|a|an) [a-z].*)$")
_MARKER = re.compile(rf"\b(?:who|that|which|whose|where)\b|\b{_PARTICIPLE}\b")


def rule_bridge(question: str) -> Bridge | None:
    """A description that runs from just after the question's verb to its end, found without a model:
    "Which company made the pressure element fitted in the SeaGuard S2 units recalled in January 2015?"
    → "the pressure element fitted in ..." (a relative clause or a participle must mark it)."""
    m = _RULE.match(_flat(question))
    if m is None or not _MARKER.search(m.group("desc")) or not is_description(m.group("desc")):
        return None
    return Bridge(question=question, description=m.group("desc"), outer=f"{m.group('head')} {PLACEHOLDER}?")
