"""The final Markdown report, pure functions of the run state (plus the model name and wall time).

`short` (one screen for a single question): the answer with its [c:ID] citations, why (the cited
sentences, clean: a chunk's title and "Date:" header lines are not part of a sentence), the sources, and
the run's numbers. A long task has one "### n. question" section per item opening with "Answer: …".
`full`: also each item's evidence sentences, the trajectory's steps, the timelines the tools built and
all the evidence seen. `long`: `full` plus the written summary (`agent.report_writer`).
"""

from __future__ import annotations

import re

from agent.briefing import title as briefing_title
from agent.chunk_header import norm, split_header
from agent.memory import call_digest
from agent.outline import title as outline_title
from agent.plan import SubQuestion
from agent.state import CITATION_RE, Evidence, RunState
from agent.tools.context import neutralize
from agent.tools.search import snippet

WHY = 3  # cited sentences under the answer
SENTENCE_CHARS = 300
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(A-Z0-9])")


def _quote(text: str, limit: int) -> str:
    """Document text as inert Markdown: no control tokens, no live link/citation brackets."""
    return neutralize(snippet(text, limit)).replace("[", "\\[")


def body_text(ev: Evidence) -> str:
    """A chunk's text without its header lines (title, "Key: value" lines, headings at the top)."""
    return split_header(ev.title, ev.text)[1]


def sentences(ev: Evidence) -> list[str]:
    """The clean sentences of a chunk (fragments of 15 characters or less left out)."""
    return [s for s in _SENTENCE.split(body_text(ev)) if len(s) > 15]


def best_sentence(ev: Evidence, query: str, answer: str = "") -> str:
    """The sentence of `ev` holding the answer (if one does) that shares most words with `query`."""
    sents = sentences(ev) or [snippet(body_text(ev) or ev.text, 200)]
    key = norm(answer)
    holding = [s for s in sents if key and key in norm(s)] or sents
    words = set(re.findall(r"\w{3,}", f"{query} {answer}".lower()))
    return max(holding, key=lambda s: len(words & set(re.findall(r"\w{3,}", s.lower()))))


def select_citations(run: RunState, limit: int = 5) -> tuple[list[Evidence], str]:
    """The evidence the answer rests on, and how it was chosen: the chunks the answer cites (and those
    a written summary cites) that the run saw; else the seen chunks whose text holds the answer."""
    cited = list(run.answer_citations)
    for text in (run.answer or "", run.report_body or ""):
        cited += [c for c in CITATION_RE.findall(text) if c not in cited]
    chosen = [run.evidence[c] for c in cited if c in run.evidence]
    if chosen:
        return chosen[:limit], "cited by the answer"
    answer = norm(run.answer or "")
    if answer and answer not in ("unknown", "insufficient information"):
        hits = sorted((ev for ev in run.evidence.values() if answer in norm(ev.text)), key=lambda ev: ev.step)
        if hits:
            return hits[:limit], "seen passages that contain the answer"
    return [], "no passage supports an answer"


def _heading(run: RunState) -> str:
    if run.plan.outline:
        return outline_title(run.question)
    return briefing_title(run.question) if run.plan.briefing else run.question.strip()


def _answer_lines(run: RunState, cites: list[Evidence]) -> list[str]:
    marks = " ".join(f"[c:{ev.chunk_id}]" for ev in cites[:3]) if run.answer_citations else ""
    answer = neutralize(run.answer) if run.answer else "(no answer)"
    lines = [f"# {neutralize(_heading(run))}", "", f"**Answer:** {answer} {marks}".rstrip(), ""]
    if run.status != "answered":
        lines += [f"_Stopped: {neutralize(run.stop_reason or run.status)}._", ""]
    return lines


def _why(run: RunState, cites: list[Evidence]) -> list[str]:
    if not cites or run.plan.sub_questions:
        return []
    rows = [f"- {_quote(best_sentence(ev, run.question, run.answer or ''), SENTENCE_CHARS)} [c:{ev.chunk_id}]"
            for ev in cites[:WHY]]  # fmt: skip
    return ["## Why", *rows, ""]


def _item_lines(run: RunState, sq: SubQuestion, full: bool) -> list[str]:
    """One item's section: "Answer: …" with its citations, then (full) its evidence sentences."""
    lines = [f"### {sq.id}. {neutralize(sq.text)}"]
    label = "Finding" if run.plan.outline else "Answer"
    if sq.answer is not None:
        cites = " ".join(f"[c:{c}]" for c in sq.citations)
        lines.append(f"{label}: {_quote(sq.answer, 400)} {cites}".rstrip())
    elif run.plan.briefing:
        lines.append(f"{label}: not answered")
    ids = (sq.citations if sq.answer is not None else sq.evidence)[:2]
    rows = [(best_sentence(run.evidence[c], sq.text, sq.answer or ""), c) for c in ids if c in run.evidence]
    if rows and (full or not run.plan.briefing):
        if sq.answer is None and run.plan.briefing:
            lines.append("_closest passages found (they do not answer it):_")
        lines += [f"- {_quote(s, SENTENCE_CHARS)} [c:{c}]" for s, c in rows]
    return lines + [""]


def _sources(sources: list[Evidence], how: str) -> list[str]:
    lines = ["## Sources", f"_{how}_"]
    for ev in sources:
        lines.append(f"- `[c:{ev.chunk_id}]` *{_quote(ev.title or '(untitled)', 100)}* · doc `{ev.doc_id}`")
    return lines + (["(none)"] if not sources else []) + [""]


def _steps(run: RunState) -> list[str]:
    lines = ["## Steps"]
    for s in run.steps:
        mark = "" if s.followed is None else (" (suggestion followed)" if s.followed else f" (suggested: {s.suggested})")
        what = call_digest(s) if s.kind == "action" else f"step {s.n}: invalid turn"
        lines.append(f"- {_quote(what, 220)}{_quote(mark, 120)}")
    return lines + [""]


def _timelines(run: RunState) -> list[str]:
    """The timelines the timeline tool built: each event with its date, link and chunk."""
    lines: list[str] = []
    for s in run.steps:
        for call, data in zip(s.assistant.tool_calls, s.data, strict=False):
            if call.name != "timeline" or not data.get("events"):
                continue
            subject = (data.get("subject") or {}).get("text") or str(call.arguments.get("subject", ""))
            lines.append(f"### {_quote(subject, 120)} ({data.get('relation', '')})")
            for e in data["events"][:5]:
                when, link, text = e.get("date") or "undated", e.get("link"), _quote(str(e.get("text", "")), 200)
                lines.append(f"- {when} · {link} · {text} [c:{e.get('chunk_id')}]")
    return ["## Timeline", *lines, ""] if lines else []


def _evidence(run: RunState) -> list[str]:
    lines = ["## Evidence seen"]
    for ev in run.evidence.values():
        lines.append(f"- [c:{ev.chunk_id}] *{_quote(ev.title or '(untitled)', 80)}*: {_quote(body_text(ev), 200)}")
    return lines + [""]


def run_lines(run: RunState, model_name: str, wall_s: float | None = None) -> list[str]:
    """The footer: who chose the calls, how many, folds, tokens, time."""
    c = run.counters
    wall = f" · wall time {wall_s:.1f} s" if wall_s is not None else ""
    shown = f" · suggestions followed {c.suggestions_followed} of {c.suggestions_shown}" if c.suggestions_shown else ""
    return [
        "## Run",
        f"- policy {run.policy} · {c.tool_calls} tool calls ({c.distinct_tools} distinct tools, {c.tool_errors} errors, "
        f"{c.invalid_turns} invalid turns){shown}",
        f"- folds {c.folds} by the policy, {c.guard_folds} by the budget guard · unfolds {c.unfolds}",
        f"- context tokens peak {c.peak_context_tokens}, final {c.final_context_tokens} · LLM {c.llm_calls} calls, "
        f"{c.evaluated_prompt_tokens} prompt tokens evaluated, {c.completion_tokens} generated{wall}",
        f"- {run.status}" + (f" ({neutralize(run.stop_reason)})" if run.stop_reason else "")
        + (f" · model {model_name}" if model_name else ""),
    ]


def build_report(run: RunState, model_name: str = "", mode: str = "short", wall_s: float | None = None) -> str:
    """The Markdown report (`mode`: short | full | long)."""
    full = mode != "short"
    sources, how = select_citations(run)
    lines = _answer_lines(run, sources) + _why(run, sources)
    if run.report_body:  # the writer's text: citations of chunks the run never saw are dropped
        body = CITATION_RE.sub(lambda m: m.group(0) if m.group(1) in run.evidence else "", run.report_body)
        lines += [neutralize(body).strip(), ""]
    for sq in run.plan.sub_questions:
        lines += _item_lines(run, sq, full)
        sources += [run.evidence[c] for c in sq.citations if c in run.evidence and run.evidence[c] not in sources]
    if run.plan.beyond:
        lines += [f"_Not researched (a task covers at most {len(run.plan.sub_questions)} items): "
                  f"{neutralize('; '.join(run.plan.beyond))}_", ""]  # fmt: skip
    if full:
        lines += _steps(run) + _timelines(run) + _evidence(run)
    lines += _sources(sources, how) + run_lines(run, model_name, wall_s)
    return "\n".join(lines) + "\n"


def report_sources(run: RunState) -> list[dict[str, str]]:
    """The cited sources as data (for JSON output and checks)."""
    sources, _ = select_citations(run)
    return [
        {"n": str(i), "chunk_id": ev.chunk_id, "doc_id": ev.doc_id, "title": ev.title}
        for i, ev in enumerate(sources, 1)
    ]
