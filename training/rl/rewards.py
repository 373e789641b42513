"""Episode rewards of the research environment (DESIGN §5 "Rewards for the research agent").

    total = w_correct * correctness            (EM, F1 or max of both vs the gold aliases, SQuAD-normalised)
          - context_cost                       (cost_per_1k * tokens of the peak rendered context beyond the
                                                budget, per 1k tokens, capped at cost_cap)
          + format_term                        (+format_bonus when every tool call was valid and the episode
                                                ended with answer(); -invalid_penalty per invalid call, the
                                                negative part capped at format_cap; no_answer_penalty when the
                                                episode ended without an answer)

EM/F1 come from the evaluation metrics (``eval.multihop.metrics``), so training and evaluation score
answers the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from eval.multihop.metrics import exact_match, f1_score

if TYPE_CHECKING:
    from agent.state import RunState


class RewardConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: Literal["em", "f1", "max"] = "f1"
    w_correct: float = Field(1.0, ge=0.0)
    context_budget: int = Field(2048, ge=1, description="rendered-context tokens allowed before the cost starts")
    cost_per_1k: float = Field(0.5, ge=0.0, description="reward lost per 1k tokens beyond the budget")
    cost_cap: float = Field(0.5, ge=0.0)
    format_bonus: float = Field(0.1, ge=0.0)
    invalid_penalty: float = Field(0.1, ge=0.0)
    no_answer_penalty: float = Field(0.1, ge=0.0)
    format_cap: float = Field(0.3, ge=0.0)


class EpisodeOutcome(BaseModel):
    """What the environment knows about a finished (or cut-off) episode."""

    answer: str | None = None
    golds: list[str] = Field(default_factory=list)
    peak_context_tokens: int = Field(0, ge=0)
    tool_calls: int = Field(0, ge=0)
    invalid_calls: int = Field(0, ge=0)
    folds: int = Field(0, ge=0)
    unfolds: int = Field(0, ge=0)


def outcome_of(run: RunState, golds: list[str]) -> EpisodeOutcome:
    """The outcome of an agent run (its answer only when the run ended answered)."""
    c = run.counters
    return EpisodeOutcome(
        answer=run.answer if run.status == "answered" else None, golds=golds,
        peak_context_tokens=c.peak_context_tokens, tool_calls=c.tool_calls,
        invalid_calls=c.tool_errors + c.invalid_turns, folds=c.folds, unfolds=c.unfolds,
    )  # fmt: skip


class RewardBreakdown(BaseModel):
    correctness: float
    em: float
    f1: float
    context_cost: float
    format: float
    total: float


def correctness(answer: str | None, golds: Sequence[str], metric: str = "f1") -> tuple[float, float, float]:
    """(score under ``metric``, EM, F1) of an answer against gold aliases; no answer scores 0."""
    if not answer or not golds:
        return 0.0, 0.0, 0.0
    em = exact_match(answer, list(golds))
    f1 = f1_score(answer, list(golds))
    score = {"em": em, "f1": f1, "max": max(em, f1)}[metric]
    return score, em, f1


def context_cost(peak_tokens: int, cfg: RewardConfig) -> float:
    over = max(0, peak_tokens - cfg.context_budget)
    return min(cfg.cost_cap, cfg.cost_per_1k * over / 1000.0)


def format_term(outcome: EpisodeOutcome, cfg: RewardConfig) -> float:
    answered = outcome.answer is not None
    if outcome.invalid_calls == 0 and answered:
        return cfg.format_bonus
    penalty = cfg.invalid_penalty * outcome.invalid_calls + (0.0 if answered else cfg.no_answer_penalty)
    return -min(cfg.format_cap, penalty)


def episode_reward(outcome: EpisodeOutcome, cfg: RewardConfig) -> RewardBreakdown:
    score, em, f1 = correctness(outcome.answer, outcome.golds, cfg.metric)
    cost = context_cost(outcome.peak_context_tokens, cfg)
    fmt = format_term(outcome, cfg)
    return RewardBreakdown(
        correctness=score, em=em, f1=f1, context_cost=cost, format=fmt, total=cfg.w_correct * score - cost + fmt
    )


def episode_metrics(
    outcomes: Sequence[EpisodeOutcome], rewards: Sequence[RewardBreakdown], turns: Sequence[tuple[int, int]]
) -> dict[str, float]:
    """A batch's episode metrics, as every RL path logs them: means over episodes, the shares of
    episodes that folded / unfolded, and the valid-call rate over all policy turns (``turns``: each
    episode's (policy turns, valid turns))."""
    n = max(1, len(outcomes))
    all_turns = sum(t for t, _ in turns)
    return {
        "episode/em": sum(r.em for r in rewards) / n,
        "episode/f1": sum(r.f1 for r in rewards) / n,
        "episode/answered": sum(o.answer is not None for o in outcomes) / n,
        "episode/folds": sum(o.folds for o in outcomes) / n,
        "episode/unfolds": sum(o.unfolds for o in outcomes) / n,
        "episode/peak_context_tokens": sum(o.peak_context_tokens for o in outcomes) / n,
        "episode/context_cost": sum(r.context_cost for r in rewards) / n,
        "episode/format": sum(r.format for r in rewards) / n,
        "episode/fold_rate": sum(o.folds > 0 for o in outcomes) / n,
        "episode/unfold_rate": sum(o.unfolds > 0 for o in outcomes) / n,
        "episode/valid_call_rate": sum(v for _, v in turns) / all_turns if all_turns else 0.0,
    }
