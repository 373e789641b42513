"""Score a report written for a composite task, per sub-question, without a judge.

Per sub-question: the answer the report states for it (eval/longhorizon/sections.py) against the gold
answers with SQuAD EM/F1 (eval/multihop/metrics.py); `hit` = a gold alias appears in that stated answer;
`mentioned` = a gold alias appears anywhere in the report body outside restated questions (a lenient check
that works even when the report ignores the requested structure). Citations: the markers in the sub-question's section, `[c:ID]`
(a chunk id) or `[n]` (entry n of the report's Sources list), resolved to document ids; citation
precision = share of the distinct cited documents that are gold passages of that sub-question (None when
the section cites nothing). A marker that resolves to no document counts as a wrong citation. Over the
whole report: the same share over all distinct documents cited in the body against all gold passages.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping

from pydantic import BaseModel, Field

from eval.longhorizon.sections import Located, locate_answers, split_tail
from eval.longhorizon.tasks import CompositeTask
from eval.multihop.metrics import exact_match, f1_score, mentions_answer, normalize_answer

CHUNK_MARKER = re.compile(r"\[c:([^\]\s]+)\]")
NUMBER_MARKER = re.compile(r"\[(\d{1,3}(?:\s*[,;]\s*\d{1,3})*)\]")
SOURCE_ENTRY = re.compile(r"^\s*(?:[-*]\s*)?\[?(\d{1,3})[\].)]\s+(.*)$")
SOURCE_CHUNK = re.compile(r"\bc:([^\s`\]\)·,;]+)")
SOURCE_DOC = re.compile(r"\bdoc(?:_id)?\s*[:=]?\s*`?([^\s`\]\)·,;]+)`?", re.I)
UNRESOLVED = "?"  # the document id of a marker that resolves to nothing
PLACEHOLDERS = frozenset({"id", "chunk_id", "<id>"})  # "[c:ID]" copied from an instruction is no citation


class SubScore(BaseModel):
    n: int
    qid: str
    found: bool
    explicit: bool  # the section had an "Answer:" line
    answer: str
    em: float
    f1: float
    hit: float
    mentioned: float
    cited_docs: list[str] = Field(default_factory=list)  # distinct, "?" for unresolved markers
    citation_precision: float | None = None


class ReportScore(BaseModel):
    task_id: str
    k: int
    found: float  # share of sub-questions the report has a section for
    em: float
    f1: float
    hit: float
    mentioned: float
    citation_precision: float | None  # mean over sub-questions whose section cites something
    report_citation_precision: float | None  # over all distinct documents cited in the body
    cited_subs: int  # sub-questions whose section cites something
    subs: list[SubScore]


def parse_sources(tail: list[str]) -> dict[int, tuple[str | None, str | None]]:
    """Numbered source entries of the report's tail: n -> (chunk id, doc id), either may be None."""
    out: dict[int, tuple[str | None, str | None]] = {}
    for line in tail:
        m = SOURCE_ENTRY.match(line)
        if not m:
            continue
        chunk = SOURCE_CHUNK.search(m.group(2))
        doc = SOURCE_DOC.search(m.group(2))
        out.setdefault(int(m.group(1)), (chunk.group(1) if chunk else None, doc.group(1) if doc else None))
    return out


def cited_docs(
    text: str, sources: Mapping[int, tuple[str | None, str | None]], chunk_docs: Mapping[str, str]
) -> list[str]:
    """Distinct document ids the markers in `text` resolve to, in order ("?" for unresolved ones)."""
    docs: list[str] = []
    for cid in CHUNK_MARKER.findall(text):
        if cid.lower() in PLACEHOLDERS:
            continue
        docs.append(chunk_docs.get(cid) or _source_doc_of_chunk(cid, sources) or UNRESOLVED)
    for group in NUMBER_MARKER.findall(text) if sources else []:  # "[3]" needs a Sources list
        for num in re.split(r"\s*[,;]\s*", group):
            chunk, doc = sources.get(int(num), (None, None))
            docs.append(doc or (chunk_docs.get(chunk) if chunk else None) or UNRESOLVED)
    return list(dict.fromkeys(docs))


def _source_doc_of_chunk(cid: str, sources: Mapping[int, tuple[str | None, str | None]]) -> str | None:
    return next((doc for chunk, doc in sources.values() if chunk == cid and doc), None)


def precision(docs: list[str], gold: set[str]) -> float | None:
    return sum(d in gold for d in docs) / len(docs) if docs else None


def _contains(text: str, golds: list[str]) -> float:
    return float(mentions_answer(text, golds))


def without_questions(text: str, questions: list[str]) -> str:
    """`text` normalised, with every restatement of the questions cut out (a report that echoes the
    request must not "mention" an answer that one of the other questions names)."""
    hay = normalize_answer(text)
    for q in questions:
        if normalize_answer(q):
            hay = hay.replace(normalize_answer(q), " | ")
    return hay


def score_report(
    task: CompositeTask, report: str, chunk_docs: Mapping[str, str] | None = None
) -> ReportScore:
    """Per-sub-question and task-level scores of `report`; `chunk_docs` maps chunk ids to document ids
    (the run's evidence); the report's own Sources list is used too."""
    chunk_docs = chunk_docs or {}
    body, tail = split_tail(report)
    body_text = "\n".join(body)
    sources = parse_sources(tail)
    answer_free = without_questions(body_text, [sq.question for sq in task.sub_questions])
    located = locate_answers(report, [sq.question for sq in task.sub_questions])
    subs: list[SubScore] = []
    for sq in task.sub_questions:
        loc = located.get(sq.n, Located())
        docs = cited_docs(loc.text, sources, chunk_docs) if loc.found else []
        subs.append(
            SubScore(
                n=sq.n,
                qid=sq.qid,
                found=loc.found,
                explicit=loc.explicit,
                answer=loc.answer,
                em=exact_match(loc.answer, sq.answers) if loc.answer else 0.0,
                f1=f1_score(loc.answer, sq.answers) if loc.answer else 0.0,
                hit=_contains(loc.answer, sq.answers),
                mentioned=_contains(answer_free, sq.answers),
                cited_docs=docs,
                citation_precision=precision(docs, set(sq.gold_passage_ids)),
            )
        )
    per_sub = [s.citation_precision for s in subs if s.citation_precision is not None]
    return ReportScore(
        task_id=task.task_id,
        k=task.k,
        found=statistics.fmean(float(s.found) for s in subs),
        em=statistics.fmean(s.em for s in subs),
        f1=statistics.fmean(s.f1 for s in subs),
        hit=statistics.fmean(s.hit for s in subs),
        mentioned=statistics.fmean(s.mentioned for s in subs),
        citation_precision=statistics.fmean(per_sub) if per_sub else None,
        report_citation_precision=precision(
            cited_docs(body_text, sources, chunk_docs), task.gold_passage_ids
        ),
        cited_subs=len(per_sub),
        subs=subs,
    )
