"""Score a policy the way it will be used: the real agent (``agent.runner.run_agent``) with the model
behind ``training.hf_chat.HFChatModel``, over training/held-out questions, with the RL reward.

Per question: the episode reward (``training.rl.rewards``: correctness - context cost + format),
EM/F1, whether ``answer()`` ended the run, folds/unfolds by the model, safety-net folds of the budget
guard, invalid turns, tool errors, peak rendered context. ``summarize`` averages them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from agent.state import RunState
from eventfold.run_options import RunOptions
from training.rl.rewards import EpisodeOutcome, RewardConfig, episode_reward
from training.sft.data import TrainingQuestion, agent_run_fn


class EpisodeScore(BaseModel):
    qid: str
    reward: float
    em: float
    f1: float
    answered: bool
    folds: int
    unfolds: int
    guard_folds: int
    invalid_turns: int
    tool_errors: int
    steps: int
    peak_context_tokens: int


def score_run(qid: str, run: RunState, golds: list[str], cfg: RewardConfig) -> EpisodeScore:
    c = run.counters
    out = EpisodeOutcome(
        answer=run.answer if run.status == "answered" else None, golds=golds, peak_context_tokens=c.peak_context_tokens,
        tool_calls=c.tool_calls, invalid_calls=c.tool_errors + c.invalid_turns, folds=c.folds, unfolds=c.unfolds,
    )
    r = episode_reward(out, cfg)
    return EpisodeScore(
        qid=qid, reward=r.total, em=r.em, f1=r.f1, answered=out.answer is not None, folds=c.folds, unfolds=c.unfolds,
        guard_folds=c.guard_folds, invalid_turns=c.invalid_turns, tool_errors=c.tool_errors, steps=len(run.steps),
        peak_context_tokens=c.peak_context_tokens,
    )


def evaluate_policy(
    model: Any, questions: Sequence[TrainingQuestion], backend: Any, options: RunOptions, reward: RewardConfig
) -> list[EpisodeScore]:
    """Run the agent with ``model`` (a ChatModel) on each question and score the episodes."""
    run = agent_run_fn(backend, options)
    return [score_run(q.id, run(q.question, model), q.golds, reward) for q in questions]


def summarize(scores: Sequence[EpisodeScore]) -> dict[str, float]:
    if not scores:
        return {}
    n = len(scores)
    keys = ("reward", "em", "f1", "folds", "unfolds", "guard_folds", "invalid_turns", "tool_errors", "steps",
            "peak_context_tokens")
    out = {k: sum(float(getattr(s, k)) for s in scores) / n for k in keys}
    out["answered"] = sum(s.answered for s in scores) / n
    out["n"] = float(n)
    return out
