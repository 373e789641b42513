"""`timeline`: dated events around a subject, from the evidence and the event graph, each with its link.

relation="causes": the candidate causes of the subject ranked by the evidence linking them to it
(`agent.causal`: causal connectives, CAUSES edges, chains of them; weakly, a rare participant shared
with the subject) — never by time order or position. "before" / "after" / "around": the dated events
that share the subject's words or names, in time order, before / after / on both sides of it.

The passages: the subject's search hits, the chunks the run has seen, and for causes the hits of the
best causes found (the next link of a chain is often told in another document) and those causes' own
documents in full; the best causes' own causes are ranked in turn and listed a link deeper, with the
cause they lead through ("via"). Lines are
`[c:ID] YYYY-MM-DD event (link: "supporting sentence")`; the chunks shown become evidence the model can cite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from agent.causal import MIN_MATCH, Matcher, Ranked, Ranking, find_subject, rank_causes
from agent.cause_kind import by_kind
from agent.event_links import backend_graph, causal_edges
from agent.focus import backend_embed, sentences_of, words
from agent.prompts import DATA_NOTE
from agent.tools.context import ToolContext, neutralize
from agent.tools.pool import documents, evidence_for, gather, merged, seen_chunks
from agent.tools.registry import Tool, ToolError, ToolResult
from agent.tools.search import snippet
from eventrag.dates import find_dates
from eventrag.index.rules_extract import find_entities
from eventrag.schema import Chunk

Relation = Literal["causes", "before", "after", "around"]
SHOWN = 5  # events shown to the model
CHAIN_SEARCHES = 2  # extra searches for the best causes' own causes (their documents read in full)
CHAIN_FROM = 4  # the best causes whose own causes are ranked in turn (a link deeper)
CHAIN_SHOWN = 2  # causes past SHOWN still shown when they lead through a shown one
TEXT_CHARS, SUPPORT_CHARS = 160, 150
# what the numbered lines are, said before them: a small model answered "what led to X" with X, the subject line
LIST_HEADS = {"causes": "what led to it, best evidence first:", "before": "before it, nearest first:",
              "after": "after it, in time order:", "around": "around it, in time order:"}
KIND_HEAD = 'what led to it, told as "{kind}", the furthest back in the chain first:'
# the causes of another kind are left out of a kind's list (counted in this line): listed after the kind's,
# the one that names who ordered the effect drew a 1.5B's answer away from the kind's cause
OTHERS_LINE = '{n} other cause(s) not told as "{kind}": timeline without kind lists them'


def _causes(ctx: ToolContext, subject: str) -> tuple[Ranked | None, list[Ranked]]:
    embed = backend_embed(ctx.backend)
    graph = backend_graph(ctx.backend)

    def rank(passages: list[Chunk], chain: int = 0) -> Ranking:
        links = causal_edges(graph, [p.chunk_id for p in passages]) if graph else ()
        return rank_causes(subject, passages, links, embed, chain=chain)

    passages = merged(gather(ctx, [subject]), seen_chunks(ctx))
    ranking = rank(passages)
    chain = [r.text for r in ranking.causes if r.link != "BEFORE"][:CHAIN_SEARCHES]
    if chain:  # the causes' own causes may be told elsewhere
        passages = gather(ctx, chain, passages, whole_docs=len(chain))
        ranking = rank(passages)
    # the best causes' own documents in full: the event before one of them is often told beside it
    passages = documents(ctx, passages, [r.event_chunk or r.chunk_id for r in ranking.causes[:CHAIN_FROM]])
    ranking = rank(passages, CHAIN_FROM)
    return ranking.subject, ranking.causes


def _around(ctx: ToolContext, subject: str, relation: Relation) -> tuple[Ranked | None, list[Ranked]]:
    """Dated events that share the subject's words or rare names, in time order, on the asked side."""
    passages = merged(gather(ctx, [subject]), seen_chunks(ctx))
    target = find_subject(subject, passages, backend_embed(ctx.backend))
    sents = sentences_of(passages)
    m = Matcher([s.text for s in sents])
    names = " ".join(n for _, n in find_entities(target.text)) if target else ""
    start = target.time.start if target and target.time and target.time.start else None
    end = (target.time.end or start) if target and target.time else None
    out: list[Ranked] = []
    for s in sents:
        dates = [t for _, _, t in find_dates(s.text) if t.start]
        if not dates or (target is not None and s.text == target.text):
            continue
        time = dates[0]  # about the subject: its words, or the names its own sentence holds
        share = max(m.share(subject, s.text), m.share(names, s.text) if names else 0.0)
        if share < MIN_MATCH / 2:
            continue
        side = None if start is None else "before" if (time.end or time.start or "") < start else \
            "after" if (time.start or "") > (end or start) else "same"
        if relation in ("before", "after") and side != relation:
            continue
        chunk = str(getattr(passages[s.passage], "chunk_id", ""))
        support = f"dated {side} the subject" if side in ("before", "after") else "dated"
        out.append(Ranked(s.text, round(share, 4), "BEFORE" if side in ("before", "after") else "none", support,
                          chunk, time, chunk))
    out = sorted(out, key=lambda r: -r.score)[: 2 * SHOWN]
    out.sort(key=lambda r: r.date, reverse=relation == "before")  # nearest the subject first when before
    return target, out[:SHOWN] if relation != "around" else out


def _reports(ctx: ToolContext) -> Callable[[Ranked], str]:
    """The text of the report telling a cause (its event's chunk's document), read once per document."""
    texts: dict[str, str] = {}

    def report(r: Ranked) -> str:
        chunk = ctx.backend.get_chunk(r.event_chunk or r.chunk_id)
        if chunk is None:
            return ""
        if chunk.doc_id not in texts:
            texts[chunk.doc_id] = " ".join(c.text for c in ctx.backend.get_document_chunks(chunk.doc_id))
        return texts[chunk.doc_id]

    return report


def _line(r: Ranked) -> str:
    when = r.date or "undated"
    cite = f"[c:{r.event_chunk or r.chunk_id}]"
    extra = f" [c:{r.chunk_id}]" if r.chunk_id and r.chunk_id != r.event_chunk else ""
    why = {"connective": "linked by", "CAUSES": "graph CAUSES", "BEFORE": "", "none": ""}[r.link]
    support = f'{why} "{snippet(r.support, SUPPORT_CHARS)}"{extra}' if why else r.support
    if r.via:  # a chained cause: the cause of the subject it leads through
        support += f'; via "{snippet(r.via, SUPPORT_CHARS)}"'
    return f"{cite} {when} {neutralize(snippet(r.text, TEXT_CHARS))} ({neutralize(support)})"


def _event_data(r: Ranked) -> dict[str, Any]:
    return {"text": r.text, "date": r.date or None, "chunk_id": r.event_chunk or r.chunk_id, "score": r.score,
            "link": r.link, "support": r.full_support, "support_chunk": r.chunk_id, "depth": r.depth}


def make_timeline(ctx: ToolContext) -> Tool:
    def timeline(subject: str, relation: Relation = "around", kind: str = "") -> ToolResult:
        """Dated events linked to an event, with the sentence that links them. relation: "causes" (what
        led to it, best evidence first), "before", "after", or "around" (time order).

        Args:
            subject: the event, in a few words from the question
            relation: causes, before, after or around
            kind: for causes, the kind of event asked for, if the question names one ("supplier")
        """
        if not words(subject):
            raise ToolError("subject is empty; name the event in a few words")
        target, events = _causes(ctx, subject) if relation == "causes" else _around(ctx, subject, relation)
        matched = 0
        if relation == "causes" and kind:
            events, matched = by_kind(events, kind, _reports(ctx))
        if target is None and not events:
            return ToolResult(content=f"No event matching {subject!r} was found. Search for it first or use other words.",
                              data={"subject": None, "events": []})
        listed = events[:matched] if matched else events
        shown = listed[:SHOWN]  # and a cause found through one of them: the chain's next link
        shown += [r for r in listed[SHOWN:] if r.via in {s.text for s in shown}][:CHAIN_SHOWN]
        head = f"Timeline of {neutralize(subject)!r} ({relation}) {DATA_NOTE}:"
        lines = [head]
        if target is not None:
            lines.append(f"subject (the event itself): [c:{target.chunk_id}] {target.date or 'undated'} "
                         f"{neutralize(snippet(target.text, TEXT_CHARS))}")
        else:
            lines.append("subject: not found in the evidence")
        if shown:
            lines.append(KIND_HEAD.format(kind=neutralize(kind)) if matched else LIST_HEADS[relation])
        lines += [f"{i}. {_line(r)}" for i, r in enumerate(shown, 1)]
        if matched and len(events) > matched:
            lines.append(OTHERS_LINE.format(n=len(events) - matched, kind=neutralize(kind)))
        if not shown:
            lines.append("no linked event found" if relation == "causes" else f"no dated event {relation} it found")
        cited = [target.chunk_id] if target else []
        cited += [c for r in shown for c in (r.event_chunk, r.chunk_id)]
        subject_data = ({"text": target.text, "date": target.date or None, "chunk_id": target.chunk_id}
                        if target else None)
        data = {"subject": subject_data, "relation": relation, "events": [_event_data(r) for r in events],
                "kind": kind, "of_kind": matched}
        return ToolResult(content="\n".join(lines), evidence=evidence_for(ctx, cited), data=data)

    return Tool.from_function(timeline)
