"""The dates tool: each side dated by the evidence sentence that names it best (seen chunks and its own
search hits), order and differences computed by code, a missing date reported, never guessed."""

from __future__ import annotations

from agent_doubles import MemoryBackend, ScriptedChatModel

from agent.state import Evidence, RunState
from agent.tools import build_registry
from agent.tools.context import ToolContext
from eventfold.run_options import RunOptions

DOCS = {
    "a": ("Founding of Nordvik Gauges", "Nordvik Gauges was registered in Bergen on 14 April 2009 by two engineers."),
    "b": ("Tidal Group buys Nordvik", "On 15 October 2020, Tidal Group acquired Nordvik Gauges for EUR 85 million."),
    "c": ("Nordvik Gauges products", "The firm sold 300 gauges in 2012. It opened a plant in Haugesund in 2015."),
}


def _ctx(run: RunState | None = None) -> ToolContext:
    return ToolContext(run=run or RunState(question="q"), backend=MemoryBackend(DOCS), model=ScriptedChatModel([]),
                       options=RunOptions())  # fmt: skip


def _dates(ctx: ToolContext, **args: str):
    result = build_registry(ctx).call("dates", args)
    assert not result.error, result.content
    return result


def test_the_difference_in_full_years_and_days_is_computed_from_both_dates():
    result = _dates(_ctx(), first="Nordvik Gauges was founded", second="Tidal Group acquired Nordvik Gauges",
                    op="difference")  # fmt: skip
    data = result.data
    assert (data["first"]["date"], data["second"]["date"]) == ("2009-04-14", "2020-10-15")
    assert (data["earlier"], data["years"], data["days"]) == ("first", 11, 4202)
    assert data["first"]["chunk_id"] == "a#0" and "registered in Bergen" in data["first"]["sentence"]
    assert "difference: 11 full years, 4202 days" in result.content and "[c:a#0]" in result.content
    assert [ev.chunk_id for ev in result.evidence] == ["a#0", "b#0"]


def test_a_difference_in_the_unit_asked_reads_as_an_answer():
    """Given both units a small model copies both ("11 full years, 4202 days" for "11 years")."""
    years = _dates(_ctx(), first="Nordvik Gauges was founded", second="Tidal Group acquired Nordvik Gauges",
                   op="difference", unit="years")  # fmt: skip
    assert "difference: 11 years" in years.content and "4202" not in years.content
    assert (years.data["difference"], years.data["years"], years.data["unit"]) == ("11 years", 11, "years")
    days = _dates(_ctx(), first="Nordvik Gauges was founded", second="Tidal Group acquired Nordvik Gauges",
                  op="difference", unit="days")  # fmt: skip
    assert "difference: 4202 days" in days.content and days.data["difference"] == "4202 days"


def test_the_order_names_the_side_that_came_first():
    result = _dates(_ctx(), first="Tidal Group acquired Nordvik Gauges", second="Nordvik Gauges was founded")
    assert result.data["earlier"] == "second" and "order: second (Nordvik Gauges was founded) came first" in result.content


def test_a_year_gives_years_but_no_days_and_a_missing_date_is_said():
    coarse = _dates(_ctx(), first="Nordvik opened a plant in Haugesund", second="Tidal Group acquired Nordvik Gauges",
                    op="difference")  # fmt: skip
    assert coarse.data["first"]["granularity"] == "year" and coarse.data["days"] is None and coarse.data["years"] == 5
    missing = _dates(_ctx(), first="the coronation of the harbour king", second="Nordvik Gauges was founded")
    assert missing.data["first"]["date"] is None and missing.data["earlier"] is None and missing.data["years"] is None
    assert "no date found" in missing.content and "cannot compare: a date is missing" in missing.content


def test_a_seen_chunk_counts_beside_the_sides_own_search():
    run = RunState(question="q")  # a chunk the run saw (a web result, say) that the index does not hold
    run.evidence["x#0"] = Evidence(chunk_id="x#0", doc_id="x", title="Letter",
                                   text="Nordvik Gauges opened its Tromso office on 2 June 2016.", rank=1)  # fmt: skip
    result = _dates(_ctx(run), first="Nordvik Gauges opened its Tromso office", second="Nordvik Gauges was founded")
    assert result.data["first"]["chunk_id"] == "x#0" and result.data["first"]["date"] == "2016-06-02"
    assert result.data["earlier"] == "second"


def test_empty_sides_and_unknown_ops_are_refused_with_the_valid_form():
    registry = build_registry(_ctx())
    assert registry.call("dates", {"first": " ", "second": "x y"}).error
    bad = registry.call("dates", {"first": "a b", "second": "c d", "op": "sum"})
    assert bad.error and "difference" in bad.content
