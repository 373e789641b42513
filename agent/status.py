"""The status line: everything about the run that changes from turn to turn, in one user message at
the end of the prompt (the fixed prefix before it stays cached). It shows the step and context
budget, the plan with the evidence each sub-question has, what can be folded and unfolded (by the
names the tools accept) and the queries already run."""

from __future__ import annotations

from agent import prompts
from agent.leads import leads
from agent.memory.trajectory import Step
from agent.state import RunState
from agent.tools.context import neutralize
from agent.tools.fold import describe_targets, fold_targets
from agent.tools.search import snippet
from eventfold.run_options import RunOptions

FOLD_HINT = 0.25  # a briefing's finished questions are offered for folding past this share of the budget
# a single question's steps are offered for folding past this share (the oracle teacher folds on this cue
# and the evaluation counts a run past it as under budget pressure)
FOLD_CUE = 0.6
FOLD_CALL = 'call fold with target "all" before any search'  # the words of both hints (the oracle reads them)


def folded_lines(run: RunState) -> tuple[list[str], set[int]]:
    """A briefing's done questions whose steps all lie in one active fold: one line per fold ("1, 2, 3.
    [done: folded in F2]") — the block's index cites each one's source already — and their ids."""
    groups: dict[str, list[int]] = {}
    for sq in run.plan.sub_questions:
        folds = {f.fold_id if (f := run.memory.covering(n)) else None for n in sq.steps}
        if run.plan.briefing and sq.done and len(folds) == 1 and None not in folds:
            groups.setdefault(folds.pop(), []).append(sq.id)
    lines = [f"  {', '.join(map(str, ids))}. [done: folded in {fid}]" for fid, ids in groups.items()]
    return lines, {i for ids in groups.values() for i in ids}


def plan_lines(run: RunState) -> list[str]:
    lines, folded = folded_lines(run)
    nxt = next(iter(run.plan.open()), None)
    for sq in run.plan.sub_questions:
        if sq.id in folded:
            continue
        if sq.done and run.plan.briefing:  # many questions, each read on its own at the end: kept short
            lines.append(f"  {sq.id}. [done: c:{sq.evidence[0]}] {snippet(sq.text, 48)}")
        elif sq.done:
            ids = ", ".join(f"c:{c}" for c in sq.evidence[:3])
            found = f" -> {neutralize(sq.answer)}" if sq.answer else ""
            lines.append(f"  {sq.id}. [done: {ids}] {sq.text}{found}")
        elif run.plan.briefing and sq is not nxt:  # only the next one in full
            lines.append(f"  {sq.id}. [open] {snippet(sq.text, 48)}")
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
    # a briefing's questions are searched in their own words, one after another: the queries done and
    # the names seen are noise there (a small model copies them into the next query)
    searched = [] if run.plan.briefing else list(run.queries)[-4:]
    if searched:
        lines.append("searched: " + "; ".join(searched))
    found = [] if run.plan.briefing else leads(run)
    if found:
        lines.append("leads (names in the results, not searched yet): " + "; ".join(found))
    hint = fold_hint(run, options, tokens)
    if hint:
        lines.append(hint)
    elif run.plan.open():
        nxt = run.plan.open()[0]
        lines.append(f"next: search sub-question {nxt.id}, or answer if the evidence suffices")
    elif run.plan.sub_questions:
        lead = f" such as {found[0]!r}" if found else ""
        lines.append(f"next: every sub-question has evidence: answer citing chunk ids, or search a lead{lead}")
    return "\n".join(lines)


def fold_hint(run: RunState, options: RunOptions, tokens: int) -> str | None:
    """The status line's call to fold, or None when no fold is due (or ``options.fold`` is off).

    A briefing past `FOLD_HINT` of the budget folds its finished questions' steps before the next search:
    its questions are independent and each is answered from the evidence kept in the state, so the
    model loses nothing by folding them (None when the steps to fold also served a question still open).
    A single question past `FOLD_CUE` folds the steps it has not folded yet when they hold a search or a
    read (a span of fold and unfold calls alone is not worth a block). The guard only acts past the whole
    budget, when the model did not fold. None at the last step: nothing would come after the fold."""
    if not options.fold or run.next_step >= options.max_steps:
        return None
    if not run.plan.briefing:
        return _single_question_cue(run, options, tokens)
    if not run.plan.open() or tokens < options.context_budget * FOLD_HINT:
        return None
    span = fold_targets(run).get("all")
    if span is None:
        return None
    shown = {s.n for s in _unfolded_steps(run, span)}
    inside = [sq for sq in run.plan.sub_questions if shown & set(sq.steps)]
    if not inside or any(not sq.done for sq in inside):
        return None
    ids = ", ".join(str(sq.id) for sq in inside)
    many = len(inside) > 1
    # asked to fold "now; then search" with one question done, the 1.5B searched; asked to fold "before
    # any search", it folded (probes on the k = 8 briefings, session 12)
    return (f"next: the context is past {_share(tokens, options)}% of the budget: {FOLD_CALL} "
            f"(question{'s' if many else ''} {ids} {'have' if many else 'has'} evidence, kept for the answers)")


def _single_question_cue(run: RunState, options: RunOptions, tokens: int) -> str | None:
    if tokens <= options.context_budget * FOLD_CUE:
        return None
    span = fold_targets(run).get("all")
    if span is None:
        return None
    calls = [c.name for s in _unfolded_steps(run, span) for c in s.assistant.tool_calls]
    if not {"search", "read"} & set(calls):
        return None
    return f"next: the context is past {_share(tokens, options)}% of the budget: {FOLD_CALL}"


def _unfolded_steps(run: RunState, span: tuple[int, int]) -> list[Step]:
    """The steps of ``span`` (first and last step numbers) that no fold covers yet."""
    start, end = span
    return [s for s in run.steps if start <= s.n <= end and run.memory.covering(s.n) is None]


def _share(tokens: int, options: RunOptions) -> int:
    return int(100 * tokens / options.context_budget)
