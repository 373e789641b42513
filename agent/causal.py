"""Origin questions answered from a timeline of the evidence (`eventrag.query.causal` reads the form).

"What supplier event led to the 2015 SeaGuard recall?" The 1.5B reader given the evidence in rank
order answered "HTI": the recall's own passage leads, and it names the recall's actor. Here:

1. the target ("the 2015 SeaGuard recall") is dated by the evidence sentence that names it best (the
   temporal questions' matcher, `agent.temporal.dated_sentence`); a year written in the target must
   agree, else no timeline;
2. the timeline: the dated sentences of the best evidence that end before the target, in time order,
   numbered (at most `MAX_EVENTS`, taken from the best passages first);
3. the reader answers over the numbered timeline, the target last ("a chain of events starts with its
   earliest event"); the event its answer names (most words shared) is cited and marked in the report;
4. an episode is reported from its start: when the document of the event named also reports, dated at
   most `EPISODE_DAYS` earlier, another timeline event, the earliest such event is the answer. The 1.5B
   named "Ekberg signed an emergency supply contract with Lindqvist" (17 February 2014) for "what
   supplier event led to the recall"; the same report opens with the fire at the supplier's plant (2
   February 2014) that made the contract necessary.
   A numbered choice under a JSON grammar was tried first and dropped: on five timelines the 1.5B's
   picks were no better than chance (docs/notes/2026-12-02/session8.md).

No dated target, a timeline under two events, or an answer that names none of them: the run goes on
as for any question.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date

from agent.focus import Embed, Passage, Sentence, sentences_of, words
from agent.plan import ChatFn
from agent.prompts import ORIGIN_SYSTEM, ORIGIN_USER, SENTENCE_LINE
from agent.reader import best_evidence, first_line, is_insufficient
from agent.state import RunState
from agent.temporal import dated_sentence
from eventfold.llm.types import LLMError, Message
from eventfold.run_options import RunOptions
from eventrag.query.causal import CausalQuestion, OriginAnswer, TimelineEvent
from eventrag.query.temporal import date_near
from eventrag.schema import EventTime

# the graph's opening search: query, the sub-question it serves, hits (None: the options' search_top_k)
Search = Callable[[str, "int | None", "int | None"], None]
MAX_EVENTS = 12  # timeline lines shown to the model
EPISODE_DAYS = 31  # events of one document this close together are one episode (`episode_start`)
# "In the early hours of 2 February 2014, a fire broke out ..." -> "a fire broke out ..."
_LEADING_TIME = re.compile(r"^(?:in|on|by|during|at|early|late|from)\b[^,]{0,60},\s+", re.I)
# "Halvorsen's 2011 warning had come true": the year names an earlier thing, not when this happened
_ATTRIBUTIVE = re.compile(r"(?:'s|’s|\b(?:the|a|an|its|their|his|her|our|this|that))\s+$", re.I)


def _dated(text: str) -> EventTime | None:
    """When the sentence's event happened, if it says (a year used as an adjective does not)."""
    t = date_near(text, [])
    if t is None or t.start is None:
        return None
    if t.granularity == "year" and t.raw and _ATTRIBUTIVE.search(text[: text.find(t.raw)]):
        return None
    return t


def _event(s: Sentence, passages: Sequence[Passage], time: EventTime) -> TimelineEvent:
    start = time.start or ""
    return TimelineEvent(
        start=start, end=time.end or start, raw=time.raw or start, text=s.text, title=s.title,
        chunk_id=getattr(passages[s.passage], "chunk_id", ""), doc_id=passages[s.passage].doc_id,
    )  # fmt: skip


def find_target(
    cq: CausalQuestion, passages: Sequence[Passage], embed: Embed | None = None
) -> tuple[TimelineEvent, str] | None:
    """The target event (the evidence sentence naming it best, dated) and the sentence after it in its
    passage ("" if none); None when no dated sentence names it, or its year is not the one asked."""
    found = dated_sentence(cq.target, cq.target, passages, embed)
    if found is None:
        return None
    sent, time = found
    year = cq.target_year
    if time.start is None or (year is not None and not (time.start[:4] <= year <= (time.end or time.start)[:4])):
        return None  # the sentence found is not the target the question dates
    after = [s.text for s in sentences_of([passages[sent.passage]]) if s.position > sent.position]
    return _event(sent, passages, time), (after[0] if after else "")


def timeline(target: TimelineEvent, passages: Sequence[Passage]) -> list[TimelineEvent]:
    """The dated events of `passages` that end before the target, in time order (the first
    `MAX_EVENTS` found, best passages first)."""
    events: list[TimelineEvent] = []
    for s in sentences_of(passages):
        t = _dated(s.text)
        if s.text == target.text or t is None or t.start is None or (t.end or t.start) >= target.start:
            continue
        events.append(_event(s, passages, t))
        if len(events) == MAX_EVENTS:
            break
    return sorted(events, key=_middle)


def _middle(e: TimelineEvent) -> tuple[int, str]:
    """Time order by an event's middle day: "autumn 2014" (the year) sorts after March 2014, before December."""
    start, end = _days(e)
    return (start.toordinal() + end.toordinal()) // 2, e.start


def _restated(answer: str, question: str) -> str:
    """ "The supplier event that led to X was the fire ..." -> "the fire ...": the part after the
    question restated (most of the words before " was " are the question's)."""
    head, sep, tail = answer.partition(" was ")
    q = set(words(question))
    head_words = words(head)
    if sep and tail and head_words and sum(w in q for w in head_words) >= 0.6 * len(head_words):
        return tail.strip()
    return answer


def read_timeline(
    chat: ChatFn, question: str, target: TimelineEvent, events: list[TimelineEvent], max_tokens: int
) -> tuple[str, int] | None:
    """The reader's answer over the numbered timeline (the target last) and the index of the event it
    names (most words shared); None when the call fails, it finds nothing, or it names no event."""
    lines = [SENTENCE_LINE.format(n=i, title=e.raw, text=e.text) for i, e in enumerate([*events, target], 1)]
    user = ORIGIN_USER.format(question=question, events="\n".join(lines))
    messages = [Message(role="system", content=ORIGIN_SYSTEM), Message(role="user", content=user)]
    try:
        resp = chat(messages, temperature=0.0, max_tokens=max_tokens)
    except LLMError:
        return None
    answer = _restated(first_line(resp.text), question).rstrip(".")
    said = set(words(answer))
    if is_insufficient(answer) or not said:
        return None
    shared = [len(said & set(words(e.text))) for e in events]
    best = max(range(len(events)), key=lambda i: (shared[i], -i))
    return (answer, best) if shared[best] >= min(2, len(said)) else None


def origin_answer(
    chat: ChatFn, question: str, cq: CausalQuestion, passages: Sequence[Passage], max_tokens: int,
    embed: Embed | None = None,
) -> OriginAnswer | None:
    """The event asked for, read from the timeline of `passages` before the target; None when the
    target is not found, the timeline has fewer than two events, or the reader names none of them."""
    found = find_target(cq, passages, embed)
    if found is None:
        return None
    target = found[0]
    events = timeline(target, passages)
    if len(events) < 2:
        return None
    read = read_timeline(chat, question, target, events, max_tokens)
    if read is None:
        return None
    answer, pick = read
    start = episode_start(events, pick)
    if start != pick:
        answer, pick = clause_of(events[start]), start
    return OriginAnswer(answer=answer, origin=events[pick], target=target, events=events)


def _days(e: TimelineEvent) -> tuple[date, date]:
    return date.fromisoformat(e.start), date.fromisoformat(e.end)


def episode_start(events: list[TimelineEvent], pick: int) -> int:
    """The earliest event of the picked event's episode: events of the same document, each dated to a
    day or a month, starting at most `EPISODE_DAYS` before it; `pick` itself when there is none."""
    chosen = events[pick]
    c_start, c_end = _days(chosen)
    if not chosen.doc_id or (c_end - c_start).days > EPISODE_DAYS:
        return pick
    same = []
    for i in range(pick):
        start, end = _days(events[i])
        if (events[i].doc_id == chosen.doc_id and (end - start).days <= EPISODE_DAYS
                and 0 <= (c_start - start).days <= EPISODE_DAYS):
            same.append(i)
    return min(same, key=lambda i: (events[i].start, i)) if same else pick


def clause_of(event: TimelineEvent) -> str:
    """The event's sentence as an answer: without its leading time phrase and final stop."""
    text = event.text.strip().rstrip(".")
    stripped = _LEADING_TIME.sub("", text, count=1)
    return stripped if event.raw in text[: len(text) - len(stripped)] else text


def plan_origin(
    run: RunState, cq: CausalQuestion, search: Search, chat: ChatFn, options: RunOptions, embed: Embed | None = None
) -> bool:
    """Search for the target and for what led to it, then answer from the timeline (mutates `run`):
    True when the plan holds the answer (`run.plan.origin`); else the sub-questions tried stay, with
    their searches, for the ordinary plan to follow. The question's search opens the run here."""
    when = run.plan.add(f"When was {cq.target}?")
    search(run.question, None, None)
    search(cq.target, when.id, None)
    found = find_target(cq, best_evidence(run, options.reader_k), embed)
    if found is None:
        return False
    target, after = found
    when.answer = target.raw
    before = run.plan.add(f"What led to {cq.target}?")
    for query in (target.text, after):  # the target's own sentences name who and what took part in it
        if query:  # (twice the usual hits: the links of a chain share few words with its end)
            search(query, before.id, 2 * options.search_top_k)
    # the target is found again over the wider evidence: its own searches may bring a sentence naming it better
    origin = origin_answer(chat, run.question, cq, best_evidence(run, 2 * options.reader_k), options.answer_max_tokens, embed)
    if origin is None:
        return False
    before.answer = origin.answer
    run.plan.origin = origin
    return True
