"""Long-form report text (report_mode="long"): one LLM call over the evidence the run cited."""

from __future__ import annotations

from agent import prompts
from agent.llm import ChatModel, LLMError, Message
from agent.outline import title as outline_title
from agent.report import select_citations
from agent.state import RunState
from agent.tools.context import counted_chat, neutralize
from agent.tools.search import snippet
from eventfold.run_options import RunOptions


def write_long_report(run: RunState, model: ChatModel, options: RunOptions) -> str | None:
    """A few paragraphs citing [c:ID]; None when the model fails (the short report still stands)."""
    sources, _ = select_citations(run, limit=8)
    if not sources:
        return None
    evidence = "\n".join(
        f"[c:{ev.chunk_id}] {ev.title}: {neutralize(snippet(ev.text, 500))}" for ev in sources
    )
    question, answer = run.question, run.answer
    if run.plan.outline:  # a long request: its requirements and the findings read for them
        question = "\n".join([outline_title(run.question), *(f"{sq.id}. {sq.text}" for sq in run.plan.sub_questions)])
        answer = "\n".join(f"{sq.id}. {neutralize(sq.answer)}" for sq in run.plan.sub_questions if sq.answer)
    prompt = prompts.REPORT_TEMPLATE.format(
        question=question,
        answer=answer,
        evidence=evidence,
        words=max(50, options.report_max_tokens // 2),
    )
    try:
        resp = counted_chat(
            run,
            model,
            [Message(role="system", content=prompts.REPORT_SYSTEM), Message(role="user", content=prompt)],
            temperature=0.0,
            max_tokens=options.report_max_tokens,
        )
    except LLMError:
        return None
    return resp.text.strip() or None
