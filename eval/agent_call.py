"""One way for every eval to call the research agent and read what it returns.

`run_eventfold_agent(question, settings, backend, chat_model, fold=..., policy=...)` drives
`agent.runner.run_agent` and flattens its result into {answer, report, citations, retrieved, stats}
(`stats["trace"]`: the run's decision trace, `eval.decisions.trace`);
`AgentCaller` accepts any function of that shape (a test double, another agent) and reads its result
defensively (attributes or dict keys).

A caller's name is its run's name in tables: the policy ("model", "workflow"), with "-nofold" for plain
ReAct (no fold/unfold tools) and "-nounfold" for folding without the unfold tool.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from eval.decisions.trace import trace_of
from eventfold.llm.types import ChatModel
from eventrag.schema import RetrievedChunk, SearchBackend

PolicyName = Literal["model", "workflow"]


def field(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def system_name(policy: str, *, fold: bool = True, unfold: bool = True) -> str:
    """The run name of a policy with its memory tools: "model", "model-nofold", "model-nounfold"."""
    if not fold:
        return f"{policy}-nofold"
    return policy if unfold else f"{policy}-nounfold"


class AgentOutput(BaseModel):
    answer: str = ""
    report: str = ""
    stats: dict[str, Any] = Field(default_factory=dict)
    raw: Any = None  # the agent's own result object (citations, trajectory…)


class AgentCaller:
    def __init__(
        self,
        run_fn: Callable[..., Any],
        settings: Any,
        backend: SearchBackend,
        chat_model: ChatModel,
        *,
        fold: bool = True,
        policy: PolicyName = "model",
        **run_kwargs: Any,
    ) -> None:
        self.run_fn = run_fn
        self.settings = settings
        self.backend = backend
        self.chat_model = chat_model
        self.fold = fold
        self.policy = policy
        self.run_kwargs = run_kwargs
        self.name = system_name(policy, fold=fold, unfold=run_kwargs.get("unfold", True))

    def __call__(self, prompt: str) -> AgentOutput:
        result = self.run_fn(
            prompt, self.settings, self.backend, self.chat_model, fold=self.fold, policy=self.policy,
            **self.run_kwargs,
        )  # fmt: skip
        stats = field(result, "stats") or {}
        if isinstance(stats, BaseModel):
            stats = stats.model_dump(mode="json")
        return AgentOutput(
            answer=str(field(result, "answer") or ""),
            report=str(field(result, "report") or ""),
            stats=dict(stats) if isinstance(stats, dict) else {},
            raw=result,
        )


def run_stats(run: Any, wall_s: float, budget: int | None = None) -> dict[str, Any]:
    """The run's counters flat, plus who answered: `model_answer` is 1 when the model policy's own
    `answer` action gave the final answer (its mean over questions is the share of such answers), and
    the decision trace (`eval.decisions.trace.trace_of`; `budget`: the run's context budget)."""
    return {
        **run.counters.model_dump(exclude={"context_samples"}),
        "status": run.status,
        "stop_reason": run.stop_reason,
        "policy": run.policy,
        "answer_source": run.answer_source,
        "model_answer": int(run.answer_source == "model"),
        "items": len(run.plan.sub_questions),
        "steps": len(run.steps),
        "wall_s": round(wall_s, 3),
        "trace": trace_of(run, budget),
    }


def run_eventfold_agent(
    question: str,
    settings: Any,
    backend: SearchBackend,
    chat_model: ChatModel,
    *,
    fold: bool = True,
    policy: PolicyName = "model",
    report_mode: str = "short",
    runs_dir: Path | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Run the eventfold agent once: answer, report, cited chunk ids, the evidence it gathered (cited
    first, as `RetrievedChunk`s in the order found) and its counters (calls, folds, peak context,
    tokens…). `options` are further `RunOptions` fields (e.g. `unfold=False`, `max_steps`)."""
    from agent.graph import AgentDeps
    from agent.runner import run_agent
    from eventfold.run_options import RunOptions

    run_options = RunOptions.for_research(
        settings, fold=fold, policy=policy, report_mode=report_mode, **options
    )
    result = run_agent(question, AgentDeps(model=chat_model, backend=backend), run_options, runs_dir=runs_dir)
    run = result.run
    evidence = list(run.evidence.values())
    cited = [e for cid in run.answer_citations for e in evidence if e.chunk_id == cid]
    ordered = cited + [e for e in evidence if e.chunk_id not in set(run.answer_citations)]
    retrieved = [
        RetrievedChunk(chunk_id=e.chunk_id, doc_id=e.doc_id, title=e.title, text=e.text, score=e.score or 0.0)
        for e in ordered
    ]
    return {
        "answer": run.answer or "",
        "report": result.report,
        "citations": list(run.answer_citations),
        "retrieved": retrieved,
        "stats": run_stats(run, result.wall_s, run_options.context_budget),
    }
