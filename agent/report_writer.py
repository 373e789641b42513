"""Long-form report text (report_mode="long"): one LLM call over the evidence the run cited."""

from __future__ import annotations

import re

from agent import prompts
from agent.llm import ChatModel, LLMError, Message
from agent.reader import content_words, invented_numbers
from agent.report import select_citations
from agent.state import CITATION_RE, Evidence, RunState
from agent.tools.context import counted_chat, neutralize
from agent.tools.search import snippet
from eventfold.run_options import RunOptions

SUPPORT = 0.5  # share of a written sentence's content words that its cited passages must hold
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?!\[c:)|(?<=\])\s+(?=[A-Z])")


def write_long_report(run: RunState, model: ChatModel, options: RunOptions) -> str | None:
    """A few paragraphs citing [c:ID]; None when the model fails (the short report still stands)."""
    sources, _ = select_citations(run, limit=8)
    if not sources:
        return None
    evidence = "\n".join(
        f"[c:{ev.chunk_id}] {ev.title}: {neutralize(snippet(ev.text, 500))}" for ev in sources
    )
    prompt = prompts.REPORT_TEMPLATE.format(
        question=run.question,
        answer=run.answer,
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
    return grounded(resp.text.strip(), run, sources) or None


def grounded(body: str, run: RunState, given: list[Evidence]) -> str:
    """The writer's text without the sentences its sources do not support: a sentence stays when at least
    `SUPPORT` of its content words, and every number it states, are in the passages it cites (citing
    none: in the passages it was given): a small model handed unrelated passages writes fluent, "cited" claims
    that none of them holds. A heading stays when something under it does; a closing line counts the drops."""
    pool = " ".join(ev.text for ev in given)
    pool_words = content_words(pool)
    out: list[str] = []
    heading: str | None = None
    dropped = 0
    for line in body.splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            heading = line if line.strip() else heading
            if not line.strip() and out and out[-1].strip():
                out.append("")
            continue
        kept = []
        for sentence in _SENTENCE.split(line):
            cited = [run.evidence[c].text for c in CITATION_RE.findall(sentence) if c in run.evidence]
            plain = CITATION_RE.sub("", sentence)
            source = " ".join(cited) if cited else pool
            words, have = content_words(plain), content_words(source) if cited else pool_words
            if not invented_numbers(plain, source) and (not words or len(words & have) >= SUPPORT * len(words)):
                kept.append(sentence)
            else:
                dropped += 1
        if kept and any(content_words(CITATION_RE.sub("", s)) for s in kept):
            if heading is not None:
                out += [heading]
                heading = None
            out.append(" ".join(kept))
    text = "\n".join(out).strip()
    if dropped and text:
        text += f"\n\n_{dropped} sentence(s) of the written summary left out: their words are not in the passages they cite._"
    return text
