"""Adaptive data scheduling for RL: clusters of training questions chosen by UCB.

DESIGN §5 "Data scheduling": cluster the training prompts (difficulty, lexical features, optional
embeddings); keep, per cluster, a sliding window of value observations; every ``update_every`` steps
pick the cluster to draw from by UCB1 with exploration coefficient ``exploration`` (1.0 by default):

    score_c = mean(window_c) + exploration * sqrt(ln(N) / n_c)

where ``n_c`` is how many value observations cluster c received in total and ``N`` their sum over
clusters; a cluster never observed scores +inf (each is tried once first).

The value of a step is given by the caller (``observe``). What it means is a choice:

- ``"learnability"`` (default, cheap): share of GRPO groups of the batch whose rewards are *not* all
  equal — a group with equal rewards gives GRPO no gradient, so clusters that still split the
  siblings are the ones worth training on;
- ``"reward_gain"``: change of the cluster's mean reward since its previous observation (learning
  progress, absolute value);
- ``"grad_alignment"``: a number the trainer computes (e.g. cosine between the batch gradient and a
  held-out batch's gradient), passed as ``value=``.

``enabled=False`` is the ablation switch: uniform shuffled sampling over all questions (epochs
without replacement), ignoring clusters and values. Everything here is pure Python + numpy and
deterministic for a seed.
"""

from __future__ import annotations

import math
import random
import re
from collections import deque
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

ValueSignal = Literal["learnability", "reward_gain", "grad_alignment"]


class ScheduleConfig(BaseModel):
    """Options of the adaptive scheduler (``enabled=False``: the uniform baseline for ablations)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    n_clusters: int = Field(4, ge=1, le=1024)
    exploration: float = Field(1.0, ge=0.0)
    update_every: int = Field(5, ge=1)
    window: int = Field(20, ge=1, description="sliding window of value observations per cluster")
    value: ValueSignal = "learnability"
    seed: int = 0


class ScheduleError(ValueError):
    """Bad scheduler input (no questions, unknown index, mismatched lengths)."""


# --- features and clustering --------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)
_HASH_DIM = 64


def _stable_hash(token: str) -> int:
    h = 2166136261  # FNV-1a, stable across processes (unlike hash())
    for ch in token.encode("utf-8"):
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return h


def question_features(question: str, difficulty: float | None = None) -> np.ndarray:
    """Lexical features of one question: hashed bag of lower-cased words (L2-normalised), plus
    length, share of capitalised words (entities), digits, comparison cue words, and difficulty."""
    words = _WORD.findall(question)
    bag = np.zeros(_HASH_DIM, dtype=np.float64)
    for w in words:
        bag[_stable_hash(w.lower()) % _HASH_DIM] += 1.0
    norm = float(np.linalg.norm(bag))
    if norm > 0:
        bag /= norm
    n = max(len(words), 1)
    lower = question.lower()
    extra = np.array(
        [
            min(len(words) / 40.0, 1.0),
            sum(w[:1].isupper() for w in words) / n,
            sum(any(c.isdigit() for c in w) for w in words) / n,
            float(any(c in lower for c in (" or ", "both", "which ", "same", "older", "first", "more "))),
            0.0 if difficulty is None else float(difficulty),
        ]
    )
    return np.concatenate([bag, 2.0 * extra])


def kmeans(points: np.ndarray, k: int, seed: int = 0, iters: int = 50) -> np.ndarray:
    """Labels of a deterministic k-means (k-means++ seeding). ``k`` is capped at the point count."""
    n = points.shape[0]
    if n == 0:
        raise ScheduleError("no points to cluster")
    k = min(k, n)
    rng = np.random.default_rng(seed)
    centers = [points[rng.integers(n)]]
    for _ in range(1, k):
        d2 = np.min([((points - c) ** 2).sum(axis=1) for c in centers], axis=0)
        total = d2.sum()
        idx = int(rng.choice(n, p=d2 / total)) if total > 0 else int(rng.integers(n))
        centers.append(points[idx])
    c = np.stack(centers)
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(iters):
        dist = ((points[:, None, :] - c[None, :, :]) ** 2).sum(axis=2)
        new = dist.argmin(axis=1)
        if _ > 0 and np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            members = points[labels == j]
            if len(members):
                c[j] = members.mean(axis=0)
    # relabel so that cluster ids are dense 0..k'-1 in order of first appearance
    remap: dict[int, int] = {}
    return np.array([remap.setdefault(int(x), len(remap)) for x in labels], dtype=np.int64)


def cluster_questions(
    questions: Sequence[str],
    n_clusters: int,
    *,
    difficulty: Sequence[float] | None = None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    seed: int = 0,
) -> list[int]:
    """Cluster ids (0..k-1) for the questions, from lexical features, difficulty and optional
    embeddings (``embed`` maps texts to an (n, d) array; rows are L2-normalised here)."""
    if not questions:
        raise ScheduleError("no training questions to schedule")
    if difficulty is not None and len(difficulty) != len(questions):
        raise ScheduleError(f"{len(difficulty)} difficulty values for {len(questions)} questions")
    feats = np.stack(
        [question_features(q, None if difficulty is None else difficulty[i]) for i, q in enumerate(questions)]
    )
    if embed is not None:
        emb = np.asarray(embed(list(questions)), dtype=np.float64)
        if emb.shape[0] != len(questions):
            raise ScheduleError(f"embed returned {emb.shape[0]} rows for {len(questions)} questions")
        emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        feats = np.concatenate([feats, emb], axis=1)
    return [int(x) for x in kmeans(feats, n_clusters, seed=seed)]


# --- the scheduler ------------------------------------------------------------------------------


class ClusterStats(BaseModel):
    """Public snapshot of one cluster (for logs)."""

    cluster: int
    size: int
    pulls: int
    mean_value: float | None
    ucb: float
    mean_reward: float | None


class Scheduler:
    """Chooses which training questions come next.

    ``next_indices(n)`` returns question indices; ``observe(indices, rewards, group_size)`` feeds back
    the rewards of the rollouts of those questions (``group_size`` siblings per question, in order).
    Call ``step()`` once per optimiser step; every ``update_every`` steps the active cluster is
    re-chosen by UCB.
    """

    def __init__(self, clusters: Sequence[int], config: ScheduleConfig | None = None) -> None:
        if not clusters:
            raise ScheduleError("no training questions to schedule")
        self.config = config or ScheduleConfig()
        self.clusters = [int(c) for c in clusters]
        self.members: dict[int, list[int]] = {}
        for i, c in enumerate(self.clusters):
            self.members.setdefault(c, []).append(i)
        self._rng = random.Random(self.config.seed)
        self._values: dict[int, deque[float]] = {c: deque(maxlen=self.config.window) for c in self.members}
        self._pulls: dict[int, int] = {c: 0 for c in self.members}
        self._last_reward: dict[int, float] = {}
        self._queues: dict[int, list[int]] = {c: [] for c in self.members}
        self._uniform: list[int] = []
        self.steps = 0
        self.active = self._choose()
        self.history: list[int] = [self.active]

    # -- selection --
    def ucb(self, cluster: int) -> float:
        n_c = self._pulls[cluster]
        if n_c == 0:
            return math.inf
        total = sum(self._pulls.values())
        mean = sum(self._values[cluster]) / len(self._values[cluster]) if self._values[cluster] else 0.0
        return mean + self.config.exploration * math.sqrt(math.log(max(total, 1)) / n_c)

    def _choose(self) -> int:
        scores = {c: self.ucb(c) for c in sorted(self.members)}
        best = max(scores.values())
        ties = [c for c, s in scores.items() if s == best]
        return ties[0] if len(ties) == 1 else self._rng.choice(ties)

    def _draw(self, pool: list[int], source: list[int]) -> int:
        if not pool:
            pool.extend(source)
            self._rng.shuffle(pool)
        return pool.pop()

    def next_indices(self, n: int) -> list[int]:
        """``n`` question indices: from the active cluster (cycled without replacement), or uniform
        over all questions when scheduling is disabled."""
        if n < 1:
            raise ScheduleError(f"asked for {n} questions")
        if not self.config.enabled:
            return [self._draw(self._uniform, list(range(len(self.clusters)))) for _ in range(n)]
        c = self.active
        return [self._draw(self._queues[c], self.members[c]) for _ in range(n)]

    # -- feedback --
    def observe(
        self,
        indices: Sequence[int],
        rewards: Sequence[float],
        group_size: int,
        value: float | None = None,
    ) -> None:
        """Record rollouts: ``rewards`` has ``group_size`` entries per index, grouped in order."""
        if group_size < 1 or len(rewards) != len(indices) * group_size:
            raise ScheduleError(f"{len(rewards)} rewards for {len(indices)} questions x {group_size} rollouts")
        by_cluster: dict[int, list[list[float]]] = {}
        for k, i in enumerate(indices):
            if not 0 <= i < len(self.clusters):
                raise ScheduleError(f"question index {i} out of range 0..{len(self.clusters) - 1}")
            group = [float(r) for r in rewards[k * group_size : (k + 1) * group_size]]
            by_cluster.setdefault(self.clusters[i], []).append(group)
        for c, groups in by_cluster.items():
            flat = [r for g in groups for r in g]
            mean_reward = sum(flat) / len(flat)
            if self.config.value == "grad_alignment":
                if value is None:
                    raise ScheduleError("value='grad_alignment' needs observe(..., value=...)")
                v = float(value)
            elif self.config.value == "reward_gain":
                prev = self._last_reward.get(c)
                v = 0.0 if prev is None else abs(mean_reward - prev)
            else:
                v = sum(1.0 for g in groups if max(g) - min(g) > 1e-9) / len(groups)
            self._last_reward[c] = mean_reward
            self._values[c].append(v)
            self._pulls[c] += 1

    def step(self) -> bool:
        """Advance one optimiser step; re-choose the cluster every ``update_every`` steps.
        Returns True when a re-choice happened."""
        self.steps += 1
        if self.config.enabled and self.steps % self.config.update_every == 0:
            self.active = self._choose()
            self.history.append(self.active)
            return True
        return False

    def stats(self) -> list[ClusterStats]:
        out = []
        for c in sorted(self.members):
            vals = self._values[c]
            out.append(
                ClusterStats(
                    cluster=c,
                    size=len(self.members[c]),
                    pulls=self._pulls[c],
                    mean_value=(sum(vals) / len(vals)) if vals else None,
                    ucb=self.ucb(c),
                    mean_reward=self._last_reward.get(c),
                )
            )
        return out

