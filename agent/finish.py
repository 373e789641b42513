"""How a run ends with an answer drawn from evidence.

- The model's `answer` call stands when it rests on evidence (a valid citation, or a seen chunk that
  contains the answer, or yes/no).
- A temporal question ("which came first", "how many years after") is answered from its sides' dated
  sentences when both are found (`agent.temporal`): exact arithmetic a small model gets wrong.
- Otherwise (step cap, failing calls, every sub-question has evidence, an unsupported answer) the
  reader (`agent.reader`, the same reader as `eval --mode naive`) answers from the best collected
  evidence, given the sub-questions' answers found by chained reading (`agent.chain`); only when it
  finds nothing does an unsupported model answer stay, marked as such.
"""

from __future__ import annotations

from agent.focus import Embed
from agent.llm import ChatModel, LLMError, Message
from agent.reader import best_evidence, first_line, is_insufficient, reader_messages
from agent.state import RunState, Step
from agent.temporal import date_answer
from agent.tools.answer import supporting
from agent.tools.context import counted_chat
from eventfold.run_options import RunOptions


def reader_answer(run: RunState, model: ChatModel, options: RunOptions, embed: Embed | None = None) -> None:
    """Write run.answer with the reader over the best evidence (mutates `run`); `embed` ranks the
    evidence's sentences with the retriever's embedder (word overlap alone without it)."""
    passages = best_evidence(run, options.reader_k)
    proposed = run.answer
    answer = ""
    if passages:
        try:
            resp = counted_chat(
                run,
                model,
                reader_messages(run.plan.resolved or run.question, passages, embed, facts=_facts(run)),
                temperature=0.0,
                max_tokens=options.answer_max_tokens,
            )
            answer = first_line(resp.text)
            run.counters.reader_calls += 1
        except LLMError as exc:
            run.stop_reason = f"{run.stop_reason}; reader failed: {exc}"
    if not is_insufficient(answer):
        run.answer, run.answer_source = answer, "reader"
        run.answer_citations = supporting(run, answer) or [ev.chunk_id for ev in passages[:2]]
    elif proposed:
        run.answer, run.answer_source = proposed, "model"
        run.stop_reason = f"{run.stop_reason}; the reader found no answer, the model's unsupported answer stands"
    else:
        run.answer, run.answer_source = answer or "Insufficient information", "reader"
        run.answer_citations = []
    _final_step(run, [ev.chunk_id for ev in passages])


def _facts(run: RunState) -> list[tuple[str, str]]:
    """The sub-answers the final reader is given: none when the question's descriptions were resolved
    (the filled question names what they found; the hops' lines only drew the reader to their passages)."""
    return [] if run.plan.resolved is not None else run.plan.facts()


def answer_from_timeline(run: RunState) -> bool:
    """Answer an origin question with the event read from the timeline at the plan (`agent.causal`);
    False when there is none (mutates `run`)."""
    origin = run.plan.origin
    if origin is None:
        return False
    run.answer, run.answer_source, run.answer_supported = origin.answer, "timeline", True
    run.answer_citations = list(dict.fromkeys(c for c in (origin.origin.chunk_id, origin.target.chunk_id) if c))
    run.status, run.stop_reason = "answered", origin.explanation
    _final_step(run, list(run.answer_citations))
    return True


def answer_from_dates(run: RunState, embed: Embed | None = None) -> bool:
    """Answer a temporal question from its sides' dates (computed at the plan, else now over all the
    evidence seen); False when it is not one or a side has no dated sentence (mutates `run`)."""
    if run.plan.temporal is None:
        return False
    if run.plan.dated is None:
        run.plan.dated = date_answer(run, embed)
    dated = run.plan.dated
    if dated is None:
        return False
    run.answer, run.answer_source, run.answer_supported = dated.answer, "dates", True
    run.answer_citations = list(dict.fromkeys(d.chunk_id for d in dated.sides if d.chunk_id))
    run.status, run.stop_reason = "answered", dated.explanation
    _final_step(run, list(run.answer_citations))
    return True


def _final_step(run: RunState, chunk_ids: list[str]) -> None:
    """The final answer as the trajectory's last step (kind "forced"), with the chunks it rests on."""
    run.steps.append(
        Step(
            n=run.next_step,
            kind="forced",
            assistant=Message(role="assistant", content=run.answer or ""),
            chunk_ids=chunk_ids,
        )
    )
