"""The status line: everything about the run that changes from turn to turn, in one user message at
the end of the prompt (the fixed prefix before it stays cached).

Facts only: the step of the cap, context tokens of the budget, the question (a long task: its items
and which are answered), what can be folded and unfolded (by the names the tools accept), the queries run, the chunk
ids seen, and — when the model policy is shown one — the workflow policy's suggested next call. It
never tells the policy to fold: when to fold and unfold is the policy's decision (the budget guard
folds only on overflow)."""

from __future__ import annotations

from agent import prompts
from agent.state import RunState
from agent.tools.context import neutralize
from agent.tools.fold import describe_targets
from agent.tools.resolve import resolved
from agent.tools.search import snippet
from eventfold.run_options import RunOptions

SHOWN_QUERIES = 4
SHOWN_CHUNKS = 10
ITEM_CHARS = 60  # an item other than the first open one is shown by its opening words
QUESTION_CHARS = 300
SUGGESTED = "suggested: "  # the line that shows the model policy the workflow's next call


def item_lines(run: RunState) -> list[str]:
    """One line per item of a long task: answered or open; the first open one in full. An answered item's
    answer is not repeated here: a small model copied the answers listed right above the open item."""
    nxt = next(iter(run.plan.open()), None)
    lines = []
    for sq in run.plan.sub_questions:
        if sq.done:
            lines.append(f"  {sq.id}. [answered] {snippet(sq.text, ITEM_CHARS)}")
        else:
            lines.append(f"  {sq.id}. [open] {sq.text if sq is nxt else snippet(sq.text, ITEM_CHARS)}")
    return lines


def status_line(
    run: RunState, options: RunOptions, tokens: int, suggestion: str | None = None, max_steps: int | None = None
) -> str:
    """The status line before the policy's next turn (`tokens`: the rendered context without it;
    `max_steps`: the run's step cap, default the options')."""
    cap = max_steps or options.max_steps
    lines = [prompts.STATUS.format(step=run.next_step, max_steps=cap, tokens=tokens, budget=options.context_budget)]
    items = run.plan.sub_questions
    if not items:  # a small model reading its results loses the question: it is restated last, with the facts
        lines.append(f"question: {neutralize(snippet(run.question, QUESTION_CHARS))}")
        hops = resolved(run)
        if hops:  # the question with the latest described thing named: what the answer must now say
            hop = hops[-1]["question_with_name"]
            lines.append(f"with the name found: {neutralize(snippet(hop, QUESTION_CHARS))}")
    if items:
        done = sum(sq.done for sq in items)
        lines += [f"items: {done} of {len(items)} answered", *item_lines(run)]
    if options.fold:
        folded = [f.fold_id for f in run.memory.active()]
        lines.append(f"fold targets: {describe_targets(run)} · open folds: {', '.join(folded) or 'none'}")
    queries = list(run.queries)
    if queries:
        lines.append(f"queries run ({len(queries)}): " + "; ".join(queries[-SHOWN_QUERIES:]))
    seen = list(run.evidence)
    if seen:
        more = f" (+{len(seen) - SHOWN_CHUNKS} earlier)" if len(seen) > SHOWN_CHUNKS else ""
        lines.append(f"chunks seen ({len(seen)}): " + ", ".join(seen[-SHOWN_CHUNKS:]) + more)
    if run.next_step >= cap:
        lines.append("last step: only answer is offered")
    elif suggestion:
        lines.append(f"{SUGGESTED}{suggestion}")
    return "\n".join(lines)
