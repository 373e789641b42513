"""Chained reading: the plan's sub-questions answered one after another, each answer carried forward.

A 1.5B reader shown both halves of a bridge ("the S2 units were fitted with the LS-7", "a contract with
Lindqvist Sensorteknik for its LS-7") still answers the question's first hop ("HTI"). Asked one hop
at a time it gets each right: the first sub-question's answer ("LS-7") joins the second sub-question's
search and is given to its reader as a fact found so far, as self-ask and IRCoT do for larger models.
The final reader then sees every sub-answer before the sentences (`agent.finish`).

- `chained_query`: a sub-question's search query, with the answers found before it;
- `answer_sub_question`: one reader call over the sub-question's own evidence (`SubQuestion.answer`,
  None when the reader finds nothing).
"""

from __future__ import annotations

from agent.focus import Embed
from agent.llm import ChatModel, LLMError
from agent.plan import SubQuestion
from agent.prompts import INSUFFICIENT
from agent.reader import adds_to, first_line, is_insufficient, reader_messages
from agent.state import Evidence, RunState
from agent.tools.context import counted_chat
from eventfold.run_options import RunOptions

FINDING_TOKENS = 96  # a finding is a sentence or two
FINDING_CHARS = 400


def chained_query(run: RunState, sq: SubQuestion) -> str:
    """`sq`'s text followed by the answers of the sub-questions before it (the names a search for
    "Which company made that element?" needs)."""
    found = [answer for _, answer in run.plan.facts(before=sq.id) if answer.lower() not in sq.text.lower()]
    return " ".join([sq.text, *found])


def sub_question_passages(run: RunState, sq: SubQuestion, k: int) -> list[Evidence]:
    """The passages for `sq`'s reader: its own evidence in rank order, at most `k`."""
    return [run.evidence[c] for c in sq.evidence if c in run.evidence][:k]


def answer_sub_question(
    run: RunState,
    sq: SubQuestion,
    model: ChatModel,
    options: RunOptions,
    embed: Embed | None = None,
    *,
    carry: bool = True,
) -> str | None:
    """Read `sq`'s answer from its evidence, given the earlier sub-answers unless `carry` is off (a
    question with the names already filled in: `agent.bridge`); sets `sq.answer`."""
    passages = sub_question_passages(run, sq, options.reader_k)
    if not passages:
        return None
    facts = run.plan.facts(before=sq.id) if carry else []
    finding = run.plan.outline  # a report's requirement: a sentence or two, not a few words
    # a list entry is read without its item's title ("The recall — Supplier: Which company made …" was
    # answered "The recall was made by HTI"); the title stays in its search and its heading
    question = sq.text.split(" — ", 1)[-1] if finding else sq.text
    messages = reader_messages(question, passages, embed, facts=facts, finding=finding)
    tokens = max(options.answer_max_tokens, FINDING_TOKENS) if finding else options.answer_max_tokens
    try:
        resp = counted_chat(run, model, messages, temperature=0.0, max_tokens=tokens)
    except LLMError:  # no sub-answer: the final reader still reads the evidence
        return None
    run.counters.chain_reads += 1
    answer = first_paragraph(resp.text) if finding else first_line(resp.text)
    none = is_insufficient(answer) or (finding and answer.lower().startswith(INSUFFICIENT))
    none = none or (finding and not adds_to(answer, question, passages))
    sq.answer = None if none else answer[: FINDING_CHARS if finding else 200]
    return sq.answer


def first_paragraph(text: str) -> str:
    """A finding's text: its first paragraph on one line, an unfinished last sentence dropped."""
    para = " ".join(text.strip().split("\n\n")[0].split())
    if para.endswith((".", "!", "?")):
        return para
    cut = para.rfind(". ")
    return para[: cut + 1] if cut > 20 else para
