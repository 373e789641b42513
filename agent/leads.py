"""Leads: names the evidence mentions that the question does not, and no search has covered yet.

Multi-hop questions are answered by following such a name (the bridge entity: the supplier named in
the recall notice, the director of the film) to its own passage. A small model rarely finds them on
its own; the status line lists the most frequent ones so its next search can name one.
"""

from __future__ import annotations

import re
from collections import Counter

from agent.state import RunState
from eventrag.index.rules_extract import find_entities

MAX_RANK = 3  # only the passages the model was shown


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def plain_sentences(text: str) -> list[str]:
    """The sentences of `text` (whitespace collapsed), fragments of 15 characters or less left out."""
    return [x for x in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if len(x) > 15]


def leads(run: RunState, limit: int = 4) -> list[str]:
    """Up to `limit` names from the shown evidence that neither the question nor an earlier search
    names. A name in a passage's bridge sentence (the one sharing most words with the question, as
    EventRAG's reflection picks it) counts double; a name in most passages is the topic, not a lead."""
    question = _words(run.question)
    covered = set(question)
    for query in run.queries:
        covered |= _words(query)
    shown = [ev for ev in run.evidence.values() if ev.rank and ev.rank <= MAX_RANK]
    score: Counter[str] = Counter()
    passages: Counter[str] = Counter()
    order: dict[str, int] = {}
    for ev in shown:
        sentences = plain_sentences(ev.text)
        if not sentences:
            continue
        bridge = max(sentences, key=lambda x: len(question & _words(x)))
        names_here = set()
        for sentence in sentences:
            for _, name in find_entities(sentence):
                new = _words(name) - covered  # a lead must add a real word (not "S2", not a year)
                if not any(len(w) > 2 and not w.isdigit() for w in new):
                    continue
                score[name] += 2 if sentence is bridge else 1
                names_here.add(name)
                order.setdefault(name, len(order))
        passages.update(names_here)
    topic = {n for n, k in passages.items() if len(shown) >= 4 and k > len(shown) / 2}
    ranked = sorted((n for n in score if n not in topic), key=lambda n: (-score[n], order[n]))
    return ranked[:limit]
