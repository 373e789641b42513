"""Run the agent graph end to end: validate input, stream events, checkpoint, save report + trajectory.

Each run has an id; its files go to `<runs_dir>/<run_id>/`: `report.md`, `trajectory.json` (the whole
run state: numbered steps, folds with their verbatim originals, evidence, counters) and, with the
SQLite checkpointer, `<runs_dir>/checkpoints.sqlite` keyed by run id so `resume_run` continues an
interrupted run from its last completed node.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.briefing import numbered_questions
from agent.graph import AgentDeps, AgentGraph, build_graph
from agent.outline import requirements
from agent.policy import Policy
from agent.report import build_report
from agent.state import RunState
from eventfold.llm.types import ChatResponse, LLMConnectionError, LLMError, LLMUnavailable
from eventfold.run_options import AgentInputError, RunOptions

EventSink = Callable[[dict[str, Any]], None]


class RunResult(BaseModel):
    run: RunState
    report: str
    report_path: Path | None = None
    trajectory_path: Path | None = None
    wall_s: float
    model: str
    options: RunOptions
    # the model's failure that stopped the run after it had answered earlier calls: the report was
    # written from the evidence gathered before (the run did not finish as asked)
    llm_error: str | None = None


class WatchedModel:
    """The run's chat model, watched: a server that cannot be reached or refuses the caller before any
    call has answered raises `LLMUnavailable` (the agent would otherwise absorb it and write a report
    without a model); other failures pass on as `LLMError` for the agent's fallbacks and are remembered
    (`errors`)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.answered = 0
        self.errors: list[LLMError] = []

    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        try:
            response = self.inner.chat(messages, **kwargs)
        except LLMError as exc:
            if isinstance(exc, LLMConnectionError) and not self.answered:
                raise LLMUnavailable(str(exc)) from exc
            self.errors.append(exc)
            raise
        self.answered += 1
        return response

    def stopped_the_run(self, run: RunState) -> str | None:
        """The failure a failed run names as its reason (the policy's call of the model failed for good)."""
        if run.status != "failed" or not run.stop_reason:
            return None
        return next((str(e) for e in self.errors if str(e) and str(e) in run.stop_reason), None)

    def __getattr__(self, name: str) -> Any:  # name, count_tokens, ...: the model's own
        return getattr(self.inner, name)


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


@contextmanager
def open_checkpointer(runs_dir: Path | None) -> Iterator[Any]:
    """SqliteSaver in runs_dir (resumable across processes), else an in-memory saver."""
    if runs_dir is None:
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    runs_dir.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(runs_dir / "checkpoints.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


def validate_question(question: str, *, long: bool = False) -> str:
    """The question with its whitespace collapsed; a briefing's list keeps one question per line, and
    in long mode (`long`) a structured request keeps its lines (`agent.outline` reads them)."""
    lines = [" ".join(line.split()) for line in (question or "").splitlines()]
    keep = numbered_questions(question or "") or (long and requirements(question or ""))
    q = ("\n" if keep else " ").join(x for x in lines if x)
    if not q:
        raise AgentInputError("the question is empty")
    if len(q) > 4000:
        raise AgentInputError(f"the question is {len(q)} characters long; keep it under 4000")
    return q


def _config(run_id: str, options: RunOptions) -> dict[str, Any]:
    return {"configurable": {"thread_id": run_id}, "recursion_limit": 4 * options.max_steps + 30}


def _drive(graph: Any, inputs: Any, config: dict[str, Any], on_event: EventSink | None) -> dict[str, Any]:
    final: dict[str, Any] = {}
    for mode, chunk in graph.stream(inputs, config, stream_mode=["custom", "values"]):
        if mode == "custom" and on_event is not None:
            on_event(chunk)
        elif mode == "values":
            final = chunk
    return final


def save_run(result_run: RunState, report: str, out_dir: Path, meta: dict[str, Any]) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    report_path = out_dir / "report.md"
    report_path.write_text(report, encoding="utf-8")
    traj = {"meta": meta, "state": result_run.model_dump(mode="json")}
    traj_path = out_dir / "trajectory.json"
    traj_path.write_text(json.dumps(traj, ensure_ascii=False, indent=1), encoding="utf-8")
    return report_path, traj_path


def run_agent(
    question: str,
    deps: AgentDeps,
    options: RunOptions,
    *,
    runs_dir: Path | None = None,
    on_event: EventSink | None = None,
    run_id: str | None = None,
    policy: Policy | None = None,
) -> RunResult:
    """Answer `question`; saves report + trajectory under runs_dir/<run_id>/ when runs_dir is given.
    `policy` picks the calls (default: the one `options.policy` names; a wrapper such as a recording
    teacher passes its own)."""
    q = validate_question(question, long=options.report_mode == "long")
    run = RunState(run_id=run_id or new_run_id(), question=q)
    deps, watch = _watched(deps)
    g = AgentGraph(deps, options, policy)
    options.check_budget(g.count(run))
    start = time.perf_counter()
    with open_checkpointer(runs_dir) as saver:
        graph = build_graph(deps, options, checkpointer=saver, nodes=g)
        final = _drive(graph, run.to_graph(), _config(run.run_id, options), on_event)
    return _finish(final, deps, options, runs_dir, time.perf_counter() - start, watch)


def resume_run(
    run_id: str, deps: AgentDeps, options: RunOptions, runs_dir: Path, on_event: EventSink | None = None
) -> RunResult:
    """Continue an interrupted run from its last checkpoint (same deps and options)."""
    deps, watch = _watched(deps)
    start = time.perf_counter()
    with open_checkpointer(runs_dir) as saver:
        graph = build_graph(deps, options, checkpointer=saver)
        config = _config(run_id, options)
        snapshot = graph.get_state(config)
        if not snapshot.values:
            raise AgentInputError(f"no checkpoint for run {run_id!r} in {runs_dir}")
        final = _drive(graph, None, config, on_event) if snapshot.next else dict(snapshot.values)
    return _finish(final, deps, options, runs_dir, time.perf_counter() - start, watch)


def _watched(deps: AgentDeps) -> tuple[AgentDeps, WatchedModel]:
    watch = WatchedModel(deps.model)
    return replace(deps, model=watch), watch  # type: ignore[arg-type]


def _finish(
    final: dict[str, Any], deps: AgentDeps, options: RunOptions, runs_dir: Path | None, wall_s: float,
    watch: WatchedModel | None = None,
) -> RunResult:
    run = RunState.from_graph(final)
    if run.report is not None:  # the footer states the wall time, known only now
        run.report = build_report(run, deps.model.name, mode=options.report_mode, wall_s=wall_s)
    report = run.report or ""
    result = RunResult(run=run, report=report, wall_s=wall_s, model=deps.model.name, options=options)
    if watch is not None:
        result.llm_error = watch.stopped_the_run(run)
    if runs_dir is not None:
        meta = {
            "model": deps.model.name,
            "options": options.model_dump(mode="json"),
            "wall_s": round(wall_s, 3),
            "saved_at": datetime.now(UTC).isoformat(),
        }
        result.report_path, result.trajectory_path = save_run(run, report, runs_dir / run.run_id, meta)
    return result
