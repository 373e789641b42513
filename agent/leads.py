"""Leads: names the evidence mentions that the question does not, and no search has covered yet.

Multi-hop questions are answered by following such a name (the bridge entity: the supplier named in
the recall notice, the director of the film) to its own passage. A small model rarely finds them on
its own; the status line lists the most frequent ones so its next search can name one.
"""

from __future__ import annotations

import re
from collections import Counter

from agent.state import RunState
from eventrag.rules_extract import find_entities

MAX_RANK = 3  # only the passages the model was shown


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def leads(run: RunState, limit: int = 4) -> list[str]:
    """Up to `limit` names from the shown evidence, most frequent first, that neither the question
    nor an earlier search already names."""
    covered = _words(run.question)
    for query in run.queries:
        covered |= _words(query)
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for ev in run.evidence.values():
        if not ev.rank or ev.rank > MAX_RANK:
            continue
        for _, name in find_entities(" ".join(ev.text.split())):
            words = _words(name)
            if not words or words <= covered or all(w.isdigit() for w in words):
                continue
            counts[name] += 1
            first_seen.setdefault(name, len(first_seen))
    ranked = sorted(counts, key=lambda n: (-counts[n], first_seen[n]))
    return ranked[:limit]
