"""Rollouts that are runs of the real agent: the model policy through `ask`'s own loop, sampled.

A rollout is ``agent.runner.run_agent`` with the model policy over the student as the transformers
backend serves it (``HFChatModel``: its chat template with the registry's tool specs, the call parsed
from ``<tool_call>``), generating through llama.cpp over the base GGUF with the trainer's current LoRA
adapter (``training.rl.llama_rollout.LoraRolloutEngine``). ``SampledTurns`` sits between the two: it
samples every call at the rollout temperature (the agent asks for greedy turns) and keeps each call's
exact prompt ids and sampled ids, so a turn trains on the tokens the agent rendered at that turn (folds
replaced by their blocks, the status line, the tools) and the tokens the policy sampled there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.graph import AgentDeps
from agent.runner import run_agent
from eventfold.run_options import RunOptions
from training.rl.rewards import EpisodeOutcome, RewardBreakdown, RewardConfig, episode_reward, outcome_of
from training.sft.data import TrainingQuestion, valid_turns


@dataclass
class SampledTurn:
    """One model call of a rollout: the prompt's ids (a forced call opener included), the sampled ids and
    their log-probs under the rollout engine."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]


class SampledTurns:
    """A token generator for ``HFChatModel``: every call sampled at ``temperature`` through ``engine``
    (its own seed per call), each call's prompt and sample kept in ``turns``."""

    def __init__(self, engine: Any, temperature: float) -> None:
        self.engine = engine
        self.temperature = temperature
        self.turns: list[SampledTurn] = []

    @property
    def reused_tokens(self) -> int:
        generator = getattr(self.engine, "_generator", None)
        return int(getattr(generator, "reused_tokens", 0))

    def generate(
        self, ids: list[int], max_new: int, temperature: float | None, stop: Callable[[list[int]], bool] | None = None
    ) -> list[int]:
        logprobs: list[float] = []
        out = self.engine.generate(ids, max_new, self.temperature, logprobs=logprobs, stop=stop)
        self.turns.append(SampledTurn(list(ids), list(out), logprobs))
        return out


@dataclass
class Rollout:
    """One agent run of a training question: its sampled turns, outcome and reward."""

    question: int  # index of the question in the step (the sibling group)
    turns: list[SampledTurn]
    outcome: EpisodeOutcome
    reward: RewardBreakdown
    policy_turns: int
    valid_turns: int
    seconds: float
    answer: str | None = None
    errors: list[str] = field(default_factory=list)


def rollout_options(run: RunOptions) -> RunOptions:
    """The agent's options in a rollout: the model policy deciding alone (no suggestion line), fold and
    unfold on offer, fold blocks written without an LLM call (a summary call would be a turn the
    reward cannot credit)."""
    return run.model_copy(
        update={"policy": "model", "suggest": False, "fold": True, "fold_summary": "deterministic"}
    )


def run_rollout(
    q: TrainingQuestion, group: int, *, engine: Any, tokenizer: Any, backend: Any, options: RunOptions,
    reward: RewardConfig, temperature: float,
) -> Rollout:  # fmt: skip
    """One sampled run of the agent on ``q`` (``options`` as ``rollout_options`` makes them)."""
    from eventfold.llm.transformers_backend import HFChatModel

    turns = SampledTurns(engine, temperature)
    model = HFChatModel(tokenizer, None, name="policy", max_new_tokens=options.step_max_tokens, seed=None,
                        generator=turns)  # fmt: skip
    started = time.perf_counter()
    result = run_agent(q.question, AgentDeps(model=model, backend=backend), options)
    run = result.run
    outcome = outcome_of(run, q.golds)
    n, valid = valid_turns(run)
    return Rollout(
        question=group, turns=turns.turns, outcome=outcome, reward=episode_reward(outcome, reward),
        policy_turns=n, valid_turns=valid, seconds=time.perf_counter() - started, answer=outcome.answer,
    )  # fmt: skip
