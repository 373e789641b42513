"""What the evidence tells happened to or by a name: the clauses of seen chunks that hold it, with their
time adjuncts and appositives left out ("On 19 September 2018 Orvell Logistics went bankrupt." ->
"Orvell Logistics went bankrupt"). After a question that asks for an event was answered with a bare name,
the answer grammar offers these clauses: told to say what happened, a 1.5B model restates the name with
whatever it remembers ("Kvarts Microsystems, the supplier of …"), while the event it means is in a
sentence it has seen."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent.focus import Passage, sentences_of

MAX_WORDS = 16  # a clause copied from the evidence may run past an answer's usual length
MAX_CLAUSES = 6
NAME_JOINERS = frozenset("of the and for de von van &".split())  # lower-case words inside a name
# where one sentence's clauses meet: a semicolon, a coordinated clause, a causal or temporal connective
_CLAUSE_BREAK = re.compile(r";\s*|,\s+(?:and|but|while|so|which|who)\s+|,?\s+(?:because|after|since|when|so that|until)\s+")
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_WHEN = rf"(?:\d{{1,2}}\s+)?{_MONTH}(?:\s+\d{{1,2}})?(?:,?\s+\d{{4}})?|\d{{4}}|the (?:previous|following|next) \w+"
_LEADING_WHEN = re.compile(rf"^(?:(?:In|On|By|From|Shortly after|After|Before|During|Early|Late)\b[^,]{{0,50}}?(?:{_WHEN})|(?:{_WHEN})),?\s+")
_TRAILING_WHEN = re.compile(rf"\s+(?:on|in|by|during|from)?\s*(?:{_WHEN})$")
_APPOSITIVE = re.compile(r"^([A-Z][\w'&-]*(?:\s+(?:[A-Z][\w'&-]*|of|the|and|&))*),\s+[^,]{1,90},\s+(?=[a-z])")


@dataclass
class Told:
    """A sentence told as an event (a timeline's cause) read as a passage."""

    text: str
    doc_id: str = ""
    title: str = ""


def name_key(name: str) -> str:
    """The name's first distinctive word ("Kvarts" of "Kvarts Microsystems"): reports shorten names."""
    for token in re.findall(r"[\w'&-]+", name):
        token = re.sub(r"'s?$", "", token)
        if token[:1].isupper() and token.lower() not in NAME_JOINERS:
            return token
    return ""


def _clean(clause: str) -> str:
    clause = clause.strip(" ,;.\n")
    clause = _LEADING_WHEN.sub("", clause)
    clause = _APPOSITIVE.sub(r"\1 ", clause)
    clause = _TRAILING_WHEN.sub("", clause)
    return clause.strip(" ,;.")


def told_events(name: str, passages: Sequence[Passage]) -> list[str]:
    """The clauses of `passages` that hold `name`'s key word, cleaned, 3 to MAX_WORDS words, in order, at
    most MAX_CLAUSES; [] when the name has no key word or no clause holds it."""
    key = name_key(name)
    if not key:
        return []
    has_key = re.compile(rf"\b{re.escape(key)}\b")
    out: dict[str, None] = {}
    for sentence in sentences_of(passages):
        if not has_key.search(sentence.text):
            continue
        for part in _CLAUSE_BREAK.split(sentence.text):
            clause = _clean(part)
            if has_key.search(clause) and 3 <= len(clause.split()) <= MAX_WORDS and clause != name:
                out.setdefault(clause[0].lower() + clause[1:] if re.match(r"(?:A|An|The) ", clause) else clause)
    return list(out)[:MAX_CLAUSES]
