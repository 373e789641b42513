"""Briefings: a request that lists numbered questions ("Write a briefing that answers: 1. … 2. …").

The plan is the request's own questions, verbatim and in order (up to `MAX_QUESTIONS`; no model call
and no decomposition: each is already a question). The loop searches them one after another — a search
is tied to the first open question unless the model names another — folding finished ones as the
context grows. When it stops (every question has evidence, the step cap, the model's `answer`), each
question still without evidence gets one search of its own (nothing is left unresearched), then the
reader answers every question from its own evidence (`agent.chain.answer_sub_question`, no answers
carried between questions: they are independent; a question it finds nothing for is searched in its
own words once, if the model searched other words for it, and read again) — except a "which came first" / "how many years
after" question, answered from its two sides' dates as a single question is (`dated_answer`). The report gives one section per question, in the
order asked, headed "### n. question" and opening with "Answer: …" and its citations (`agent.report`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agent.chain import answer_sub_question
from agent.focus import Embed
from agent.llm import ChatModel, Message
from agent.plan import Plan, SubQuestion
from agent.state import RunState, Step
from agent.temporal import date_side, own_first, sides_answer
from agent.tools.answer import supporting
from agent.tools.search import normalize_query
from eventfold.run_options import RunOptions
from eventrag.query.temporal import parse_temporal

MAX_QUESTIONS = 12
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


def answer_briefing(
    run: RunState, model: ChatModel, options: RunOptions, embed: Embed | None, search: Callable[[str, int], None]
) -> None:
    """Search each question that has no evidence yet (`search(query, sub_question_id)`), then read every
    question's answer from its own evidence; `run.answer` says how many were answered (mutates `run`)."""
    plan = run.plan
    for sq in plan.open():
        search(sq.text, sq.id)
    for sq in plan.sub_questions:
        if dated_answer(run, sq, embed, search):
            continue
        found = answer_sub_question(run, sq, model, options, embed, carry=False)
        if found is None and search_verbatim(run, sq, search):
            found = answer_sub_question(run, sq, model, options, embed, carry=False)
        if found:
            own = set(sq.evidence)
            sq.citations = [c for c in supporting(run, sq.answer or "") if c in own][:2] or sq.evidence[:1]
    answered = [sq for sq in plan.sub_questions if sq.answer]
    what = "requirements" if plan.outline else "questions"
    run.answer = f"{len(answered)} of {len(plan.sub_questions)} {what} answered from the evidence (one section each)"
    run.answer_source, run.answer_supported = "reader", bool(answered)
    run.answer_citations = list(dict.fromkeys(c for sq in answered for c in sq.citations))
    if run.status != "answered":
        run.status = "forced"
    reason = "each question answered by the reader from its own evidence"
    run.stop_reason = f"{run.stop_reason}; {reason}" if run.stop_reason else reason
    run.steps.append(Step(n=run.next_step, kind="forced", assistant=Message(role="assistant", content=run.answer),
                          chunk_ids=list(run.answer_citations)))  # fmt: skip


def search_verbatim(run: RunState, sq: SubQuestion, search: Callable[[str, int], None]) -> bool:
    """A question the reader found nothing for whose own words were never searched (a small model may
    search another question's words for it, or copy a query from the status line): searched verbatim
    now, its new results read first. False when its words were searched already or nothing new came."""
    if normalize_query(sq.text) in run.queries:
        return False
    before = list(sq.evidence)
    search(sq.text, sq.id)
    fresh = [c for c in sq.evidence if c not in before]
    sq.evidence = fresh + before
    return bool(fresh)


def dated_answer(run: RunState, sq: SubQuestion, embed: Embed | None, search: Callable[[str, int], None]) -> bool:
    """A "which came first" / "how many years after" question answered from its two sides' dates, as a
    single question is (`agent.temporal`): each side searched, its dated sentence found in the
    question's evidence first, then in all the evidence; False when it is not one or a date is missing."""
    q = parse_temporal(sq.text)
    if q is None:
        return False
    for side in q.questions:
        if normalize_query(side) not in run.queries:  # searched for another question: its evidence is there
            search(side, sq.id)
    passages = own_first(run, sq.evidence)
    found = sides_answer(q, [date_side(q, i, passages, embed) for i in range(2)])
    if found is None:
        return False
    sq.answer = found.answer
    sq.citations = list(dict.fromkeys(d.chunk_id for d in found.sides if d.chunk_id))
    return True
