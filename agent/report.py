"""The final Markdown report: the answer, numbered citations resolving to chunk id, document id and
title, and the run's numbers. Pure functions of the run state (plus the model name)."""

from __future__ import annotations

import re

from agent.state import CITATION_RE, Evidence, RunState
from agent.tools.context import neutralize
from agent.tools.search import snippet


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def select_citations(run: RunState, limit: int = 5) -> tuple[list[Evidence], str]:
    """The evidence the report cites, and how it was chosen.

    1. chunk ids the model cited (in `answer(citations=...)` or as [c:ID] in the report text) that it
       actually saw; 2. otherwise the seen chunks whose text contains the answer; 3. otherwise the
    top hits of the last search (marked as retrieved, not verified)."""
    cited = list(run.answer_citations)
    for text in (run.answer or "", run.report_body or ""):
        cited += [c for c in CITATION_RE.findall(text) if c not in cited]
    chosen = [run.evidence[c] for c in cited if c in run.evidence]
    if chosen:
        return chosen[:limit], "cited by the agent"
    answer = _norm(run.answer or "")
    if answer and answer not in ("unknown", "i don t know"):
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


def _numbered(text: str, numbers: dict[str, int]) -> str:
    def sub(m: re.Match[str]) -> str:
        n = numbers.get(m.group(1))
        return f"[{n}]" if n else ""

    return CITATION_RE.sub(sub, text).strip()


def build_report(run: RunState, model_name: str = "") -> str:
    """Markdown report with numbered citations [n] -> chunk id, doc id, title."""
    sources, how = select_citations(run)
    numbers = {ev.chunk_id: i for i, ev in enumerate(sources, 1)}
    marks = "".join(f"[{i}]" for i in numbers.values())
    answer = _numbered(run.answer or "(no answer)", numbers)
    lines = [f"# {run.question.strip()}", "", f"**Answer:** {answer} {marks}".rstrip(), ""]
    if run.status == "forced":
        lines += [f"_The answer was forced: {run.stop_reason}._", ""]
    if run.report_body:
        lines += [_numbered(run.report_body, numbers), ""]
    lines += ["## Sources", f"_{how}_", ""]
    for i, ev in enumerate(sources, 1):
        title = ev.title or "(untitled)"
        lines.append(f"{i}. `c:{ev.chunk_id}` · doc `{ev.doc_id}` · *{title}*")
        quote = neutralize(snippet(ev.text, 240)).replace("[", "\\[")  # document text: no live markers
        lines.append(f"   > {quote}")
    if not sources:
        lines.append("(none)")
    c = run.counters
    lines += [
        "",
        "## Run",
        f"- steps: {len(run.steps)} · tool calls: {c.tool_calls} ({c.tool_errors} errors)",
        f"- folds: {c.folds} by the agent, {c.guard_folds} by the budget guard · unfolds: {c.unfolds}",
        f"- context tokens: peak {c.peak_context_tokens}, final {c.final_context_tokens}",
        f"- LLM tokens processed: {c.prompt_tokens + c.completion_tokens} in {c.llm_calls} calls",
        f"- stop: {run.status}" + (f" ({run.stop_reason})" if run.stop_reason else ""),
    ]
    if model_name:
        lines.append(f"- model: {model_name}")
    return "\n".join(lines) + "\n"


def report_sources(run: RunState) -> list[dict[str, str]]:
    """The numbered sources as data (for JSON output and checks)."""
    sources, _ = select_citations(run)
    return [
        {"n": str(i), "chunk_id": ev.chunk_id, "doc_id": ev.doc_id, "title": ev.title}
        for i, ev in enumerate(sources, 1)
    ]
