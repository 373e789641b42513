"""bench/longhorizon.py end to end on a scripted model (unit test only; the real-model run is the
benchmark itself): both systems run each task through agent.runner, rows are scored, saved and
resumed, and the table pairs them."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from eval_scripted import ScriptedChat

from agent.graph import AgentDeps
from eval.longhorizon.tasks import CompositeTask, SubQuestion, render_request
from eventfold.llm.types import Message
from eventfold.settings import Settings
from eventrag.schema import Chunk, RetrievalResult, RetrievedChunk

ROOT = Path(__file__).resolve().parents[2]
DOCS = {
    "d1": ("Quillon Press", "Quillon Press was founded by Harriet Vance in 1902."),
    "d2": ("Velora Bridge", "The Velora Bridge crosses the river in Marnis."),
    "d3": ("Marnis", "Marnis is a port town."),
}


class Backend:
    """Word-overlap retrieval over DOCS, one chunk per document (chunk id = doc id + '#0')."""

    def __init__(self) -> None:
        self.chunks = [Chunk(chunk_id=f"{d}#0", doc_id=d, title=t, text=x) for d, (t, x) in DOCS.items()]

    def retrieve(self, query: str, *, mode=None, top_k: int = 5) -> RetrievalResult:
        words = set(re.findall(r"\w+", query.lower()))
        scored = sorted(self.chunks, key=lambda c: -len(words & set(re.findall(r"\w+", c.text.lower()))))
        hits = [
            RetrievedChunk(chunk_id=c.chunk_id, doc_id=c.doc_id, title=c.title, text=c.text, score=1.0)
            for c in scored[:top_k]
        ]
        return RetrievalResult(query=query, mode="naive", chunks=hits)

    def get_chunk(self, chunk_id: str) -> Chunk | None:
        return next((c for c in self.chunks if c.chunk_id == chunk_id), None)

    def get_document_chunks(self, doc_id: str) -> list[Chunk]:
        return [c for c in self.chunks if c.doc_id == doc_id]


BRIEFING = """## 1. Who founded Quillon Press?
Answer: Harriet Vance [c:d1#0]

## 2. In which town is the Velora Bridge?
Answer: Marnis [c:d2#0] [c:d3#0]
"""


def script(messages: list[Message], json_schema: dict | None):
    if json_schema is not None:  # the plan, or a fold summary: the scaffold copes with either failing
        return {"sub_questions": ["Who founded Quillon Press?", "Where is the Velora Bridge?"]}
    if messages[0].content.startswith("You write"):  # the long report writer (not run for a briefing)
        return BRIEFING
    return (
        "Marnis" if "Velora" in messages[-1].content.split("Question:")[-1] else "Harriet Vance"
    )  # the reader


def turns(messages: list[Message]) -> tuple[str, dict]:
    """Search once, then answer item 1 and item 2 from what the search showed."""
    results = [m.content for m in messages if m.role == "tool"]
    if not results:
        return "search", {"query": "Quillon Press founded Velora Bridge"}
    if not any("Answer to item 1" in r for r in results):
        return "answer", {"answer": "Harriet Vance", "citations": ["d1#0"], "item": 1}
    return "answer", {"answer": "Marnis", "citations": ["d2#0", "d3#0"], "item": 2}


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_longhorizon", ROOT / "bench" / "longhorizon.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_runs_every_system_scores_saves_and_resumes(tmp_path):
    bench = load_bench()
    subs = [
        SubQuestion(n=1, qid="a", question="Who founded Quillon Press?", answers=["Harriet Vance"], gold_passage_ids=["d1"]),
        SubQuestion(n=2, qid="b", question="In which town is the Velora Bridge?", answers=["Marnis"], gold_passage_ids=["d2"]),
    ]  # fmt: skip
    task = CompositeTask(
        task_id="toy-k2-s0-01", dataset="toy", k=2, seed=0, request=render_request([s.question for s in subs]),
        sub_questions=subs,
    )  # fmt: skip
    chat = ScriptedChat(script, parse=True, name="scripted", tool_script=turns)
    deps = AgentDeps(model=chat, backend=Backend())
    args = bench.parse_args(["--window", "4096", "--budget", "2048", "--fold-summary", "deterministic"])
    assert args.systems == ["fold", "fold-nounfold", "react"] and args.k == [8, 16] and args.cross_refs == 1
    options = bench.system_options(args, Settings(home=tmp_path), bench.max_steps(args, task))
    assert options["fold-nounfold"].fold and not options["fold-nounfold"].unfold and not options["react"].fold
    assert options["fold"].max_steps == 4 * 2 + 4 and options["fold"].policy == "model"
    assert options["fold"].trace_workflow and options["react"].trace_workflow  # the model policy's reference
    assert not bench.system_options(bench.parse_args(["--no-trace"]), Settings(home=tmp_path), 4)["fold"].trace_workflow

    rows = bench.run_all(args, [task], deps, lambda t: options, tmp_path)
    assert [r["system"] for r in rows] == ["fold", "fold-nounfold", "react"]
    for row in rows:
        assert row["em"] == 1.0 and row["found"] == 1.0 and not row["overflowed"], row
        assert row["f1_plain"] == 1.0 and row["f1_xref"] is None and row["xref_items"] == 0
        assert row["citation_precision"] == 0.75  # 1/1 for the first section, 1/2 for the second
        assert row["peak_ctx"] > 0 and row["wall_s"] > 0
        run_dir = tmp_path / "runs" / row["system"] / task.task_id
        assert "Answer: Marnis" in (run_dir / "report.md").read_text()
        assert json.loads((run_dir / "trajectory.json").read_text())["meta"]["task"] == task.task_id
        trace = row["stats"]["trace"]  # search, answer 1, answer 2; every turn with the workflow's call
        assert [(t["tool"], t["item"], t["crossref"]) for t in trace] == [
            ("search", 1, False), ("answer", 1, False), ("answer", 2, False)]  # fmt: skip
        assert all(t["workflow_call"] for t in trace)
    offered = [{t.name for t in c["tools"]} for c in chat.calls if c["tools"]]
    assert [("fold" in o, "unfold" in o) for o in offered[::3]] == [
        (True, True),
        (True, False),
        (False, False),
    ]
    calls = len(chat.calls)
    again = bench.run_all(args, [task], deps, lambda t: options, tmp_path)  # a rerun skips what is done
    assert len(chat.calls) == calls and len(again) == 3
    assert len((tmp_path / "longhorizon.jsonl").read_text().splitlines()) == 3
    table = bench.render_table(again, "t")
    assert "| 2 | fold/unfold | 1 | 1.000 | 1.000 | 1.000 | – |" in table
    assert "| 2 | fold, no unfold | 1 | 1.000 |" in table and "| 2 | ReAct (--no-fold) | 1 | 1.000 |" in table
    decisions = bench.decision_section(again)
    assert "## Decisions against the workflow policy" in decisions and "| fold | 1 | 3 |" in decisions


def test_tasks_longer_than_the_agents_briefing_are_refused(tmp_path):
    from agent.briefing import MAX_QUESTIONS
    from eval.multihop.schema import Passage, QADataset, QAExample

    bench = load_bench()
    n = MAX_QUESTIONS + 1
    ds = QADataset(
        name="toy",
        examples=[QAExample(qid=f"q{i}", question=f"Who built tower {i}?", answers=[f"B{i}"], gold_passage_ids=[f"p{i}"]) for i in range(n)],
        passages=[Passage(passage_id=f"p{i}", title=f"Tower {i}", text=f"B{i} built tower {i}.") for i in range(n)],
    )  # fmt: skip
    fits = bench.parse_args(["--k", str(MAX_QUESTIONS), "--tasks-per-k", "1", "--cross-refs", "0"])
    assert len(bench.select_tasks(fits, ds, tmp_path)[0].sub_questions) == MAX_QUESTIONS
    too_long = bench.parse_args(["--k", str(n), "--tasks-per-k", "1", "--cross-refs", "0"])
    with pytest.raises(SystemExit, match=f"a task holds {n} items"):
        bench.select_tasks(too_long, ds, tmp_path)
