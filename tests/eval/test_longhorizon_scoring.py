"""Per-sub-question scoring of hand-written reports: located answers, EM/F1, citation precision."""

from __future__ import annotations

import pytest

from eval.longhorizon.scoring import parse_sources, score_report
from eval.longhorizon.sections import locate_answers
from eval.longhorizon.tasks import CompositeTask, SubQuestion, render_request

QUESTIONS = [
    (
        "Who founded the publisher of the Journal of Tidal Studies?",
        ["Harriet Vance", "H. Vance"],
        ["d1", "d2"],
    ),
    ("In which city is the Velora Bridge?", ["Marnis"], ["d3"]),
    ("When did the Kvarts plant fire happen?", ["March 2015"], ["d4", "d5"]),
]
CHUNK_DOCS = {"c1": "d1", "c2": "d2", "c3": "d3", "c4": "d4", "c9": "d9"}


@pytest.fixture
def task() -> CompositeTask:
    subs = [
        SubQuestion(n=i, qid=f"q{i}", question=q, answers=a, gold_passage_ids=g)
        for i, (q, a, g) in enumerate(QUESTIONS, 1)
    ]
    return CompositeTask(
        task_id="toy-k3-s0-01",
        dataset="toy",
        k=3,
        seed=0,
        request=render_request([q for q, _, _ in QUESTIONS]),
        sub_questions=subs,
    )


def test_well_formed_report_scores_full_marks(task):
    report = f"""# Briefing

## 1. {QUESTIONS[0][0]}
**Answer:** Harriet Vance [c:c1]
Quillon Press publishes the journal [c:c1] and Vance founded it in 1902 [c:c2].

## 2. {QUESTIONS[1][0]}
Answer: Marnis. The bridge opened in 1931 [c:c3].

## 3. {QUESTIONS[2][0]}
Answer: March 2015 [c:c4]
"""
    s = score_report(task, report, CHUNK_DOCS)
    assert [sub.answer for sub in s.subs] == ["Harriet Vance", "Marnis", "March 2015"]
    assert s.em == 1.0 and s.f1 == 1.0 and s.found == 1.0 and s.hit == 1.0
    assert [sub.cited_docs for sub in s.subs] == [["d1", "d2"], ["d3"], ["d4"]]
    assert s.citation_precision == 1.0 and s.report_citation_precision == 1.0 and s.cited_subs == 3


def test_reordered_and_renumbered_sections_go_to_the_question_they_restate(task):
    report = f"""## 1. {QUESTIONS[2][0]}
Answer: March 2015

## 2. {QUESTIONS[0][0]}
Answer: H. Vance

## 3. {QUESTIONS[1][0]}
Answer: Trondheim
"""
    s = score_report(task, report)
    assert [sub.answer for sub in s.subs] == ["H. Vance", "Trondheim", "March 2015"]
    assert [sub.em for sub in s.subs] == [1.0, 0.0, 1.0]


def test_reordered_sections_keeping_their_numbers(task):
    report = "## 3\nAnswer: March 2015\n\n## 1\nAnswer: Harriet Vance\n\n## 2\nAnswer: Marnis\n"
    assert [s.em for s in score_report(task, report).subs] == [1.0, 1.0, 1.0]


def test_skipped_sub_question_scores_zero_and_is_not_found(task):
    report = f"## 1. {QUESTIONS[0][0]}\nAnswer: Harriet Vance\n\n## 3. {QUESTIONS[2][0]}\nAnswer: in 2015\n"
    s = score_report(task, report)
    second = s.subs[1]
    assert not second.found and second.answer == "" and second.em == 0.0 and second.f1 == 0.0
    assert s.subs[2].em == 0.0 and s.subs[2].f1 == pytest.approx(0.5)  # "in 2015" vs "march 2015"
    assert s.found == pytest.approx(2 / 3) and s.em == pytest.approx(1 / 3)
    assert s.citation_precision is None and s.report_citation_precision is None  # nothing cited


def test_numbered_lines_with_a_sources_list_and_numeric_markers(task):
    report = """# Research briefing

1. Harriet Vance founded it [1][2].
2) Marnis [3, 4]
3. **Answer:** March 2015 [5]

## Sources
1. `c:c1` · doc `d1` · *Quillon Press*
2. `c:c2` · doc `d2` · *Harriet Vance*
3. `c:c3` · doc `d3` · *Velora Bridge*
4. `c:c9` · doc `d9` · *Unrelated*

## Run
- steps: 12
"""
    s = score_report(task, report)
    assert [sub.answer for sub in s.subs] == ["Harriet Vance founded it", "Marnis", "March 2015"]
    assert s.subs[0].f1 > 0.5 and s.subs[0].hit == 1.0 and s.subs[1].em == 1.0
    assert s.subs[0].citation_precision == 1.0
    assert s.subs[1].cited_docs == ["d3", "d9"] and s.subs[1].citation_precision == 0.5
    assert s.subs[2].cited_docs == ["?"] and s.subs[2].citation_precision == 0.0  # [5] is not in Sources
    assert s.citation_precision == pytest.approx(0.5)
    # body cites d1 d2 d3 (gold) d9 and one unresolved marker: 3 of 5
    assert s.report_citation_precision == pytest.approx(3 / 5)


def test_unresolvable_chunk_ids_count_as_wrong_citations(task):
    report = f"## 2. {QUESTIONS[1][0]}\nAnswer: Marnis [c:c3] [c:made-up] [c:c1]\nAs asked, cite [c:ID].\n"
    sub = score_report(task, report, CHUNK_DOCS).subs[1]
    # the "[c:ID]" placeholder copied from the instructions is not a citation
    assert sub.cited_docs == ["d3", "?", "d1"] and sub.citation_precision == pytest.approx(1 / 3)


def test_lists_inside_headed_sections_are_not_taken_for_sections(task):
    report = f"""## 1. {QUESTIONS[0][0]}
Answer: Harriet Vance
1. Quillon Press publishes the journal.
2. Vance founded Quillon Press.

## 2. {QUESTIONS[1][0]}
- Answer: Marnis
"""
    located = locate_answers(report, [q for q, _, _ in QUESTIONS])
    assert located[1].answer == "Harriet Vance" and located[2].answer == "Marnis"
    assert not located[3].found


def test_section_without_answer_label_uses_its_first_line(task):
    report = f"### Question 2: {QUESTIONS[1][0]}\nThe Velora Bridge stands in Marnis. It opened in 1931.\n"
    sub = score_report(task, report).subs[1]
    assert sub.found and not sub.explicit
    assert sub.answer == "The Velora Bridge stands in Marnis" and sub.hit == 1.0 and sub.em == 0.0


def test_restated_request_does_not_shadow_the_answers(task):
    """A report that first lists the questions (no answers), then answers them under headings."""
    listing = "\n".join(f"{i}. {q}" for i, (q, _, _) in enumerate(QUESTIONS, 1))
    report = f"{listing}\n\n## 1\nAnswer: Harriet Vance\n## 2\nAnswer: Marnis\n## 3\nAnswer: March 2015\n"
    assert score_report(task, report).em == 1.0


def test_one_line_report_is_scored_as_missing_sections_but_mentions_count(task):
    """The agent's short report on main (its title is the request on one line, as the runner collapses
    whitespace): no sections; the gold may still be mentioned in the body."""
    report = f"""# {" ".join(task.request.split())}

**Answer:** Harriet Vance founded it; the bridge is in Marnis [1][2]

## Sources
_cited by the agent_

1. `c:c1` · doc `d1` · *Quillon Press*
2. `c:c9` · doc `d9` · *Unrelated*
"""
    s = score_report(task, report)
    assert s.found == 0.0 and s.em == 0.0 and s.citation_precision is None
    assert [sub.mentioned for sub in s.subs] == [1.0, 1.0, 0.0]
    assert s.report_citation_precision == 0.5


def test_answer_named_only_inside_a_restated_question_is_not_mentioned(task):
    task.sub_questions[1].question = "Which bridge did Harriet Vance design?"
    report = f"# Briefing on: {task.sub_questions[1].question}\n\nNothing was found.\n"
    assert score_report(task, report).subs[0].mentioned == 0.0
    assert score_report(task, report + "Harriet Vance founded Quillon Press.\n").subs[0].mentioned == 1.0


def test_parse_sources_reads_chunk_and_doc_ids():
    tail = ["## Sources", "1. `c:ab12` · doc `hotpot-9f` · *T*", "[2] c:cd34 (doc: musique-1)", "- 3. no ids"]
    assert parse_sources(tail) == {1: ("ab12", "hotpot-9f"), 2: ("cd34", "musique-1"), 3: (None, None)}


def test_the_agents_own_report_format_is_read(task):
    """agent/report.py's full report: Findings per plan sub-question (numbered headings), the writer's
    text above them, Sources as bullets with chunk and doc ids."""
    from agent.plan import Plan
    from agent.plan import SubQuestion as PlanQuestion
    from agent.report import build_report
    from agent.state import Evidence, RunState

    evidence = {
        "c1": Evidence(
            chunk_id="c1", doc_id="d1", title="Quillon Press", text="Harriet Vance founded Quillon Press."
        ),
        "c3": Evidence(
            chunk_id="c3", doc_id="d3", title="Velora Bridge", text="The Velora Bridge is in Marnis."
        ),
    }
    plan = Plan(
        sub_questions=[
            PlanQuestion(id=1, text=QUESTIONS[0][0], evidence=["c1"]),
            PlanQuestion(id=2, text=QUESTIONS[1][0], evidence=["c3"]),
        ]
    )
    run = RunState(
        question=" ".join(task.request.split()), evidence=evidence, plan=plan, answer="Harriet Vance",
        answer_citations=["c1"], status="answered", report_body="## 3. When?\nAnswer: March 2015 [c:c1]",
    )  # fmt: skip
    report = build_report(run, "m", mode="long")
    s = score_report(task, report, {cid: ev.doc_id for cid, ev in evidence.items()})
    assert s.subs[2].answer == "March 2015" and s.subs[2].em == 1.0 and s.subs[2].citation_precision == 0.0
    # the findings sections restate plan questions 1 and 2: their evidence sentence is the stated answer
    assert s.subs[0].found and s.subs[0].hit == 1.0 and s.subs[0].citation_precision == 1.0
    assert s.subs[1].found and "Marnis" in s.subs[1].answer and s.subs[1].citation_precision == 1.0
