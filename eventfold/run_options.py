"""The run config: every knob of one agent run (step cap, context budget, top-k, token caps, folding).

`RunOptions` is the agent's only model of these. It is nested in `Settings.run` (env
``EVENTFOLD_RUN__MAX_STEPS``, TOML ``[run]``), in the RL environment config and in the SFT teacher
config; a run's options come from ``Settings.run_options(**per_run_choices)`` (or
``RunOptions.for_research(settings, ...)``: the same with the research scaffold on).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

ReportMode = Literal["short", "full", "long"]
PlanMode = Literal["llm", "rules", "off"]  # sub-questions by one LLM call, by rules, or no plan
RESEARCH_SCAFFOLD: dict[str, Any] = {
    "plan": "llm", "verify_answer": True, "auto_search": True, "bridge": True, "causal": True,
}


class RunOptionsSource(Protocol):
    """What ``for_research`` needs of the settings (``eventfold.settings.Settings``, which nests
    ``RunOptions`` and so imports this module, not the other way round)."""

    def run_options(self, **overrides: Any) -> RunOptions: ...


class AgentInputError(ValueError):
    """The run cannot start: empty question, impossible budget, bad options."""


LONG_MAX_STEPS = 30  # long mode's step cap unless one is set: a report's requirements are searched one by one


class RunOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    max_steps: int = Field(12, ge=1, le=500)
    context_budget: int = Field(6000, ge=256, le=1_000_000)
    fold: bool = True  # False = plain ReAct: no fold/unfold tools, no budget guard
    fold_summary: Literal["llm", "deterministic"] = "llm"  # fold without a model-written summary
    # The research scaffold for small models (on in `ask`, `eval` and the benchmarks: `for_research`):
    # sub-questions by one LLM call or by rules, an opening search, the loop ending once every
    # sub-question has evidence; an answer without evidence handed to the reader (`verify_answer`).
    plan: PlanMode = "off"
    verify_answer: bool = False
    # the opening searches also run each sub-question as written (a small model only copies them as
    # queries, at one model call each); the model then acts on what they found
    auto_search: bool = False
    # with auto_search: the reader answers each sub-question in turn, its answer joining the next
    # sub-question's search and the final reader's prompt (`agent.chain`: one reader call per hop, a
    # one-fact-per-hop plan). Off by default: on 24 questions it won one on MuSiQue, lost three on
    # HotpotQA and doubled the time (bench/results/agent_chain/); turn on with EVENTFOLD_RUN__CHAIN=true
    chain: bool = False
    # with auto_search and the LLM plan: a question that describes something instead of naming it ("the
    # inspector who signed the recall order") is answered one concrete hop at a time, the final reader
    # given the question with the names found (`agent.bridge`); other questions take the plan as before.
    # On in the research scaffold; chained reading replaces it
    bridge: bool = False
    # with auto_search: "what (supplier) event led to / set off X" is answered from the dated evidence
    # before X in time order, read by the reader (`agent.causal`); on in the scaffold
    causal: bool = False
    keep_recent_steps: int = Field(1, ge=0, le=50)  # the budget guard never folds the newest steps
    search_top_k: int = Field(5, ge=1, le=100)
    # the search for a question whose descriptions the bridge resolved ("Which company made LS-7?"):
    # its hits lead the final reader's passages, so it looks deeper (the event ranking put the passage
    # naming the LS-7's maker 6th, behind its own document's first chunk)
    resolved_top_k: int = Field(8, ge=1, le=100)
    show_k: int = Field(3, ge=1, le=100)  # results shown to the model per search (all search_top_k are evidence)
    result_chars: int = Field(220, ge=50, le=20000)  # per evidence snippet in a search result
    read_chars: int = Field(1200, ge=100, le=100000)  # per read result (one chunk)
    max_repeat_queries: int = Field(1, ge=0, le=10)  # identical searches allowed before refusing
    max_refusals: int = Field(3, ge=1, le=50)  # refused repeats/invalid turns in a row -> forced answer
    answer_max_tokens: int = Field(64, ge=1, le=8192)
    reader_k: int = Field(10, ge=1, le=50)  # passages the reader focuses on when the loop stops
    step_max_tokens: int = Field(256, ge=16, le=8192)  # one agent turn (tool call)
    fold_max_tokens: int = Field(384, ge=32, le=8192)
    report_mode: ReportMode = "full"  # short: answer + sources; full: sections; long: + written summary
    report_max_tokens: int = Field(512, ge=16, le=32768)
    context_window: int | None = Field(None, ge=256)  # the model's window, when known (local backend)

    @classmethod
    def for_research(cls, settings: RunOptionsSource, **overrides: Any) -> RunOptions:
        """``settings.run_options`` with the research scaffold on (plan by the model, verified answers)."""
        return settings.run_options(**{**RESEARCH_SCAFFOLD, **overrides})

    def check_budget(self, floor_tokens: int) -> None:
        """Refuse budgets that cannot hold the fixed prompt, or exceed the model's window."""
        if self.context_budget < floor_tokens:
            raise AgentInputError(
                f"context budget {self.context_budget} tokens is below what the system prompt, tools and "
                f"question alone take ({floor_tokens} tokens); use at least {floor_tokens + 512}"
            )
        if self.context_window is not None and self.context_budget > self.context_window:
            raise AgentInputError(
                f"context budget {self.context_budget} tokens exceeds the model's context window "
                f"({self.context_window}); lower --budget or raise llm.n_ctx"
            )


def run_options_with(**defaults: Any) -> Any:
    """A field type for a config section with its own run defaults (RL, SFT teacher): keys the section
    leaves out take ``defaults``, not RunOptions' (``[env.run] max_steps = 4`` keeps the section's budget).
    Declare the field with ``Field(default_factory=dict, validate_default=True)``."""

    def merge(value: Any) -> Any:
        return {**defaults, **value} if isinstance(value, dict) else value

    return Annotated[RunOptions, BeforeValidator(merge)]
