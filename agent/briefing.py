"""Briefings: a request that lists numbered questions ("Write a briefing that answers: 1. … 2. …").

The items are the request's own questions, verbatim and in order (up to `MAX_QUESTIONS`; no model
call and no decomposition: each is already a question). They run in the same loop as a single
question: the status line lists them and which are answered, the policy answers each with
`answer(item=n)`, and the run ends once every item has an answer (or at the step cap). The report
gives one section per question, in the order asked, headed "### n. question" and opening with
"Answer: …" and its citations (`agent.report`).
"""

from __future__ import annotations

import re

from agent.plan import Plan, SubQuestion

MAX_QUESTIONS = 20  # a long-horizon task: 16 questions and their cross-reference items
NUMBERED = re.compile(r"^\s{0,3}[*_]*(\d{1,2})[*_]*[.)][*_]*\s+(\S.*)$")  # "1. …" on its own line
INLINE = re.compile(r"(?<!\S)(\d{1,2})[.)]\s+")  # "… 1. Who …? 2. When …?" within one line


def _split(text: str) -> tuple[str, list[str]]:
    """(the text before the list, the numbered items): one item per line, numbered 1, 2, 3 … in order
    (a gap ends the list); else, within one line (as typed on a command line), items that all end
    with "?". No list: ("", [])."""
    head: list[str] = []
    items: list[str] = []
    for line in text.splitlines():
        m = NUMBERED.match(line)
        if m and int(m.group(1)) == len(items) + 1:
            items.append(" ".join(m.group(2).split()))
        elif not items:
            head.append(line)
    if len(items) >= 2:
        return " ".join(" ".join(head).split()), items
    flat = " ".join(text.split())
    chain: list[re.Match[str]] = []
    for m in INLINE.finditer(flat):
        if int(m.group(1)) == len(chain) + 1:
            chain.append(m)
    if len(chain) < 2:
        return "", []
    ends = [m.start() for m in chain[1:]] + [len(flat)]
    inline = [flat[m.end() : e].strip() for m, e in zip(chain, ends, strict=True)]
    if not all(q.endswith("?") for q in inline):
        return "", []
    return flat[: chain[0].start()].strip(), inline


def numbered_questions(text: str) -> list[str]:
    """The numbered questions of a request; empty unless there are at least two."""
    return _split(text)[1]


def asks_questions(plan: Plan) -> bool:
    """Most of the briefing's items are questions (a long request's numbered items may be topics or
    definitions: `agent.outline` plans those)."""
    return sum(sq.text.rstrip().endswith("?") for sq in plan.sub_questions) * 2 >= len(plan.sub_questions)


def briefing_plan(question: str) -> Plan | None:
    """The plan of a briefing request (its first `MAX_QUESTIONS` questions), None for any other question."""
    items = numbered_questions(question)
    if not items:
        return None
    subs = [SubQuestion(id=i, text=t) for i, t in enumerate(items[:MAX_QUESTIONS], 1)]
    return Plan(sub_questions=subs, briefing=True, beyond=items[MAX_QUESTIONS:])


def title(question: str) -> str:
    """A briefing's heading: the request before its list (the list becomes the sections)."""
    return _split(question)[0] or "Briefing"
