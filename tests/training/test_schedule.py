"""Adaptive data scheduling: clustering, UCB choice every 5 steps, sliding window, ablation switch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from training.rl.schedule import (
    ScheduleConfig,
    ScheduleError,
    Scheduler,
    cluster_questions,
    kmeans,
)

COMPARE = [
    "Which film came out first, Alpha or Beta?",
    "Are both Tom Hanks and Meg Ryan American actors?",
    "Which is older, the Eiffel Tower or Big Ben?",
    "Who was born first, Ada Lovelace or Charles Babbage?",
]
BRIDGE = [
    "what river flows through the city where the author of the book was born",
    "what is the population of the town where the company was founded",
    "in what year did the school that the singer attended open",
    "who directed the movie that starred the actor from the series",
]


def test_clusters_separate_question_kinds() -> None:
    labels = cluster_questions(COMPARE + BRIDGE, 2, seed=0)
    assert len(set(labels[:4])) == 1 and len(set(labels[4:])) == 1
    assert labels[0] != labels[4]
    assert cluster_questions(COMPARE + BRIDGE, 2, seed=0) == labels  # deterministic


def test_clusters_use_difficulty_and_embeddings() -> None:
    qs = ["same words here"] * 6
    labels = cluster_questions(qs, 2, difficulty=[0, 0, 0, 1, 1, 1])
    assert labels[:3] == [labels[0]] * 3 and labels[3:] == [labels[3]] * 3 and labels[0] != labels[3]
    emb = lambda texts: np.array([[1.0, 0.0]] * 3 + [[0.0, 1.0]] * 3)  # noqa: E731
    assert len(set(cluster_questions(qs, 2, embed=emb))) == 2
    with pytest.raises(ScheduleError):
        cluster_questions(qs, 2, difficulty=[0.0])
    with pytest.raises(ScheduleError):
        cluster_questions([], 2)


def test_kmeans_caps_k_and_labels_dense() -> None:
    pts = np.array([[0.0], [0.1], [5.0]])
    labels = kmeans(pts, 10)
    assert sorted(set(labels.tolist())) == list(range(len(set(labels.tolist()))))
    assert kmeans(pts, 2).tolist() in ([0, 0, 1],)


def test_ucb_explores_each_cluster_then_exploits_every_5_steps() -> None:
    clusters = [0, 0, 1, 1, 2, 2]
    s = Scheduler(clusters, ScheduleConfig(update_every=5, exploration=1.0, seed=1))
    value_of = {0: [0.0, 0.0], 1: [0.0, 1.0], 2: [1.0, 1.0]}  # only cluster 1 splits its siblings
    seen = []
    for _ in range(60):
        idx = s.next_indices(2)
        c = s.active
        assert all(clusters[i] == c for i in idx)
        s.observe(idx, value_of[c] * 2, group_size=2)
        changed = s.step()
        assert changed == (s.steps % 5 == 0)
        seen.append(c)
    # every cluster was tried, the active cluster changes only at multiples of 5 steps
    assert set(seen) == {0, 1, 2}
    assert all(seen[i] == seen[i - 1] for i in range(1, 60) if i % 5 != 0)
    assert seen[-20:].count(1) >= 15  # learnable cluster dominates later
    st = {x.cluster: x for x in s.stats()}
    assert st[1].mean_value == 1.0 and st[0].mean_value == 0.0
    total = sum(x.pulls for x in st.values())
    expected = 1.0 + 1.0 * math.sqrt(math.log(total) / st[1].pulls)
    assert st[1].ucb == pytest.approx(expected)


def test_sliding_window_forgets_old_values() -> None:
    s = Scheduler([0, 1], ScheduleConfig(window=3, exploration=0.0))
    for _ in range(3):
        s.observe([0], [0.0, 1.0], group_size=2)  # value 1
    for _ in range(3):
        s.observe([0], [1.0, 1.0], group_size=2)  # value 0
    assert s.stats()[0].mean_value == 0.0


def test_reward_gain_and_grad_alignment_values() -> None:
    s = Scheduler([0], ScheduleConfig(value="reward_gain"))
    s.observe([0], [0.0, 0.0], 2)
    s.observe([0], [1.0, 0.0], 2)
    assert s.stats()[0].mean_value == pytest.approx((0.0 + 0.5) / 2)
    g = Scheduler([0], ScheduleConfig(value="grad_alignment"))
    with pytest.raises(ScheduleError, match="value="):
        g.observe([0], [1.0], 1)
    g.observe([0], [1.0], 1, value=0.7)
    assert g.stats()[0].mean_value == pytest.approx(0.7)


def test_ablation_switch_is_uniform_over_all_questions() -> None:
    s = Scheduler([0, 0, 0, 1], ScheduleConfig(enabled=False, seed=3))
    epoch = s.next_indices(4)
    assert sorted(epoch) == [0, 1, 2, 3]  # one epoch without replacement, clusters ignored
    for _ in range(10):
        assert s.step() is False


def test_bad_feedback_is_rejected() -> None:
    s = Scheduler([0, 1])
    with pytest.raises(ScheduleError, match="rewards"):
        s.observe([0, 1], [1.0, 0.0, 1.0], group_size=2)
    with pytest.raises(ScheduleError, match="out of range"):
        s.observe([7], [1.0], group_size=1)
    with pytest.raises(ScheduleError):
        s.next_indices(0)
    with pytest.raises(ScheduleError):
        Scheduler([])
