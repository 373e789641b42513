"""The kind of cause a question asks for ("what *supplier* event led to X"), and the causes told as that kind.

A cause is of the kind when the report telling it uses the kind's words, matched by stem ("supplier" is
held by "supply agreement", "banking" by "Castellan Bank"). The report is the unit that says who a
participant is; the event's own sentence often only names it ("a fire broke out at Kvarts' plant").

Causes of the kind come first, the one furthest back along the chain first. Naming a kind points past the
nearest link to where a chain of that kind starts: a nearer cause of the same kind is most often one of
its effects (the bank ends a sponsorship after it took over the sponsor). The rest follow in their order.
Generic event words ("event", "incident") name no kind: a kind made only of them changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent.causal import Ranked
from agent.focus import stem, words

GENERIC = frozenset(
    stem(w) for w in "event events incident incidents happening happenings occurrence occurrences development "
    "developments thing things something kind type sort cause causes chain series".split()
)


def kind_stems(kind: str) -> frozenset[str]:
    """The stems of `kind` that name a kind of event: "event at a supplier" -> {"suppl"}."""
    return frozenset(stem(w) for w in words(kind)) - GENERIC


def of_kind(stems: frozenset[str], text: str) -> bool:
    return bool(stems & {stem(w) for w in words(text)})


def by_kind(causes: Sequence[Ranked], kind: str, report_of: Callable[[Ranked], str]) -> tuple[list[Ranked], int]:
    """`causes` with those of `kind` first (furthest back first, then best linked; `report_of` gives the text
    of the report telling a cause), then the others in their order; and how many are of the kind."""
    stems = kind_stems(kind)
    if not stems:
        return list(causes), 0
    told = [of_kind(stems, f"{r.text} {report_of(r)}") for r in causes]
    matched = sorted((r for r, t in zip(causes, told, strict=True) if t), key=lambda r: (-r.depth, -r.score))
    return matched + [r for r, t in zip(causes, told, strict=True) if not t], len(matched)
