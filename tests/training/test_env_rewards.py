"""Episode rewards: correctness (EM/F1, SQuAD normalisation), context cost beyond the budget, format term."""

from __future__ import annotations

import pytest

from training.rl.rewards import EpisodeOutcome, RewardConfig, episode_reward

CFG = RewardConfig(context_budget=1000, cost_per_1k=0.5, cost_cap=0.5, format_bonus=0.1, invalid_penalty=0.1)


def test_correct_answer_within_budget() -> None:
    r = episode_reward(
        EpisodeOutcome(answer="The Eiffel Tower!", golds=["eiffel tower"], peak_context_tokens=900), CFG
    )
    assert (r.em, r.f1, r.correctness) == (1.0, 1.0, 1.0)
    assert r.context_cost == 0.0 and r.format == pytest.approx(0.1)
    assert r.total == pytest.approx(1.1)


def test_partial_f1_and_em_metric() -> None:
    out = EpisodeOutcome(answer="Paris France", golds=["Paris"])
    r = episode_reward(out, CFG)
    assert r.em == 0.0 and r.f1 == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert episode_reward(out, CFG.model_copy(update={"metric": "em"})).correctness == 0.0
    # best gold alias counts
    assert episode_reward(EpisodeOutcome(answer="NYC", golds=["New York", "nyc"]), CFG).em == 1.0


def test_context_cost_linear_beyond_budget_and_capped() -> None:
    base = dict(answer="x", golds=["x"])
    assert episode_reward(EpisodeOutcome(**base, peak_context_tokens=1000), CFG).context_cost == 0.0
    assert episode_reward(
        EpisodeOutcome(**base, peak_context_tokens=1400), CFG
    ).context_cost == pytest.approx(0.2)
    assert episode_reward(EpisodeOutcome(**base, peak_context_tokens=99_000), CFG).context_cost == 0.5
    r = episode_reward(EpisodeOutcome(**base, peak_context_tokens=1400), CFG)
    assert r.total == pytest.approx(1.0 - 0.2 + 0.1)


def test_format_term_penalises_invalid_calls_and_no_answer() -> None:
    r = episode_reward(EpisodeOutcome(answer="x", golds=["y"], invalid_calls=2), CFG)
    assert r.format == pytest.approx(-0.2) and r.total == pytest.approx(-0.2)
    r = episode_reward(EpisodeOutcome(answer=None, golds=["y"], invalid_calls=9), CFG)
    assert r.format == pytest.approx(-CFG.format_cap) and r.correctness == 0.0
    assert episode_reward(EpisodeOutcome(answer=None, golds=["y"]), CFG).format == pytest.approx(-0.1)
