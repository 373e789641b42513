"""The final Markdown report, pure functions of the run state (plus the model name).

`full` (default): the answer with [c:ID] citations; findings per sub-question (the sentence of its
best evidence that matches it, cited); sources with titles, documents and the dates they mention;
open questions; the run's numbers. `short`: the answer line and its sources (one line of answer).
`long`: `full` plus the written summary (`agent.report_writer`).
"""

from __future__ import annotations

import re

from agent.briefing import title as briefing_title
from agent.leads import plain_sentences
from agent.outline import title as outline_title
from agent.state import CITATION_RE, Evidence, RunState
from agent.tools.context import neutralize
from agent.tools.search import snippet
from eventrag.dates import find_dates


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _quote(text: str, limit: int) -> str:
    """Document text as inert Markdown: no control tokens, no live link/citation brackets."""
    return neutralize(snippet(text, limit)).replace("[", "\\[")


def select_citations(run: RunState, limit: int = 5) -> tuple[list[Evidence], str]:
    """The evidence the answer rests on, and how it was chosen.

    1. chunk ids cited by the answer (the model's citations, or the chunks the reader's answer was
    found in) that the run actually saw; 2. otherwise the seen chunks whose text contains the answer;
    3. otherwise the top hits of the last search (marked as retrieved, not verified)."""
    cited = list(run.answer_citations)
    for text in (run.answer or "", run.report_body or ""):
        cited += [c for c in CITATION_RE.findall(text) if c not in cited]
    chosen = [run.evidence[c] for c in cited if c in run.evidence]
    if chosen:
        hows = {
            "reader": "passages the reader's answer rests on",
            "dates": "the dated passages the answer is computed from",
            "timeline": "the event the answer names in the dated evidence, and the event it led to",
        }
        return chosen[:limit], hows.get(run.answer_source, "cited by the agent")
    answer = _norm(run.answer or "")
    if answer and answer not in ("unknown", "i don t know", "insufficient information"):
        hits = [ev for ev in run.evidence.values() if answer in _norm(ev.text)]
        if hits:
            hits.sort(key=lambda ev: (-(ev.score or 0.0), ev.step))
            return hits[:limit], "evidence containing the answer"
    if run.evidence:
        last = max(ev.step for ev in run.evidence.values())
        recent = [ev for ev in run.evidence.values() if ev.step == last]
        recent.sort(key=lambda ev: -(ev.score or 0.0))
        return recent[: min(limit, 3)], "retrieved in the last search (not verified)"
    return [], "no evidence was retrieved"


def best_sentence(text: str, query: str) -> str:
    """The sentence of `text` sharing most words with `query`."""
    sentences = plain_sentences(text)
    if not sentences:
        return snippet(text, 200)
    words = set(re.findall(r"\w{3,}", query.lower()))
    return max(sentences, key=lambda s: len(words & set(re.findall(r"\w{3,}", s.lower()))))


def findings(run: RunState, per_question: int = 2) -> list[tuple[str, list[tuple[str, Evidence]]]]:
    """For each sub-question, its best evidence sentences (sentence, evidence)."""
    out = []
    for sq in run.plan.sub_questions:
        rows = []
        # a briefing's answered question shows the chunks its answer rests on, not other hits
        for cid in (sq.citations if run.plan.briefing and sq.answer else sq.evidence)[:per_question]:
            ev = run.evidence.get(cid)
            if ev is not None:
                rows.append((best_sentence(ev.text, f"{sq.text} {sq.answer or run.answer or ''}"), ev))
        out.append((sq.text, rows))
    return out


def mentioned_dates(text: str, limit: int = 2) -> list[str]:
    return [text[s:e] for s, e, _ in sorted(find_dates(text), key=lambda d: d[0])[:limit]]


def _answer_lines(run: RunState, cites: list[Evidence]) -> list[str]:
    unanswered = (run.answer or "").strip().lower().startswith("insufficient")
    if run.plan.briefing and not any(sq.answer for sq in run.plan.sub_questions):
        unanswered = True  # "0 of 8 …": no source supports it
    marks = "" if unanswered else " ".join(f"[c:{ev.chunk_id}]" for ev in cites[:3])
    heading = run.question.strip()
    if run.plan.briefing:
        heading = outline_title(run.question) if run.plan.outline else briefing_title(run.question)
    lines = [f"# {neutralize(heading)}", "", f"**Answer:** {run.answer or '(no answer)'} {marks}".rstrip(), ""]
    if run.answer_source == "reader":
        lines += [f"_Answered by the reader over the collected evidence ({run.stop_reason})._", ""]
    elif run.answer_source in ("dates", "timeline"):
        lines += [f"_{neutralize(run.stop_reason[:1].upper() + run.stop_reason[1:])}._", ""]
    elif run.status == "forced":
        lines += [f"_The model's answer stands without verified evidence ({run.stop_reason})._", ""]
    return lines


def _sources(sources: list[Evidence], how: str) -> list[str]:
    lines = ["## Sources", f"_{how}_", ""]
    for ev in sources:
        dates = mentioned_dates(ev.text)
        when = f" · dates mentioned: {', '.join(dates)}" if dates else ""
        lines.append(f"- `[c:{ev.chunk_id}]` *{_quote(ev.title or '(untitled)', 120)}* · doc `{ev.doc_id}`{when}")
        lines.append(f"  > {_quote(ev.text, 240)}")
    return lines + (["(none)"] if not sources else [])


def _timeline_lines(run: RunState) -> list[str]:
    """An origin question's timeline (`agent.causal`): the dated events before the target, the one the
    answer names marked."""
    origin = run.plan.origin
    assert origin is not None
    lines = ["## Timeline", "_the dated events of the evidence before the event asked about, in time order_", ""]
    for e in [*origin.events, origin.target]:
        mark = " ← **the answer**" if e == origin.origin else (" ← the event asked about" if e == origin.target else "")
        lines.append(f"- **{_quote(e.raw, 40)}** — {_quote(e.text, 240)} [c:{e.chunk_id}]{mark}")
    return lines + [""]


def _run_lines(run: RunState, model_name: str) -> list[str]:
    c = run.counters
    lines = [
        "## Run",
        f"- steps: {len(run.steps)} · tool calls: {c.tool_calls} ({c.tool_errors} errors)",
        f"- folds: {c.folds} by the agent, {c.guard_folds} by the budget guard · unfolds: {c.unfolds}",
        f"- context tokens: peak {c.peak_context_tokens}, final {c.final_context_tokens}",
        f"- LLM: {c.llm_calls} calls, {c.prompt_tokens} prompt tokens ({c.evaluated_prompt_tokens} evaluated), "
        f"{c.completion_tokens} generated",
        f"- stop: {run.status}" + (f" ({run.stop_reason})" if run.stop_reason else ""),
    ]
    return lines + ([f"- model: {model_name}"] if model_name else [])


def build_report(run: RunState, model_name: str = "", mode: str = "full") -> str:
    """The Markdown report (`mode`: short | full | long)."""
    sources, how = select_citations(run)
    lines = _answer_lines(run, sources)
    if run.report_body:  # the writer's text: citations of chunks the run never saw are dropped
        body = CITATION_RE.sub(lambda m: m.group(0) if m.group(1) in run.evidence else "", run.report_body)
        lines += [neutralize(body).strip(), ""]
    if mode != "short" and run.plan.origin is not None:
        lines += _timeline_lines(run)
    if mode != "short":
        lines += ["## Findings", ""]
        for sq, (question, rows) in zip(run.plan.sub_questions, findings(run), strict=True):
            lines.append(f"### {sq.id}. {neutralize(question)}")
            if run.plan.briefing:  # one section per requested question, its answer (a finding) first
                cites = " ".join(f"[c:{c}]" for c in sq.citations)
                label, most = ("Finding", 400) if run.plan.outline else ("Answer", 200)
                lines += [f"{label}: {_quote(sq.answer, most)} {cites}".rstrip() if sq.answer else
                          f"{label}: not found in the evidence", ""]  # fmt: skip
            elif sq.answer:
                lines.append(f"- **Found:** {_quote(sq.answer, 200)}")
            if rows and run.plan.briefing and not sq.answer:  # what was found, said for what it is
                lines.append("_closest passages found (they do not answer it):_")
            lines += [f"- {_quote(s, 300)} [c:{ev.chunk_id}]" for s, ev in rows] or ["- (no evidence found)"]
            lines.append("")
        for _, rows in findings(run):
            sources += [ev for _, ev in rows if all(ev.chunk_id != s.chunk_id for s in sources)]
    lines += _sources(sources, how) + [""]
    if mode != "short":
        unanswered = [sq.text for sq in run.plan.sub_questions if not sq.done or (run.plan.briefing and not sq.answer)]
        open_q = [*unanswered, *(f"{q} (not researched: a briefing covers at most {len(run.plan.sub_questions)})"
                                 for q in run.plan.beyond)]  # fmt: skip
        if (run.answer or "").strip().lower().startswith("insufficient"):
            open_q.append(run.question)
        lines += ["## Open questions", *([f"- {neutralize(q)}" for q in open_q] or ["- (none)"]), ""]
    lines += _run_lines(run, model_name)
    return "\n".join(lines) + "\n"


def report_sources(run: RunState) -> list[dict[str, str]]:
    """The cited sources as data (for JSON output and checks)."""
    sources, _ = select_citations(run)
    return [
        {"n": str(i), "chunk_id": ev.chunk_id, "doc_id": ev.doc_id, "title": ev.title}
        for i, ev in enumerate(sources, 1)
    ]
