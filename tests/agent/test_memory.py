"""Fold/unfold memory: byte-exact restore (property), overlap rules, sections, re-fold."""

from __future__ import annotations

import pytest
from agent_doubles import DOCS, MemoryBackend, ScriptedChatModel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.llm import Message, ToolCall
from agent.memory import FoldError, FoldOverlapError, Memory, Step, render_context, rendered_text
from agent.state import Evidence, RunState
from agent.tools.context import ToolContext
from agent.tools.fold import apply_fold
from eventfold.run_options import RunOptions


def make_run(n: int, words: list[str] | None = None) -> RunState:
    run = RunState(run_id="t", question="Where was Marie Curie born?")
    for i in range(1, n + 1):
        q = (words or ["curie"])[i % len(words or ["curie"])] + f" {i}"
        cid = f"d{i % 3 + 1}#{i % 2}"
        run.evidence[cid] = Evidence(
            chunk_id=cid, doc_id=cid.split("#")[0], title="T", text=f"text of {cid}", step=i
        )
        call = ToolCall(id=f"c{i}", name="search", arguments={"query": q})
        run.steps.append(
            Step(
                n=i,
                assistant=Message(
                    role="assistant", content="" if i % 2 else f"thinking {i}", tool_calls=[call]
                ),
                results=[
                    Message(
                        role="tool",
                        content=f"[1] [c:{cid}] result {i} \u00e9\u2013",
                        tool_call_id=f"c{i}",
                        name="search",
                    )
                ],
                chunk_ids=[cid],
            )
        )
    return run


def ctx_for(run: RunState) -> ToolContext:
    opts = RunOptions(fold_summary="deterministic")
    return ToolContext(run=run, backend=MemoryBackend(DOCS), model=ScriptedChatModel([]), options=opts)


def view(run: RunState) -> str:
    return rendered_text(render_context("sys", run.question, run.steps, run.memory))


def unfold_all(memory: Memory) -> None:
    while memory.active():
        memory.unfold(memory.active()[0].fold_id)


op = st.one_of(
    st.tuples(
        st.just("fold"),
        st.integers(0, 13),
        st.integers(0, 13),
        st.sampled_from(["step", "subtask"]),
        st.one_of(st.none(), st.text(min_size=1, max_size=30)),
    ),
    st.tuples(
        st.just("unfold"),
        st.integers(0, 8),
        st.one_of(st.none(), st.sampled_from(["1", "finding 1", "c:d2#1", "x"])),
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 12),
    ops=st.lists(op, max_size=14),
    words=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=4),
)
def test_unfolding_everything_restores_the_rendered_context_byte_for_byte(n, ops, words):
    run = make_run(n, words)
    original = view(run)
    ctx = ctx_for(run)
    for o in ops:
        before_view, before_mem = view(run), run.memory.model_dump_json()
        made = None
        try:
            if o[0] == "fold":
                made = apply_fold(ctx, o[1], o[2], granularity=o[3], summary=o[4])
            else:
                ids = list(run.memory.folds)
                if not ids:
                    continue
                run.memory.unfold(ids[o[1] % len(ids)], o[2], run.steps)
        except FoldError:
            # a refused operation changes nothing
            assert view(run) == before_view and run.memory.model_dump_json() == before_mem
            continue
        active = run.memory.active()
        assert all(a.end < b.start for a, b in zip(active, active[1:], strict=False)), "active folds overlap"
        if made is not None:  # fold then unfold is byte-exact
            probe = run.model_copy(deep=True)
            probe.memory.unfold(made.fold_id)
            assert view(probe) == before_view
    unfold_all(run.memory)
    assert view(run) == original


def test_partial_overlap_is_refused_with_a_clear_error():
    run = make_run(8)
    ctx = ctx_for(run)
    f1 = apply_fold(ctx, 3, 5)
    with pytest.raises(FoldOverlapError, match=r"partially overlap F1 \(steps 3-5\).*e\.g\. 2-5"):
        apply_fold(ctx, 2, 4)
    with pytest.raises(FoldOverlapError, match="already folded inside F1"):
        apply_fold(ctx, 4, 4)
    with pytest.raises(FoldOverlapError, match="already folded as F1"):
        apply_fold(ctx, 3, 5)
    with pytest.raises(FoldError, match="out of range"):
        apply_fold(ctx, 7, 9)
    with pytest.raises(FoldError, match="after end_step"):
        apply_fold(ctx, 5, 4)
    assert [f.fold_id for f in run.memory.active()] == [f1.fold_id]


def test_containing_range_nests_and_unfold_of_parent_restores_child():
    run = make_run(8)
    ctx = ctx_for(run)
    apply_fold(ctx, 3, 5)
    view_with_f1 = view(run)
    outer = apply_fold(ctx, 2, 6)
    assert outer.children == ["F1"] and run.memory.folds["F1"].status == "absorbed"
    with pytest.raises(FoldError, match="nested inside F2; unfold F2 first"):
        run.memory.unfold("F1")
    run.memory.unfold("F2")
    assert view(run) == view_with_f1
    with pytest.raises(FoldError, match="already unfolded"):
        run.memory.unfold("F2")


def test_refold_of_an_unfolded_range_reuses_the_fold_and_sections_reveal_steps():
    run = make_run(6)
    ctx = ctx_for(run)
    f = apply_fold(ctx, 1, 4)
    folded = view(run)
    run.memory.unfold(f.fold_id, "step 2")
    assert "[step 2]" in view(run) and "[step 3]" not in view(run)
    run.memory.unfold(f.fold_id)
    again = apply_fold(ctx, 1, 4)
    assert again.fold_id == f.fold_id and view(run) == folded
    with pytest.raises(FoldError, match="matches nothing"):
        run.memory.unfold(f.fold_id, "c:nope", run.steps)
    with pytest.raises(FoldError, match="unknown fold id"):
        run.memory.unfold("F9")


def test_block_follows_the_design_format_and_originals_are_the_trajectory_steps():
    run = make_run(5)
    fold = apply_fold(ctx_for(run), 2, 4)
    block = [
        m.content for m in render_context("s", "q", run.steps, run.memory) if m.content.startswith("## [F1]")
    ]
    assert block and block[0].startswith("## [F1] steps 2\u20134 \u00b7 ")
    for heading in ("### Findings", "### Evidence", "### Open questions"):
        assert heading in block[0]
    assert "[c:d" in block[0]
    assert run.memory.originals(fold, run.steps) == run.steps[1:4]
    assert all(a is b for a, b in zip(run.memory.originals(fold, run.steps), run.steps[1:4], strict=True))


def test_llm_fold_summary_keeps_only_citations_from_the_folded_steps():
    run = make_run(4)
    ctx = ctx_for(run)
    ctx.options = RunOptions(fold_summary="llm")
    ctx.model = ScriptedChatModel(
        [],
        json_replies=[
            {
                "title": "Curie facts",
                "findings": [
                    {"fact": "Curie was born in Warsaw", "chunk_ids": ["d2#1", "c:invented", "d2#0"]}
                ],
                "open_questions": ["when?"],
            }
        ],
    )
    fold = apply_fold(ctx, 1, 3)
    assert fold.summary_source == "llm" and fold.title == "Curie facts"
    assert fold.findings == ["Curie was born in Warsaw [c:d2#1]"]
    # a failing LLM call falls back to the deterministic block, counted
    apply_fold(ctx, 4, 4)
    assert run.counters.fold_llm_fallbacks == 1
