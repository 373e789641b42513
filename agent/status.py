"""The status line: everything about the run that changes from turn to turn, in one user message at
the end of the prompt (the fixed prefix before it stays cached). It shows the step and context
budget, the plan with the evidence each sub-question has, what can be folded and unfolded (by the
names the tools accept) and the queries already run."""

from __future__ import annotations

from agent import prompts
from agent.leads import leads
from agent.state import RunState
from agent.tools.context import neutralize
from agent.tools.fold import describe_targets
from eventfold.run_options import RunOptions


def plan_lines(run: RunState) -> list[str]:
    lines = []
    for sq in run.plan.sub_questions:
        if sq.done:
            ids = ", ".join(f"c:{c}" for c in sq.evidence[:3])
            found = f" -> {neutralize(sq.answer)}" if sq.answer else ""
            lines.append(f"  {sq.id}. [done: {ids}] {sq.text}{found}")
        else:
            lines.append(f"  {sq.id}. [open] {sq.text}")
    return lines


def status_line(run: RunState, options: RunOptions, tokens: int) -> str:
    head = prompts.STATUS.format(
        step=run.next_step, max_steps=options.max_steps, tokens=tokens, budget=options.context_budget
    )
    lines = [head]
    if run.plan.sub_questions:
        lines += ["plan:", *plan_lines(run)]
    if options.fold:
        folded = [f.fold_id for f in run.memory.active()]
        lines.append(f"fold targets: {describe_targets(run)} · unfold: {', '.join(folded) or 'nothing folded'}")
    searched = [q for q in run.queries][-4:]
    if searched:
        lines.append("searched: " + "; ".join(searched))
    found = leads(run)
    if found:
        lines.append("leads (names in the results, not searched yet): " + "; ".join(found))
    if run.plan.open():
        nxt = run.plan.open()[0]
        lines.append(f"next: search sub-question {nxt.id}, or answer if the evidence suffices")
    elif run.plan.sub_questions:
        lead = f" such as {found[0]!r}" if found else ""
        lines.append(f"next: every sub-question has evidence: answer citing chunk ids, or search a lead{lead}")
    return "\n".join(lines)
