"""The reader: a short answer from the sentences of the evidence that bear on the question (one LLM call).

`read_answer` is the reader of eval's retrieve-and-read systems (`eval --mode naive`); the workflow
policy words its answers with the same prompt (`reader_messages`) over the evidence its tools gathered.
The passages are cut down to their best sentences, two hops deep (`agent.focus`), before the model
sees them: a 1.5B model reads ten sentences right where it misreads five whole passages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agent import prompts
from agent.focus import Embed, Passage, focus
from eventfold.llm.types import ChatModel, ChatResponse, Message

_STOP = frozenset(
    "that this with from have were which their there these those they them into also been about such than "
    "other more most some only over each what when where will would should could while both report "
    "evidence question answer based provided found period time".split()
)


def reader_messages(
    question: str,
    passages: Sequence[Passage],
    embed: Embed | None = None,
    facts: Sequence[tuple[str, str]] = (),
    *,
    finding: bool = False,
) -> list[Message]:
    """The reader's prompt: the focused sentences of `passages`, after the `facts` (sub-question,
    answer) already found; the facts' answers also steer which sentences are chosen (the bridge).
    `finding`: `question` is a report's requirement, answered by a sentence or two (`agent.outline`)."""
    steer = " ".join([question, *(answer for _, answer in facts)])
    lines = [
        prompts.SENTENCE_LINE.format(n=i, title=s.title, text=s.text)
        for i, s in enumerate(focus(steer, passages, embed=embed), 1)
    ]
    known = "\n".join(prompts.FACT_LINE.format(question=q, answer=a) for q, a in facts)
    user = (prompts.FINDING_USER if finding else prompts.READER_USER).format(
        sentences="\n".join(lines) or "(none)",
        question=question,
        facts=prompts.FACTS_BLOCK.format(lines=known) if known else "",
    )
    system = prompts.FINDING_SYSTEM if finding else prompts.READER_SYSTEM
    return [Message(role="system", content=system), Message(role="user", content=user)]


def causes_messages(question: str, causes: Sequence[Passage]) -> list[Message]:
    """The causal reader's prompt: `causes` (ranked, each titled by its date) as numbered events."""
    events = "\n".join(prompts.SENTENCE_LINE.format(n=i, title=c.title, text=" ".join(c.text.split()))
                       for i, c in enumerate(causes, 1))  # fmt: skip
    user = prompts.CAUSES_USER.format(question=question, events=events or "(none)")
    return [Message(role="system", content=prompts.CAUSES_SYSTEM), Message(role="user", content=user)]


_NUMBERED = re.compile(r"^\[?(\d{1,2})\]?\.?$")


def numbered_pick(reply: str, items: Sequence[Passage]) -> str:
    """A reply naming one of the numbered lines it was shown ("[1]", "2.") as that line's text; any other
    reply as it is. The causal reader is shown numbered events, and a 1.5B sometimes answers with the number."""
    m = _NUMBERED.match(reply.strip())
    return " ".join(items[int(m.group(1)) - 1].text.split()) if m and 1 <= int(m.group(1)) <= len(items) else reply


def first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text.strip() else ""


def read_answer(
    chat_model: ChatModel, question: str, passages: Sequence[Passage], max_tokens: int, embed: Embed | None = None
) -> tuple[str, dict[str, Any]]:
    """The reader's short answer from `passages`, and its token usage."""
    messages = reader_messages(question, passages, embed)
    resp = chat_model.chat(messages, temperature=0.0, max_tokens=max_tokens)
    return first_line(resp.text), usage_stats(resp)


def usage_stats(resp: ChatResponse) -> dict[str, Any]:
    u = resp.usage
    out: dict[str, Any] = {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens}
    if u.evaluated_prompt_tokens is not None:
        out["evaluated_prompt_tokens"] = u.evaluated_prompt_tokens
    return out


def content_words(text: str) -> set[str]:
    """The words that carry a sentence's content (4+ letters or digits, common words left out)."""
    return {w for w in re.findall(r"[a-z0-9]{4,}", text.lower()) if w not in _STOP}


def invented_numbers(text: str, source: str) -> set[str]:
    """The numbers `text` states that `source` does not (numbers as written: "1990" is not "1998")."""
    return set(re.findall(r"\d+", text)) - set(re.findall(r"\d+", source))


def adds_to(finding: str, requirement: str, passages: Sequence[Passage]) -> bool:
    """A finding says something its requirement does not, and at least half of what it adds is in the
    passages it was read from (a 1.5B restated "the 'pandemic period' from January 2020 to June 2022" as
    its own finding, citing an unrelated passage); every number it states is in the passages (it wrote
    "founded in Stavanger in 1990" from passages that never date the founding), and one of the passages
    holds a third of the requirement's own words."""
    asked = content_words(requirement)
    new = content_words(finding) - asked
    source = " ".join(p.text for p in passages)
    have = content_words(source)
    numbers = invented_numbers(finding, source)
    # and one passage is about the requirement: a third of its words (handed Wikipedia passages for a
    # DRB II request, the 1.5B answered "Elite Capture: how the wealthy exploit programs" with a
    # strategy game's release from a passage sharing none of them)
    about = max((len(asked & content_words(p.text)) for p in passages), default=0)
    on_topic = not asked or 3 * about >= len(asked)
    return bool(new) and 2 * len(new & have) >= len(new) and not numbers and on_topic  # every number as written


def is_insufficient(answer: str) -> bool:
    return not answer.strip() or answer.strip().strip(".").lower() == prompts.INSUFFICIENT
