"""The decision measures per system as Markdown: one row per system, then the tool choices that differ
from the workflow policy's call most often."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from eval.decisions import measures as m
from eval.decisions.trace import Trace

Measure = Callable[[Sequence[Trace]], float | None]
COLUMNS: tuple[tuple[str, Measure, int], ...] = (  # (header, measure, decimals; -1: a share in %)
    ("tool = workflow %", m.tool_agreement, -1),
    ("call = workflow %", m.call_agreement, -1),
    ("invalid %", m.invalid_rate, -1),
    ("answer too early %", m.too_early, -1),
    ("turns late (mean)", m.too_late_mean, 2),
    ("late > 1 turn %", m.too_late_share, -1),
    ("fold under pressure %", m.fold_under_pressure, -1),
    ("folds without pressure %", m.folds_without_pressure, -1),
    ("x-ref unfold %", m.unfold_on_crossref, -1),
)
CONFUSIONS = 5  # the most frequent disagreements shown per system


def _cell(value: float | None, digits: int) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.0f}" if digits < 0 else f"{value:.{digits}f}"


def by_system(traces: Sequence[Trace], order: Sequence[str] = ()) -> dict[str, list[Trace]]:
    """The traces per system: `order` first, then the others by name."""
    groups: dict[str, list[Trace]] = {}
    for tr in traces:
        groups.setdefault(tr.system, []).append(tr)
    names = [n for n in order if n in groups] + sorted(set(groups) - set(order))
    return {n: groups[n] for n in names}


def disagreements(traces: Sequence[Trace]) -> str:
    """The most frequent (tool called ≠ workflow's tool) pairs, e.g. `read for search 3; answer for read 1`."""
    pairs = [(k, n) for k, n in m.confusion(traces).most_common() if k[0] != k[1]][:CONFUSIONS]
    return "; ".join(f"{took} for {wanted} {n}" for (took, wanted), n in pairs) or "none"


def render_decisions(traces: Sequence[Trace], order: Sequence[str] = ()) -> str:
    """The decision table of the traces (empty string when there are none)."""
    groups = by_system(traces, order)
    if not groups:
        return ""
    header = ["system", "runs", "turns", *(h for h, _, _ in COLUMNS)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for name, group in groups.items():
        turns = sum(len(tr.turns) for tr in group)
        cells = [name, str(len(group)), str(turns), *(_cell(f(group), d) for _, f, d in COLUMNS)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Tool called instead of the workflow policy's (turns):"]
    lines += [f"- {name}: {disagreements(group)}" for name, group in groups.items()]
    return "\n".join(lines) + "\n"
