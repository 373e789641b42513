"""`dates`: the dates of two described things, and their order or the time between them, computed by code.

Each side is dated by the evidence sentence that names it best (`agent.temporal.dated_sentence`: IDF-
weighted word overlap, the passage title counting half, the embedder's cosine when there is one) among
the chunks the run has seen and the side's own search hits (their documents read in full). A side no sentence dates is reported as
missing: no guess. Order and differences come from `eventrag.query.temporal` (interval order; whole
years and days at the dates' precision).
"""

from __future__ import annotations

from typing import Any, Literal

from agent.focus import backend_embed, words
from agent.prompts import DATA_NOTE
from agent.temporal import dated_sentence
from agent.tools.context import ToolContext, neutralize
from agent.tools.pool import evidence_for, gather, merged, seen_chunks
from agent.tools.registry import Tool, ToolError, ToolResult
from agent.tools.search import snippet
from eventrag.query.temporal import earlier_of, span_between, span_text
from eventrag.schema import Chunk, EventTime

Op = Literal["order", "difference"]
Unit = Literal["years", "months", "days"]
SENTENCE_CHARS = 200


def date_of(ctx: ToolContext, thing: str) -> tuple[EventTime, str, Chunk] | None:
    """The date of `thing`, the sentence stating it and its chunk, from the chunks seen and the thing's
    own search hits (their documents in full); None when no sentence dates it."""
    pool = merged(seen_chunks(ctx), gather(ctx, [thing]))
    found = dated_sentence(thing, thing, pool, backend_embed(ctx.backend)) if pool else None
    if found is None:
        return None
    sent, time = found
    return time, sent.text, pool[sent.passage]


def _side(found: tuple[EventTime, str, Chunk] | None) -> dict[str, Any]:
    if found is None:
        return {"date": None, "chunk_id": None, "sentence": None}
    time, sentence, chunk = found
    return {"date": time.start, "end": time.end, "raw": time.raw, "granularity": time.granularity,
            "chunk_id": chunk.chunk_id, "sentence": sentence}


def _line(name: str, thing: str, found: tuple[EventTime, str, Chunk] | None) -> str:
    if found is None:
        return f"{name} ({neutralize(thing)}): no date found in the evidence"
    time, sentence, chunk = found
    when = time.start if time.granularity == "day" else f"{time.raw or time.start} ({time.granularity})"
    return f'{name} ({neutralize(thing)}): {when} [c:{chunk.chunk_id}] "{neutralize(snippet(sentence, SENTENCE_CHARS))}"'


def compare(a: EventTime, b: EventTime) -> dict[str, Any]:
    """Which came first ("first", "second", None when the dates overlap) and the years and days between."""
    first = earlier_of(a, b)
    return {"earlier": None if first is None else ("first", "second")[first],
            "years": span_between(a, b, "years"), "days": span_between(a, b, "days")}


def _result(first: str, second: str, op: Op, got: dict[str, Any] | None, unit: Unit | None,
            in_unit: str | None) -> str:
    """The tool's last line from `compare`'s result (None: a date is missing)."""
    if got is None:
        return "cannot compare: a date is missing"
    if op == "difference" and unit is not None:
        return f"difference: {in_unit}" if in_unit else f"difference: the dates are too coarse to count {unit}"
    if op == "order":
        if got["earlier"] is None:
            return "order: the dates overlap at their precision; cannot tell which came first"
        name = first if got["earlier"] == "first" else second
        return f"order: {got['earlier']} ({neutralize(name)}) came first"
    parts = [f"{got['years']} full years" if got["years"] is not None else None,
             f"{got['days']} days" if got["days"] is not None else None]
    said = ", ".join(p for p in parts if p)
    return f"difference: {said}" if said else "difference: the dates are too coarse to count"


def make_dates(ctx: ToolContext) -> Tool:
    def dates(first: str, second: str, op: Op = "order", unit: Unit | None = None) -> ToolResult:
        """Find the dates of two events or things and compare them: which came first (op "order") or the
        time between them (op "difference", in the unit asked, else in full years and days).

        Args:
            first: the first event, in a few words (e.g. "HTI was founded")
            second: the second event, in a few words
            op: order or difference
            unit: for a difference, years, months or days (whole units)
        """
        if not words(first) or not words(second):
            raise ToolError("first and second must each name an event in a few words")
        a, b = date_of(ctx, first), date_of(ctx, second)
        got = compare(a[0], b[0]) if a is not None and b is not None else None
        in_unit = span_text(a[0], b[0], unit) if a and b and op == "difference" and unit else None
        lines = [f"Dates {DATA_NOTE}:", _line("first", first, a), _line("second", second, b),
                 _result(first, second, op, got, unit, in_unit)]
        data: dict[str, Any] = {"first": _side(a), "second": _side(b), "op": op, "unit": unit,
                                "earlier": None, "years": None, "days": None, "difference": in_unit}
        data |= got or {}
        cited = [x[2] for x in (a, b) if x is not None]
        evidence = evidence_for(ctx, [c.chunk_id for c in cited], cited)
        return ToolResult(content="\n".join(lines), evidence=evidence, data=data)

    return Tool.from_function(dates)
