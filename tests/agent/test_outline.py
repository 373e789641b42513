"""Outlines: in long mode a structured research request (parts, numbered topics with bullets, "First, …
Finally, …" paragraphs) has its own requirements as items, in order, each answered in the loop with a
finding and reported as one section; form lines and the blocked-source rule are not requirements; a
request of questions stays a question briefing."""

from __future__ import annotations

from agent_doubles import ScriptedChatModel

from agent.graph import AgentDeps
from agent.outline import MAX_REQUIREMENTS, outline_plan, requirements, title
from agent.runner import run_agent, validate_question
from eval.longhorizon.tasks import render_request
from eventfold.run_options import RunOptions

PARAGRAPHS = """Hello, I am studying the Curie family and their scientific careers. Please base it on sources up to 1950.

First, provide an overview of where Marie Curie and Pierre Curie were born and educated.

Second, based on this, create a comparative table.

Table 1: 'Prizes of the Curies'. This table must include the following columns: Name, Prize, Year.

Finally, please briefly analyze why their collaboration was productive.

Please ensure the report has a clear structure, with distinct headings.

**important**The following is a rule of highest priority: you are not allowed to view the following article: 'Curie biography'."""

NESTED = """I need a research report on Polish science in the nineteenth century. The report should include:

1.  **Scientists**: Introduce the core contributions of the following people:
    *   Marie Curie
    *   Pierre Curie
    *   Ignacy Lukasiewicz
2.  **Institutions**: Describe the scientific institutions of Warsaw, specifically including:
    *   **Universities**: List the universities in Warsaw and the years they were founded.
    *   **Societies**: Name the learned societies active in Warsaw before 1900 and their founders.
3.  **Legacy**: Summarize the long-term influence of these scientists on physics."""

LETTERED = """I would like to research two periods of Marie Curie's life:
1. The 'Warsaw period' from 1867 to 1891
2. The 'Paris period' from 1891 to 1934

For these two periods, you need to complete the following tasks:
A) Collect the places where she lived and worked in each period, with dates.
B) Synthesize the findings. Please specifically analyze:
1. Where was she born, and where did she study?
2. How did her work change after her marriage in 1895?"""


def _opts(**kw: object) -> RunOptions:
    return RunOptions(**{"report_mode": "long", "fold_summary": "deterministic", "suggest": False, **kw})


def test_paragraph_requirements_in_order_without_form_lines_or_the_blocked_rule() -> None:
    assert requirements(PARAGRAPHS) == [
        "Provide an overview of where Marie Curie and Pierre Curie were born and educated.",
        "Based on this, create a comparative table.",
        "'Prizes of the Curies'. This table must include the following columns: Name, Prize, Year.",
        "Briefly analyze why their collaboration was productive.",
    ]
    assert title(PARAGRAPHS) == "I am studying the Curie family and their scientific careers."


def test_a_list_under_an_item_short_entries_join_it_long_ones_stand_alone_under_its_title() -> None:
    assert requirements(NESTED) == [
        "Scientists: Marie Curie; Pierre Curie; Ignacy Lukasiewicz",
        "Institutions — Universities: List the universities in Warsaw and the years they were founded.",
        "Institutions — Societies: Name the learned societies active in Warsaw before 1900 and their founders.",
        "Legacy: Summarize the long-term influence of these scientists on physics.",
    ]
    reqs = requirements(LETTERED)
    assert reqs[:3] == [
        "The 'Warsaw period' from 1867 to 1891",  # the opening's own list: read as asked
        "The 'Paris period' from 1891 to 1934",
        "Collect the places where she lived and worked in each period, with dates.",
    ]
    assert reqs[3:] == ["Where was she born, and where did she study?",
                        "How did her work change after her marriage in 1895?"]  # fmt: skip


def test_what_is_not_an_outline_and_the_cap() -> None:
    assert requirements("What supplier event led to the 2015 SeaGuard recall?") == []
    assert requirements("Tell me about Marie Curie.\nOnly one thing: her birthplace.") == []
    many = "Report on the Curies.\n" + "\n".join(f"{i}. Describe the Curies' work in the year {1890 + i}." for i in range(1, 16))
    plan = outline_plan(many)
    assert plan is not None and plan.outline and plan.briefing and len(plan.sub_questions) == MAX_REQUIREMENTS
    assert plan.beyond == [f"Describe the Curies' work in the year {1890 + i}." for i in (13, 14, 15)]
    long_item = "Report on physics.\n1. " + "word " * 80 + "\n2. Second requirement here."
    assert all(len(r) <= 220 for r in requirements(long_item)) and requirements(long_item)[0].endswith("…")


def test_long_mode_keeps_a_structured_requests_lines() -> None:
    assert validate_question(NESTED, long=True).splitlines()[1] == "1. **Scientists**: Introduce the core contributions of the following people:"
    assert validate_question(PARAGRAPHS, long=True).splitlines()[1].startswith("First, provide an overview")
    assert "\n" not in validate_question(PARAGRAPHS)  # other modes: one line, as before
    assert validate_question("What  is\nthe capital?", long=True) == "What is the capital?"


def test_a_long_request_is_researched_per_requirement_and_reported_as_findings(backend) -> None:
    reqs = requirements(PARAGRAPHS)
    model = ScriptedChatModel([
        ("search", {"query": "Marie Curie Pierre Curie born"}),
        ("answer", {"answer": "Marie Curie was born in Warsaw in 1867 and Pierre Curie in Paris in 1859.",
                    "citations": ["d1#0", "d2#0"], "item": 1}),
        *[("answer", {"answer": "Insufficient information", "item": n}) for n in range(2, len(reqs) + 1)],
    ])  # fmt: skip
    res = run_agent(PARAGRAPHS, AgentDeps(model, backend), _opts())
    run = res.run
    assert run.plan.outline and [sq.text for sq in run.plan.sub_questions] == reqs
    assert not [c for c in model.calls if c["json_schema"]]  # no plan call
    assert backend.queries == ["Marie Curie Pierre Curie born"]  # the policy's searches only
    status = [c["messages"][-1].content for c in model.calls if c["tools"]]
    assert f"items: 0 of {len(reqs)} answered" in status[0]
    assert run.status == "answered" and run.answer == f"{len(reqs)} of {len(reqs)} items answered (one section each)"
    report = res.report
    assert report.startswith("# I am studying the Curie family and their scientific careers.\n")
    assert "not allowed to view" not in report
    sections = report.split("### ")
    assert sections[1].startswith(f"1. {reqs[0]}\nFinding: Marie Curie was born in Warsaw in 1867")


def test_a_request_of_questions_stays_a_question_briefing_in_long_mode(backend) -> None:
    qs = ["Where was Marie Curie born?", "Where was Pierre Curie born?"]
    model = ScriptedChatModel([("answer", {"answer": "yes", "item": 1}), ("answer", {"answer": "no", "item": 2})])
    run = run_agent(render_request(qs), AgentDeps(model, backend), _opts()).run
    assert run.plan.briefing and not run.plan.outline
    assert [sq.answer for sq in run.plan.sub_questions] == ["yes", "no"]


def test_a_finding_must_add_to_its_requirement_from_its_passages() -> None:
    from agent.reader import adds_to
    from agent.state import Evidence

    p = [Evidence(chunk_id="c1", doc_id="d", text="HTI was founded in Bergen in 2003 by Ingrid Halvorsen.", step=1)]
    req = "Describe when and where HTI was founded."
    assert adds_to("HTI was founded in Bergen in 2003.", req, p)
    assert not adds_to("HTI was founded at a time and place.", req, p)  # nothing new
    assert not adds_to("HTI was founded in Bergen in 1990.", req, p)  # a number the passage does not hold
    game = [Evidence(chunk_id="c2", doc_id="g", text="Elite Strike is a strategy game released in March 2005.", step=1)]
    assert not adds_to("Elite Strike is a strategy game released in March 2005.",
                       "Elite Capture: How the wealthy and powerful exploit programs for their own benefit.", game)  # fmt: skip
    assert not adds_to("HTI was founded in Oslo in 1990 by the Crown.", req, p)  # new, but not in the passage
    assert not adds_to("The period from January 2020 to June 2022.", "The period from January 2020 to June 2022", p)
