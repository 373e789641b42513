"""One way for every eval to call the research agent and read what it returns.

The agent's entry point is `run(question, settings, backend, chat_model, fold=...)`; its result is
read defensively (attributes or dict keys) so the harness keeps working while the agent's result type
grows: `answer`, `report`, `citations`, `retrieved`/`evidence`, `stats`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from eventfold.llm.types import ChatModel
from eventrag.schema import SearchBackend


def field(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


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
    ) -> None:
        self.run_fn = run_fn
        self.settings = settings
        self.backend = backend
        self.chat_model = chat_model
        self.fold = fold
        self.name = "agent" if fold else "agent-nofold"

    def __call__(self, prompt: str) -> AgentOutput:
        result = self.run_fn(prompt, self.settings, self.backend, self.chat_model, fold=self.fold)
        stats = field(result, "stats") or {}
        if isinstance(stats, BaseModel):
            stats = stats.model_dump(mode="json")
        return AgentOutput(
            answer=str(field(result, "answer") or ""),
            report=str(field(result, "report") or ""),
            stats=dict(stats) if isinstance(stats, dict) else {},
            raw=result,
        )
