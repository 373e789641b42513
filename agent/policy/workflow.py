"""The workflow policy: question forms mapped to a fixed sequence of the same tool calls the model has.

A scripted baseline and SFT teacher, never a hidden path: every call it makes is a step of the same
trajectory format, and its final answer is its own `answer` call.

- causal ("what event led to X", parsed by `eventrag.query.causal`): search(question), then
  timeline(X, "causes", kind=the kind of event the question names, if any: "supplier event"); the
  answer picked from the best-linked causes by the causal reader (`prompts.CAUSES_SYSTEM`); when the
  timeline lists none, read(the report telling X) and the answer read from the evidence;
- temporal ("which came first", "how many years after", `eventrag.query.temporal`): dates(A, B, op);
  the answer is the earlier/later side or the difference the tool computed;
- bridge (a description where a name should be, `eventrag.query.bridge`): resolve(description), then
  search(the question with the name filled in); the answer read from what they found;
- otherwise: search(question), read(its best hit, unless shown in full already); the answer read
  from the evidence.

After an answer naming only what the question names is refused, a lookup or a bridge reads the best
hit of its searches not read yet before it answers again (`_reread`).

Answers are read by the reader (`agent.reader`) over the evidence the item's own calls gathered. In a
long task each item is scripted in turn and answered with `answer(item=n)`. The same script gives the
model policy its suggestion (`suggest`: the next call by name and arguments, never an answer text).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from agent.cause_kind import kind_stems
from agent.chunk_header import split_header
from agent.focus import backend_embed, stem, words
from agent.llm import LLMError, ToolCall, ToolSpec
from agent.memory.trajectory import Step
from agent.plan import ask_json
from agent.policy.base import PolicyContext, Turn
from agent.prompts import BRIDGE_SCHEMA, BRIDGE_SYSTEM
from agent.reader import causes_messages, first_line, is_insufficient, numbered_pick, reader_messages
from agent.state import Evidence, RunState
from agent.tools.answer import echo_refused, supporting
from agent.tools.context import counted_chat
from agent.tools.dates import Unit
from agent.tools.read import readable
from eventrag.query.bridge import Bridge, may_describe, rule_bridge, same_question, split_bridge
from eventrag.query.causal import parse_causal
from eventrag.query.temporal import TemporalQuestion, parse_temporal

CAUSES_READ = 3  # the best-linked causes the reader chooses among
NOT_FOUND = "Insufficient information"


@dataclass
class Script:
    """The form of one question and what its calls need."""

    question: str
    form: str  # causal | temporal | bridge | lookup
    target: str = ""  # causal: the event asked about
    kind: str = ""  # causal: the kind of event asked for, when the question names one ("supplier event")
    temporal: TemporalQuestion | None = None
    bridge: Bridge | None = None


def classify(question: str, ctx: PolicyContext | None = None) -> Script:
    """The script of `question`; with `ctx`, a bridge's description is found by one JSON call to the
    model (the rule split otherwise, and when that call gives none)."""
    cq = parse_causal(question)
    if cq is not None:
        return Script(question, "causal", target=cq.target, kind=cq.kind if kind_stems(cq.kind) else "")
    tq = parse_temporal(question)
    if tq is not None:
        return Script(question, "temporal", temporal=tq)
    bridge = None
    if may_describe(question):
        if ctx is not None:
            data = ask_json(lambda m, **kw: counted_chat(ctx.tools.run, ctx.model, m, **kw), BRIDGE_SYSTEM,
                            question, BRIDGE_SCHEMA, max_tokens=120)  # fmt: skip
            then = str(data["then"]) if data and isinstance(data.get("then"), str) else None
            bridge = split_bridge(question, then)
        bridge = bridge or rule_bridge(question)
    if bridge is not None and not same_question(bridge.inner, question):
        return Script(question, "bridge", bridge=bridge)
    return Script(question, "lookup")


def call_text(call: ToolCall) -> str:
    """A call as the status line shows it: `timeline(subject='the recall', relation='causes')`."""
    if call.name == "answer":
        return "answer"
    args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def item_steps(run: RunState) -> list[Step]:
    """The action steps since the last accepted answer (a single question: all of them)."""
    out: list[Step] = []
    for s in run.steps:
        if s.kind != "action":
            continue
        answered = any(c.name == "answer" and not r.content.startswith("error")
                       for c, r in zip(s.assistant.tool_calls, s.results, strict=False))  # fmt: skip
        out = [] if answered else [*out, s]
    return out


def _made(steps: list[Step], name: str) -> tuple[ToolCall, dict[str, Any], Step] | None:
    """The first call of tool `name` among `steps`, with its result data."""
    for s in steps:
        for i, c in enumerate(s.assistant.tool_calls):
            if c.name == name:
                return c, (s.data[i] if i < len(s.data) else {}), s
    return None


def _call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=f"wf_{name}", name=name, arguments=arguments)


def best_hit(question: str, ids: Sequence[str], evidence: Mapping[str, Evidence] | None) -> str | None:
    """The hit to read: the one whose body (header lines aside: a title or a "Date:" line states nothing)
    holds most of the question's words, the search's rank breaking ties. The retriever ranks a chunk by
    its whole text, so the first chunk of the right document often comes before the one that answers."""
    if not ids or not evidence:
        return ids[0] if ids else None
    asked = {stem(w) for w in words(question)}

    def held(cid: str) -> int:
        ev = evidence.get(cid)
        return len(asked & {stem(w) for w in words(split_header(ev.title, ev.text)[1])}) if ev else 0

    return max(ids, key=lambda cid: (held(cid), -ids.index(cid)))


def scripted_call(script: Script, steps: list[Step], can_read: Collection[str] | None = None,
                  evidence: Mapping[str, Evidence] | None = None) -> ToolCall | None:  # fmt: skip
    """The script's next call given the steps taken for this question; None: time to answer. A lookup
    reads its best hit (`best_hit` over `evidence`; without it, the first), only when `can_read` (the ids
    `read` accepts now; None: any) holds it: one shown in full in the context already is not read again."""
    if script.form == "temporal" and script.temporal is not None:
        tq = script.temporal
        op = "order" if tq.kind == "order" else "difference"
        if _made(steps, "dates"):
            return None
        first, second = (f"{side} {tq.predicate}".strip() for side in tq.sides)  # "Marie Curie born"
        if op == "difference" and tq.unit in get_args(Unit):  # the unit the question counts in
            return _call("dates", first=first, second=second, op=op, unit=tq.unit)
        return _call("dates", first=first, second=second, op=op)
    if script.form == "causal":
        if not _made(steps, "search"):
            return _call("search", query=script.question)
        made = _made(steps, "timeline")
        if made is not None:
            return _unlinked(made[1], steps, can_read)
        kind = {"kind": script.kind} if script.kind else {}
        return _call("timeline", subject=script.target, relation="causes", **kind)
    if script.form == "bridge" and script.bridge is not None:
        resolved = _made(steps, "resolve")
        if resolved is None:
            return _call("resolve", description=script.bridge.description)
        name = resolved[1].get("name")
        query = script.bridge.fill(str(name)) if name else script.question
        return _reread(query, steps, can_read, evidence) if _made(steps, "search") else _call("search", query=query)
    searched = _made(steps, "search")
    if searched is None:
        return _call("search", query=script.question)
    best = best_hit(script.question, searched[2].chunk_ids, evidence)
    if _made(steps, "read") is None and best is not None and (can_read is None or best in can_read):
        return _call("read", id=best)
    return _reread(script.question, steps, can_read, evidence)


def _unlinked(timeline: Mapping[str, Any], steps: list[Step], can_read: Collection[str] | None) -> ToolCall | None:
    """After a causes timeline that found no event linked to its subject: a read of the report telling the
    subject (None: answer). What led to it may be told there in words no connective marks ("Without them
    the orchestra could not play"), with no participant to link it by."""
    cid = (timeline.get("subject") or {}).get("chunk_id")
    if timeline.get("events") or not cid or _made(steps, "read") or (can_read is not None and cid not in can_read):
        return None
    return _call("read", id=str(cid))


def _reread(question: str, steps: list[Step], can_read: Collection[str] | None,
            evidence: Mapping[str, Evidence] | None) -> ToolCall | None:  # fmt: skip
    """After an answer naming only what the question names was refused: the best hit of the question's
    searches not read yet (one read per refusal; None: answer). The hit read first named the thing the
    question is about; another hit of the same search often holds what it asks."""
    refused = [i for i, s in enumerate(steps) if echo_refused([s])]
    if not refused or any(c.name == "read" for s in steps[refused[-1] + 1 :] for c in s.assistant.tool_calls):
        return None
    done = {str(c.arguments.get("id")) for s in steps for c in s.assistant.tool_calls if c.name == "read"}
    hits = dict.fromkeys(cid for s in steps if any(c.name == "search" for c in s.assistant.tool_calls)
                         for cid in s.chunk_ids)  # fmt: skip
    left = [cid for cid in hits if cid not in done and (can_read is None or cid in can_read)]
    best = best_hit(question, left, evidence)
    return _call("read", id=best) if best else None


def gathered(run: RunState, steps: list[Step]) -> list[Evidence]:
    """The evidence the steps showed, in the order shown (a tool's cited chunk before a search's hits)."""
    ids = list(dict.fromkeys(c for s in steps for c in s.chunk_ids))
    return [run.evidence[c] for c in ids if c in run.evidence]


class WorkflowPolicy:
    name = "workflow"

    def __init__(self) -> None:
        self._scripts: dict[tuple[str, bool], Script] = {}

    def script(self, question: str, ctx: PolicyContext | None) -> Script:
        key = (question, ctx is not None)
        if key not in self._scripts:
            self._scripts[key] = classify(question, ctx)
        return self._scripts[key]

    def current(self, run: RunState) -> tuple[str, int | None]:
        """The question being worked on: the first unanswered item of a long task, else the question."""
        sq = next(iter(run.plan.open()), None)
        return (sq.text, sq.id) if sq is not None else (run.question, None)

    def suggest(self, run: RunState, ctx: PolicyContext | None = None) -> ToolCall:
        """The call this policy would make next from `run`'s state. With `ctx`, the question's script is
        the one `next_call` follows (a bridge's description split by one model call, once per question);
        without it, by the rules alone (no model call: a record of the call, not a suggestion)."""
        question, _ = self.current(run)
        return scripted_call(self.script(question, ctx), item_steps(run), readable(run), run.evidence) or _call("answer")

    def next_call(self, run: RunState, specs: list[ToolSpec], ctx: PolicyContext) -> Turn:
        question, item = self.current(run)
        offered = {s.name for s in specs if s.available}
        steps = item_steps(run)
        call = scripted_call(self.script(question, ctx), steps, readable(run), run.evidence)
        if call is None or call.name not in offered:
            call = self.answer_call(run, question, item, steps, ctx)
        call.id = f"wf_{run.next_step}"
        return Turn(calls=[call])

    def answer_call(self, run: RunState, question: str, item: int | None, steps: list[Step],
                    ctx: PolicyContext) -> ToolCall:  # fmt: skip
        script = self.script(question, ctx)
        passages = read_passages(run, script, steps)
        text = computed_answer(script, steps) or self.read(run, self.asked(question, script, steps), passages, ctx,
                                                           causes=bool(listed_causes(script, steps)))  # fmt: skip
        pool = {p.chunk_id for p in passages} | {ev.chunk_id for ev in gathered(run, steps)}
        cites = [c for c in supporting(run, text) if c in pool]
        if not cites and not is_insufficient(text):
            cites = list(dict.fromkeys(p.chunk_id for p in passages if p.chunk_id in run.evidence))[:2]
        args: dict[str, Any] = {"answer": text, "citations": cites}
        if item is not None:
            args["item"] = item
        return _call("answer", **args)

    @staticmethod
    def asked(question: str, script: Script, steps: list[Step]) -> str:
        """The question the reader answers: a bridge's with the resolved name filled in."""
        resolved = _made(steps, "resolve")
        if script.bridge is not None and resolved is not None and resolved[1].get("name"):
            return script.bridge.fill(str(resolved[1]["name"]))
        return question

    @staticmethod
    def read(run: RunState, question: str, passages: list[Evidence], ctx: PolicyContext, *, causes: bool = False) -> str:
        """The reader's short answer (a finding of a sentence or two for a long request's requirement);
        `causes`: `passages` are the timeline's ranked causes, and the reader picks one."""
        if not passages:
            return NOT_FOUND
        if causes:
            messages = causes_messages(question, passages)
        else:
            messages = reader_messages(question, passages[: ctx.options.reader_k], backend_embed(ctx.tools.backend),
                                       finding=run.plan.outline)  # fmt: skip
        try:
            resp = counted_chat(run, ctx.model, messages, temperature=0.0, max_tokens=ctx.options.answer_max_tokens)
        except LLMError:
            return NOT_FOUND
        run.counters.reader_calls += 1
        text = numbered_pick(first_line(resp.text), passages) if causes else first_line(resp.text)
        return NOT_FOUND if is_insufficient(text) else re.sub(r"\s+", " ", text)[:200]


def listed_causes(script: Script, steps: list[Step]) -> list[dict[str, Any]]:
    """The causes, best-linked first, that the timeline listed for a causal question (none: [])."""
    timeline = _made(steps, "timeline")
    if script.form != "causal" or timeline is None:
        return []
    return list(timeline[1].get("events") or [])


def read_passages(run: RunState, script: Script, steps: list[Step]) -> list[Evidence]:
    """What the reader reads: for a causal question the texts of the best-linked causes the timeline
    returned, best first (the reader picks among causes; the linking sentence often holds the subject
    itself, which a small reader then names), each headed by its date (a document title there is copied
    as the answer); otherwise, and when the timeline listed none, the evidence the steps gathered (read
    by the general reader, which may find it insufficient)."""
    causes = listed_causes(script, steps)
    if not causes:
        return gathered(run, steps)
    out = []
    for e in causes[:CAUSES_READ]:
        seen = run.evidence.get(str(e.get("chunk_id")))
        out.append(Evidence(chunk_id=str(e.get("chunk_id")), doc_id=seen.doc_id if seen else "", step=run.next_step,
                            title=str(e.get("date") or "undated"), text=str(e["text"])))  # fmt: skip
    return out


def computed_answer(script: Script, steps: list[Step]) -> str | None:
    """A temporal question's answer from the dates tool's computation; None when a date is missing."""
    made = _made(steps, "dates")
    tq = script.temporal
    if made is None or tq is None:
        return None
    data = made[1]
    if tq.kind == "order":
        earlier = data.get("earlier")
        if earlier not in ("first", "second"):
            return None
        first = earlier == "first"
        return tq.sides[0] if first == (tq.want == "earliest") else tq.sides[1]
    n = data.get("days") if tq.unit == "days" else data.get("years")
    if n is None:
        return None
    unit = "days" if tq.unit == "days" else "years"
    return f"{n} {unit if n != 1 else unit[:-1]}"
