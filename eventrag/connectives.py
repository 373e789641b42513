"""Causal connectives: which part of a sentence (or of two adjacent sentences) is told as the cause of which.

"The order followed a six-week investigation opened after the complaint from Fjordlaks AS." states two
links: the investigation led to the order ("followed"), the complaint led to the investigation ("after").
`causal_links(sentence, previous)` finds every such link with its direction:

- forward connectives put the cause before them: "the fire *led to* a shortage", "the storm *forced* the
  council to close the bridge", "the leak *made* a new pump *necessary*";
- backward ones put it after: "the bridge closed *because* the storm...", "*due to*", "*following*";
  opening a sentence ("*After* the inspection, the board ordered ...") the cause runs to the first comma;
- passive forward verbs are backward: "the closure was *prompted by* the storm";
- a sentence opening with "As a result", "Consequently", "This led to"... takes the previous sentence
  as its cause (`across`).

Each connective has a weight: "because" states causation, "after" may only state time order. Pure text
rules, no model: the rules extractor (CAUSES edges) and the agent's timeline tool share them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# forward: cause, connective, effect ("which" / "that" before the verb are part of the cause's clause)
_FORWARD = {
    "led to": 1.0, "leads to": 1.0, "lead to": 1.0, "leading to": 1.0, "caused": 1.0, "causes": 1.0,
    "causing": 1.0, "resulted in": 1.0, "results in": 1.0, "resulting in": 1.0, "triggered": 1.0,
    "triggering": 1.0, "prompted": 1.0, "prompting": 1.0, "forced": 1.0, "forcing": 1.0, "sparked": 1.0,
    "set off": 1.0, "brought about": 1.0, "gave rise to": 1.0, "meant that": 0.8, "so that": 0.6,
    "compelled": 1.0, "obliged": 0.9, "meant": 0.7, "which meant": 0.8, "thereby": 0.8, "contributed to": 0.8,
}  # fmt: skip
# backward: effect, connective, cause
_BACKWARD = {
    "because of": 1.0, "because": 1.0, "due to": 1.0, "owing to": 1.0, "as a result of": 1.0,
    "as a consequence of": 1.0, "in response to": 0.9, "in the wake of": 0.8, "thanks to": 0.9,
    "on account of": 0.9, "caused by": 1.0, "triggered by": 1.0, "prompted by": 1.0, "forced by": 1.0,
    "brought about by": 1.0, "resulted from": 1.0, "stemmed from": 1.0, "arose from": 1.0,
    "the result of": 1.0, "a result of": 1.0, "attributed to": 0.9, "blamed on": 0.9, "on the grounds that": 0.9,
    "in light of": 0.8, "following": 0.6, "followed": 0.6, "amid": 0.5, "after": 0.5, "since": 0.3,
}  # fmt: skip
# sentence openers whose cause is the previous sentence
_ACROSS = {
    "as a result": 1.0, "as a consequence": 1.0, "consequently": 1.0, "therefore": 1.0, "because of this": 1.0,
    "because of that": 1.0, "for this reason": 1.0, "for that reason": 1.0, "in response": 0.9, "thus": 0.8,
    "hence": 0.9, "this led to": 1.0, "that led to": 1.0, "this forced": 1.0, "that forced": 1.0,
    "this prompted": 1.0, "that prompted": 1.0, "this meant that": 0.8, "this caused": 1.0,
    "this triggered": 1.0, "this made": 0.8, "so": 0.6,
}  # fmt: skip
_NECESSARY = re.compile(r"\bmade\b(?P<effect>[^.;]{2,80}?)\b(?:necessary|inevitable|unavoidable|impossible)\b"
                        r"(?P<rest>[^.;]*)", re.I)
_AFTER_VERB = re.compile(r"\b(?:ordered|decided|announced|agreed|closed|suspended|halted|cancelled|resigned|"
                         r"launched|opened|called|issued|imposed|banned|replaced|switched|moved)\b", re.I)
# "after ten days", "after midnight": time passing, not a cause
_DURATION = re.compile(r"^\s*(?:(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|several|a few|many|some)"
                       r"(?:\s+[a-z]+)?\s+(?:minutes?|hours?|days?|weeks?|months?|years?|decades?)\b|midnight|dawn|"
                       r"noon|dark|that|this|which|then)", re.I)
_PASSIVE = re.compile(r"\b(?:was|were|is|are|been|being)\s+$", re.I)
# "since 2014" / "since March": time, not a reason
_SINCE_TIME = re.compile(r"^\s*(?:then|\d|early|late|the (?:start|end|beginning)|(?:jan|feb|mar|apr|may|jun|jul|"
                         r"aug|sep|oct|nov|dec)[a-z]*\b)", re.I)
_REFERENCE = re.compile(r"^\s*(?:this|that|these|it|they|the (?:move|decision|change|incident|event|order|"
                        r"failure|problem|episode|outcome))\b", re.I)

_BARE_REFERENCE = re.compile(r"^(?:this|that|these|those|it|they)$", re.I)


def _alternation(words: dict[str, float]) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")\b", re.I)


_FORWARD_RE, _BACKWARD_RE = _alternation(_FORWARD), _alternation(_BACKWARD)
# "the discovery led the company to cancel the scheme" (not "led to", not "led the company" alone)
_LED_OBJECT_TO = re.compile(r"\b(led)\b(?=\s+(?!to\b)[^.;,]{1,50}?\bto\s+[a-z]+)", re.I)
_ACROSS_RE = re.compile(r"^\s*(" + "|".join(re.escape(w) for w in sorted(_ACROSS, key=len, reverse=True)) + r")\b,?\s*",
                        re.I)


@dataclass(frozen=True)
class CausalLink:
    """One stated link: `cause` and `effect` are spans of `sentence` (or `cause` is the previous sentence
    when `across`); `weight` is how surely the connective states causation (1.0: "because")."""

    cause: str
    effect: str
    connective: str
    weight: float
    sentence: str
    across: bool = False
    effect_side: str = ""  # the whole side of the sentence the effect is told on (the effect cut to its clause)


def _tidy(text: str) -> str:
    return " ".join(text.split()).strip(" ,;:.-\u2014")


# where a clause ends: a cause or effect span does not run past one
_STOP_BEFORE = re.compile(r";|:\s|\s[-\u2013\u2014]\s|,\s+(?:and|but|while|whereas)\s", re.I)
_STOP_AFTER = re.compile(r";|:\s|\s[-\u2013\u2014]\s|,\s+(?:and|but|while|whereas|which|who|where|[a-z]+ed|[a-z]+ing)\s")
_PARTICIPLE_BREAK = re.compile(r",\s+(?=(?:[a-z]+ed|[a-z]+ing)\s)")
_TRAILING_AUX = re.compile(r"(?:\s+(?:had|has|have|was|were|is|are|been|had been|has been|would|could|which|that|who))+\s*$", re.I)


def _clause_before(text: str) -> str:
    """The clause ending at `text`'s end: after its last clause break, without trailing auxiliaries
    ("the farmer whose complaint had" -> "the farmer whose complaint")."""
    parts = _STOP_BEFORE.split(text)
    return _tidy(_TRAILING_AUX.sub("", parts[-1]))


def _clause_after(text: str) -> str:
    """The clause starting at `text`'s start: up to its first clause break (", agreed in ...")."""
    return _tidy(_STOP_AFTER.split(text, maxsplit=1)[0])


def _link(cause: str, effect: str, connective: str, weight: float, sentence: str, across: bool = False,
          side: str = "") -> CausalLink | None:
    cause, effect = _tidy(cause), _tidy(effect)
    if len(cause) < 2 or len(effect) < 4:
        return None
    return CausalLink(cause, effect, connective.lower(), weight, sentence, across, _tidy(side) or effect)


def _opening(sentence: str) -> CausalLink | None:
    """ "Because C, E." / "After C, the board ordered E." / "Following C, E.": cause up to the first comma."""
    m = _BACKWARD_RE.match(sentence.lstrip())
    if m is None:
        return None
    body = sentence.lstrip()
    head, comma, rest = body[m.end():].partition(",")
    if not comma or not rest.strip():
        return None
    word = m.group(1).lower()
    if word == "since" and _SINCE_TIME.match(head):
        return None
    if word == "after" and not _AFTER_VERB.search(rest):
        return None  # "After three years, ..." is time; "After the inspection, the board ordered" a reaction
    return _link(head, rest, word, _BACKWARD[word], sentence)


def _inline(sentence: str, opening: CausalLink | None) -> list[CausalLink]:
    out: list[CausalLink] = []
    skip = len(sentence) - len(sentence.lstrip()) + len(opening.connective) if opening else 0
    backward = list(_BACKWARD_RE.finditer(sentence))
    starts = {m.start() for m in backward}  # "caused by" is backward: not also the forward "caused"
    ahead = [m for m in [*_FORWARD_RE.finditer(sentence), *_LED_OBJECT_TO.finditer(sentence)] if m.start() not in starts]
    found = sorted([(m, True) for m in ahead] + [(m, False) for m in backward], key=lambda x: x[0].start())
    last_end = 0  # the effect told before a backward connective starts after the previous connective
    for m, forward in found:
        word = m.group(1).lower()
        before, after = sentence[: m.start()], sentence[m.end():]
        passive = forward and bool(_PASSIVE.search(before))  # "was prompted by": handled as backward
        skipped = (m.start() < skip or passive or (word == "since" and _SINCE_TIME.match(after))
                   or (word == "so that" and not before.strip())
                   or (word in ("after", "following") and _DURATION.match(after))
                   or (word == "following" and re.search(r"\b(?:the|a|an)\s*$", before, re.I)))  # "the following year"
        if not skipped:
            if forward:
                weight = _FORWARD.get(word, 1.0)  # "led" (an object, then "to"): `_LED_OBJECT_TO`
                link = _link(_clause_before(before), _clause_after(after), word, weight, sentence, side=after)
            else:
                told = before[last_end:]
                if last_end:  # "... triggered the recall, agreed in March to ...": the recall is the earlier link's
                    told = _PARTICIPLE_BREAK.split(told, maxsplit=1)[-1]
                link = _link(_clause_after(after), _clause_before(told), word, _BACKWARD[word], sentence, side=told)
            if link is not None:
                out.append(link)
        last_end = m.end()
    for m in _NECESSARY.finditer(sentence):  # "made a new pump necessary", "made it necessary to close the road"
        said = m.group("effect") if m.group("effect").strip().lower() != "it" else m.group("rest")
        link = _link(_clause_before(sentence[: m.start()]), said, "made necessary", 1.0, sentence)
        if link is not None:
            out.append(link)
    return out


def causal_links(sentence: str, previous: str | None = None) -> list[CausalLink]:
    """The causal links `sentence` states, each with its cause and effect span; with `previous` (the
    sentence before it in its passage) also the link from it that an opener ("As a result, ...") or a
    reference ("This forced ...") states."""
    sentence = " ".join(sentence.split())
    out: list[CausalLink] = []
    opening = _opening(sentence)
    if opening is not None:
        out.append(opening)
    out += [link for link in _inline(sentence, opening) if not _BARE_REFERENCE.match(link.cause)]
    if previous:
        m = _ACROSS_RE.match(sentence)
        if m is not None:
            word = m.group(1).lower()
            rest = sentence[m.end():] if not word.startswith(("this", "that")) else sentence
            link = _link(previous, rest, word, _ACROSS[word], f"{' '.join(previous.split())} {sentence}", across=True)
            if link is not None:
                out.append(link)
        else:  # "It forced ...", "The decision led to ...": the cause named is the previous sentence's event
            for link in _inline(sentence, opening):
                if _REFERENCE.match(link.cause) and sentence.startswith(link.cause):
                    joined = f"{' '.join(previous.split())} {sentence}"
                    out.append(CausalLink(_tidy(previous), link.effect, link.connective, link.weight, joined, True,
                                          link.effect_side))
    return out


def is_causal(sentence: str) -> bool:
    """True when `sentence` states a causal link of its own (a connective inside it)."""
    return bool(causal_links(sentence))
