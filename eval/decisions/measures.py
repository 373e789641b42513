"""Decision measures over traces (`eval.decisions.trace.Trace`): pure functions, each defined exactly in
its docstring. A measure is None when no run or turn of the traces is in its denominator.

Turns are counted in trace order; "the answer turn" of a single question is its first turn whose
`answer` was recorded (a run stopped at the step cap has none and is left out of the timing measures).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from eval.decisions.trace import Trace, Turn

PRESSURE = 0.6  # the share of the budget above which the context is under pressure
FOLD_WITHIN = 2  # turns after a pressured turn within which a fold counts as its answer


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None


def _compared(traces: Sequence[Trace]) -> list[Turn]:
    return [t for tr in traces for t in tr.turns if t.workflow_call is not None]


def tool_agreement(traces: Sequence[Trace]) -> float | None:
    """Among the turns with the workflow policy's call computed (`workflow_call` set): the share whose
    tool is that call's tool (an invalid turn never agrees)."""
    turns = _compared(traces)
    return _share(sum(t.tool == t.workflow_tool for t in turns), len(turns))


def call_agreement(traces: Sequence[Trace]) -> float | None:
    """Among the turns with the workflow policy's call computed: the share whose whole call (tool and
    arguments; for `answer` the tool alone) equals it (`followed`)."""
    turns = [t for t in _compared(traces) if t.followed is not None]
    return _share(sum(bool(t.followed) for t in turns), len(turns))


def confusion(traces: Sequence[Trace]) -> Counter[tuple[str, str]]:
    """(tool called, workflow policy's tool) -> number of turns, over the turns with its call computed."""
    return Counter((t.tool, t.workflow_tool or "") for t in _compared(traces))


def invalid_rate(traces: Sequence[Trace]) -> float | None:
    """The share of all turns without a usable call (tool "invalid")."""
    turns = [t for tr in traces for t in tr.turns]
    return _share(sum(t.tool == "invalid" for t in turns), len(turns))


def answer_turn(trace: Trace) -> int | None:
    """The index of a single question's answer turn (the first with its answer recorded); None for a
    long task (its turns have items) or a run without a recorded answer."""
    if any(t.item is not None for t in trace.turns):
        return None
    return next((i for i, t in enumerate(trace.turns) if t.answered), None)


def too_early(traces: Sequence[Trace]) -> float | None:
    """Among the answered single questions whose correctness and answer-turn evidence are known: the
    share answered wrong (`correct` False) while the evidence seen before the answer turn held no gold
    answer (`evidence_has_gold` False at that turn)."""
    hits = total = 0
    for tr in traces:
        i = answer_turn(tr)
        if i is None or tr.correct is None or tr.turns[i].evidence_has_gold is None:
            continue
        total += 1
        hits += (not tr.correct) and tr.turns[i].evidence_has_gold is False
    return _share(hits, total)


def answer_delays(traces: Sequence[Trace]) -> list[int]:
    """Per answered single question whose evidence held a gold answer by its answer turn: the turns
    from the first turn whose prior evidence held it to the answer turn (0: it answered at once)."""
    out = []
    for tr in traces:
        i = answer_turn(tr)
        if i is None:
            continue
        first = next((j for j, t in enumerate(tr.turns[: i + 1]) if t.evidence_has_gold), None)
        if first is not None:
            out.append(i - first)
    return out


def too_late_mean(traces: Sequence[Trace]) -> float | None:
    """The mean of `answer_delays`."""
    delays = answer_delays(traces)
    return sum(delays) / len(delays) if delays else None


def too_late_share(traces: Sequence[Trace]) -> float | None:
    """The share of `answer_delays` above 1 (more than one turn taken after the gold was in hand)."""
    delays = answer_delays(traces)
    return _share(sum(d > 1 for d in delays), len(delays))


def pressured(turn: Turn) -> bool:
    """The status line's tokens at this turn are above `PRESSURE` of the budget."""
    if turn.tokens_used is None or not turn.budget:
        return False
    return turn.tokens_used > PRESSURE * turn.budget


def fold_under_pressure(traces: Sequence[Trace]) -> float | None:
    """Among the runs with a pressured turn: the share with a `fold` call at a pressured turn or within
    the `FOLD_WITHIN` turns after one."""
    hits = total = 0
    for tr in traces:
        starts = [i for i, t in enumerate(tr.turns) if pressured(t)]
        if not starts:
            continue
        total += 1
        hits += any(t.tool == "fold" for i in starts for t in tr.turns[i : i + FOLD_WITHIN + 1])
    return _share(hits, total)


def folds_without_pressure(traces: Sequence[Trace]) -> float | None:
    """Among the `fold` calls at turns with known tokens and budget: the share at a turn not pressured."""
    folds = [t for tr in traces for t in tr.turns if t.tool == "fold" and t.tokens_used is not None and t.budget]
    return _share(sum(not pressured(t) for t in folds), len(folds))


def unfold_on_crossref(traces: Sequence[Trace]) -> float | None:
    """Among the cross-reference items answered (a recorded answer at a turn with `crossref` True): the
    share whose answer turn came after an `unfold` call at a turn of the same item in the same run."""
    hits = total = 0
    for tr in traces:
        for i, t in enumerate(tr.turns):
            if t.answered and t.crossref:
                total += 1
                hits += any(u.tool == "unfold" and u.item == t.item for u in tr.turns[:i])
    return _share(hits, total)
