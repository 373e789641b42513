"""The run config: every knob of one agent run (step cap, context budget, top-k, token caps, folding).

`RunOptions` is the agent's only model of these. It is nested in `Settings.run` (env
``EVENTFOLD_RUN__MAX_STEPS``, TOML ``[run]``), in the RL environment config and in the SFT teacher
config; a run's options come from ``Settings.run_options(**per_run_choices)`` (or
``RunOptions.for_research(settings, ...)``: the same, as `ask`, `eval` and training call it).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

ReportMode = Literal["short", "full", "long"]
# who picks each call of the loop: the LLM ("model") or the scripted question-form policy ("workflow")
PolicyName = Literal["model", "workflow"]


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
    # False with fold on: folding without the unfold tool (folded steps cannot be restored; the
    # long-horizon benchmark's ablation of unfold)
    unfold: bool = True
    fold_summary: Literal["llm", "deterministic"] = "llm"  # fold without a model-written summary
    policy: PolicyName = "model"
    # the model policy sees the workflow policy's next call as a line of its status ("suggested: …");
    # it decides, and each step records whether it followed
    suggest: bool = True
    # each step records the workflow policy's next call as it stood at that turn (`Step.workflow_call`),
    # shown or not (evals compare the policy's decisions with it); off: computed only when shown
    trace_workflow: bool = False
    keep_recent_steps: int = Field(1, ge=0, le=50)  # the budget guard never folds the newest steps
    search_top_k: int = Field(5, ge=1, le=100)
    show_k: int = Field(3, ge=1, le=100)  # results shown to the model per search (all search_top_k are evidence)
    result_chars: int = Field(220, ge=50, le=20000)  # per evidence snippet in a search result
    read_chars: int = Field(1200, ge=100, le=100000)  # per read result (one chunk)
    max_repeat_queries: int = Field(1, ge=0, le=10)  # identical searches allowed before refusing
    answer_max_tokens: int = Field(64, ge=1, le=8192)
    reader_k: int = Field(10, ge=1, le=50)  # passages the workflow policy's reader focuses on
    step_max_tokens: int = Field(256, ge=16, le=8192)  # one agent turn (tool call)
    fold_max_tokens: int = Field(384, ge=32, le=8192)
    report_mode: ReportMode = "short"  # short: one screen; full: + steps, timeline, all evidence; long: + written summary
    report_max_tokens: int = Field(512, ge=16, le=32768)
    context_window: int | None = Field(None, ge=256)  # the model's window, when known (local backend)

    @classmethod
    def for_research(cls, settings: RunOptionsSource, **overrides: Any) -> RunOptions:
        """``settings.run_options(**overrides)``: the options of a research run (`ask`, `eval`, training)."""
        return settings.run_options(**overrides)

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


# A trained student's folder holds the run options its rows were recorded with (SFT writes it): the
# options that shape what the model sees each turn. `Settings` applies them to a run of that student
# where the user set none, so `ask --model DIR` shows it prompts in the form it was trained on.
TRAINED_RUN_FILE = "eventfold_run.json"
TRAINED_RUN_KEYS = ("context_budget", "search_top_k", "show_k", "result_chars", "read_chars", "step_max_tokens",
                    "fold_summary", "keep_recent_steps", "max_repeat_queries", "answer_max_tokens")


def trained_run_options(options: RunOptions) -> dict[str, Any]:
    """What a student trained on runs of ``options`` is served with: their prompt-shaping options, and no
    suggestion line (training rows never show one)."""
    return {**{k: getattr(options, k) for k in TRAINED_RUN_KEYS}, "suggest": False}
