"""`fold`: replace a range of steps by a structured Markdown block; originals go to the memory store.

Without a model-written summary the block is written by an LLM call on a fixed template
(`prompts.FOLD_TEMPLATE`, JSON-schema constrained; citations checked against the folded steps) or,
with `fold_summary="deterministic"` or when that call fails, extracted deterministically from the
steps (the evidence they showed, one finding per source, the queries that found nothing).
Granularity `step` keeps a one-line digest per step in the block; `subtask` keeps only findings.

The model names what to fold by a target the status line lists ("all", "sq2"), never by step
arithmetic; `start_step/end_step` ranges (the RL environment's saved calls) are accepted too.
"""

from __future__ import annotations

import re
from typing import Literal

from agent.llm import LLMError, Message
from agent.memory import CITATION_RE, Fold, FoldError, Step, call_digest, step_text
from agent.memory.blocks import Granularity
from agent.plan import step_items
from agent.prompts import FOLD_SCHEMA, FOLD_SYSTEM, FOLD_TEMPLATE
from agent.state import RunState
from agent.tools.context import ToolContext
from agent.tools.ids import plain_chunk_id
from agent.tools.registry import Tool, ToolError, ToolResult
from agent.tools.search import snippet

MIN_SUMMARY_WORDS = 4  # a shorter "summary" (a small model echoing its target: "all") is not one: the fold writes its own


def _evidence_lines(run: RunState, steps: list[Step], findings: list[str], *, index: bool = False) -> list[str]:
    """One line: the chunks the findings use, then a count of the other
    chunks the steps showed (unfold shows them): a block stays short however many results it hides.
    An index cites one source per line already: its ids are not written twice."""
    shown = list(dict.fromkeys(cid for s in steps for cid in s.chunk_ids))
    if not shown:
        return []
    cited = set(CITATION_RE.findall(" ".join(findings)))
    used = [c for c in shown if c in cited] or shown[:2]
    line = "the sources cited above" if index and cited else ", ".join(f"c:{c}" for c in used)
    rest = len(shown) - len(used)
    return [line + (f" (+{rest} more shown in these steps: unfold to read them)" if rest else "")]


def briefing_content(run: RunState, start: int, end: int) -> tuple[str, list[str], list[str]] | None:
    """A long task's folded items as an index, one line per item the steps served: its number, its answer
    if given, and its best source, cited (the item's evidence stays in the state, so the block only has
    to say what was found where; the request holds the items' words). None outside long tasks or when
    the steps served none."""
    subs = [sq for sq in run.plan.sub_questions if any(start <= n <= end for n in sq.steps)]
    if not subs:
        return None
    findings, open_q = [], []
    for sq in subs:
        top = next((c for c in [*sq.citations, *sq.evidence] if c in run.evidence), None)
        if top is None:
            open_q.append(f"{sq.id}. {snippet(sq.text, 60)}: nothing found yet")
            continue
        ev = run.evidence[top]
        said = f"answered {snippet(sq.answer, 60)!r}" if sq.answer else f"-> {snippet(ev.title or ev.doc_id, 40)}"
        findings.append(f"item {sq.id} {said} [c:{top}]")
    return f"items {', '.join(str(sq.id) for sq in subs)}", findings, open_q


def deterministic_content(run: RunState, steps: list[Step]) -> tuple[str, list[str], list[str]]:
    """Title, findings and open questions extracted from the steps without an LLM."""
    queries, findings, empty = [], [], []
    seen_docs: set[str] = set()
    for s in steps:
        for call in s.assistant.tool_calls:
            q = call.arguments.get("query") or call.arguments.get("id")
            if q:
                queries.append(str(q))
        if any("No results" in r.content for r in s.results):
            empty.extend(str(c.arguments.get("query", "")) for c in s.assistant.tool_calls)
        for cid in s.chunk_ids[:2]:
            ev = run.evidence.get(cid)
            if ev is None or ev.doc_id in seen_docs:
                continue
            seen_docs.add(ev.doc_id)
            title = f"{ev.title}: " if ev.title else ""
            findings.append(f"{title}{snippet(ev.text, 160)} [c:{cid}]")
    title = "; ".join(dict.fromkeys(queries))[:80] or "steps without searches"
    open_q = [f"no results for {q!r}" for q in empty if q]
    return title, findings[:6], open_q[:3]


def llm_content(ctx: ToolContext, steps: list[Step]) -> tuple[str, list[str], list[str]]:
    """Title, findings and open questions written by the LLM on the fixed template."""
    valid = {cid for s in steps for cid in s.chunk_ids}
    prompt = FOLD_TEMPLATE.format(
        question=ctx.run.question,
        start=steps[0].n,
        end=steps[-1].n,
        steps="\n\n".join(step_text(s)[:3000] for s in steps),
    )
    resp = ctx.chat(
        [Message(role="system", content=FOLD_SYSTEM), Message(role="user", content=prompt)],
        json_schema=FOLD_SCHEMA,
        temperature=0.0,
        max_tokens=ctx.options.fold_max_tokens,
    )
    data = resp.parsed
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise LLMError("fold summary was not valid JSON")
    findings = []
    for item in data["findings"]:
        if not isinstance(item, dict) or not str(item.get("fact", "")).strip():
            continue
        ids = [plain_chunk_id(c) for c in item.get("chunk_ids") or []]
        cites = "".join(f" [c:{c}]" for c in dict.fromkeys(ids) if c in valid)
        findings.append(" ".join(str(item["fact"]).split()) + cites)
    open_q = [" ".join(str(q).split()) for q in data.get("open_questions") or [] if str(q).strip()]
    return " ".join(str(data.get("title", "")).split())[:80], findings, open_q[:3]


def apply_fold(
    ctx: ToolContext,
    start: int,
    end: int,
    *,
    summary: str | None = None,
    granularity: Granularity = "step",
    origin: Literal["model", "guard"] = "model",
    use_llm: bool = True,
) -> Fold:
    """Fold steps start..end of ctx.run (validated first; nothing changes on error)."""
    run = ctx.run
    memory = run.memory
    memory.check_range(start, end, len(run.steps))
    again = memory.refoldable(start, end) if summary is None else None
    if again is not None:
        return memory.refold(again, len(run.steps))
    steps = run.steps[start - 1 : end]
    source: Literal["model", "llm", "deterministic"] = "deterministic"
    # a long task's fold is its index, whatever the policy wrote as a summary: each item keeps its
    # evidence and answer in the state, and a summary copied from the status line would hold neither
    index = briefing_content(run, start, end)
    written = summary if index is None and summary and len(summary.split()) >= MIN_SUMMARY_WORDS else None
    if written:
        lines = [ln.strip(" -*\t") for ln in written.strip().splitlines() if ln.strip(" -*\t")]
        title, findings, open_q, source = lines[0][:80], lines, [], "model"
    elif index is not None:  # a long task's items: their index, no digests
        (title, findings, open_q), granularity = index, "subtask"
    elif use_llm and ctx.options.fold_summary == "llm":
        try:
            title, findings, open_q = llm_content(ctx, steps)
            source = "llm"
        except (LLMError, ValueError, KeyError, TypeError):
            run.counters.fold_llm_fallbacks += 1
            title, findings, open_q = deterministic_content(run, steps)
    else:
        title, findings, open_q = deterministic_content(run, steps)
    block = Fold(
        fold_id=memory.new_id(),
        start=start,
        end=end,
        granularity=granularity,
        title=title,
        findings=findings,
        evidence=_evidence_lines(run, steps, findings, index=index is not None and not written),
        open_questions=open_q,
        step_digests=[call_digest(s) for s in steps] if granularity == "step" else [],
        origin=origin,
        summary_source=source,
    )
    return memory.add(block, run.steps)


def fold_targets(run: RunState) -> dict[str, tuple[int, int]]:
    """The fold targets valid now, by name (what the status line shows): "all" (every completed
    step not yet folded; in a long task from step 1, nesting earlier folds) and "itemN" (every step
    taken while item N was the open one, its reads and answer included: ``agent.plan.step_items``)."""
    n = len(run.steps)
    out: dict[str, tuple[int, int]] = {}
    spans = run.memory.uncovered_spans(n)
    if spans:  # a long task nests its earlier folds too: one index block of the items done
        out["all"] = (1 if run.plan.sub_questions else spans[0][0], n)
    for step, item in step_items(run.plan, run.steps).items():
        if item is not None:
            start, end = out.get(f"item{item}", (step, step))
            out[f"item{item}"] = (min(start, step), max(end, step))
    valid = {}
    for name, (start, end) in out.items():
        try:
            run.memory.check_range(start, end, n)
        except FoldError:
            continue
        valid[name] = (start, end)
    return valid


def resolve_target(run: RunState, target: str) -> tuple[int, int]:
    """A target name, or a range "A-B" (step-range callers), as a step range; FoldError names the choices."""
    key = target.strip().lower().replace(" ", "")
    targets = fold_targets(run)
    if key in targets:
        return targets[key]
    m = re.fullmatch(r"(?:steps?)?(\d+)(?:-(\d+))?", key)
    if m:
        return int(m.group(1)), int(m.group(2) or m.group(1))
    raise FoldError(f"unknown fold target {target!r}")


def describe_targets(run: RunState) -> str:
    return ", ".join(f"{k} (steps {a}-{b})" for k, (a, b) in fold_targets(run).items()) or "none right now"


def _step_range(args: dict[str, object]) -> dict[str, object]:
    """fold(start_step, end_step) as step-range callers (RL environment, saved trajectories) send it."""
    if "target" not in args and "start_step" in args:
        start = args.pop("start_step")
        end = args.pop("end_step", start)
        args["target"] = f"{start}-{end}"
    return args


def make_fold(ctx: ToolContext) -> Tool:
    def fold(target: str, summary: str | None = None) -> ToolResult:
        """Shrink finished steps into a memory block (unfold brings them back).

        Args:
            target: what to fold: a target listed in [status], e.g. "all" or "item1"
            summary: optional: what these steps found, citing [c:ID]
        """
        run = ctx.run
        try:
            start, end = resolve_target(run, target)
            block = apply_fold(ctx, start, end, summary=summary, granularity="step")
        except FoldError as exc:
            raise ToolError(f"{exc} (valid targets now: {describe_targets(run)})") from exc
        run.counters.folds += 1
        ctx.emit(
            {
                "type": "fold",
                "fold_id": block.fold_id,
                "start": block.start,
                "end": block.end,
                "origin": "model",
                "summary_source": block.summary_source,
            }
        )
        done = f"Folded steps {block.start}-{block.end} into {block.fold_id}: {block.title}"
        return ToolResult(content=done)

    def choices() -> dict[str, list[object]]:
        return {"target": list(fold_targets(ctx.run))}

    return Tool.from_function(fold, choices=choices, adapt=_step_range, enforce_choices=False)
