"""SIRAS: reshape each rollout's GRPO advantage across its tokens, keeping its token mean.

``shape_advantages(group, config)`` shapes one sibling group; ``shape_batch(groups, config)`` shapes
a batch (it computes s_batch from the non-degenerate groups first). Outputs are float64 torch tensors,
one (T_j,) tensor per rollout.

- non-degenerate group: A_jt = A_j·u_jt, token mean exactly A_j (sign rule in :class:`SirasConfig`);
- all-correct degenerate group: A_jt = λ·s_batch·q_j·v_jt, q_j = −(T_j − T̄)/max(σ_T, ρ·T̄), so shorter
  successes get a larger (positive) token mean and the group's q sums to 0;
- all-wrong degenerate group: A_jt = η·s_batch·(v_jt − 1), token mean exactly 0 per rollout;
v_jt = u_jt (the group's mean-1 divergence multipliers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from training.rl.siras.chunking import StructureMarkers
from training.rl.siras.config import SirasConfig
from training.rl.siras.weights import GroupWeights, group_weights

ArrayLike = np.ndarray | torch.Tensor | Sequence[float]
GroupKind = Literal["normal", "all_correct", "all_wrong"]


def _np(x: ArrayLike | None, dtype: type = np.float64) -> np.ndarray | None:
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=dtype)


@dataclass
class SiblingGroup:
    """One prompt's n rollouts: completion token ids (masked tokens already removed), optional per-token
    log-probs of the sampling policy, optional forced chunk breaks, rewards r_j and GRPO advantages A_j."""

    token_ids: list[ArrayLike]
    rewards: ArrayLike
    advantages: ArrayLike
    logprobs: list[ArrayLike] | None = None
    breaks: list[ArrayLike | None] | None = None

    def __post_init__(self) -> None:
        n = len(self.token_ids)
        self.token_ids = [_np(t, np.int64) for t in self.token_ids]
        self.rewards = _np(self.rewards)
        self.advantages = _np(self.advantages)
        if self.rewards.shape != (n,) or self.advantages.shape != (n,):
            raise ValueError(
                f"SiblingGroup: {n} rollouts need {n} rewards and advantages "
                f"(got {self.rewards.shape}, {self.advantages.shape})"
            )
        if self.logprobs is not None:
            self.logprobs = [_np(lp) for lp in self.logprobs]
            if len(self.logprobs) != n or any(
                lp.shape != t.shape for lp, t in zip(self.logprobs, self.token_ids, strict=False)
            ):
                raise ValueError("SiblingGroup: logprobs must match token_ids rollout by rollout")
        if self.breaks is not None:
            self.breaks = [None if b is None else _np(b, bool) for b in self.breaks]

    @property
    def lengths(self) -> np.ndarray:
        return np.array([t.size for t in self.token_ids], dtype=np.float64)


@dataclass
class ShapeStats:
    """Diagnostics of one shaping call (the trainer logs them)."""

    kinds: list[GroupKind] = field(default_factory=list)
    s_batch: float = 0.0
    multiplier_std: list[float] = field(default_factory=list)


def positive_soft_clip(advantages: ArrayLike) -> np.ndarray:
    """Soft-clip positive advantages towards 1.0 (A ← tanh A for A > 0); negatives untouched."""
    a = _np(advantages)
    return np.where(a > 0, np.tanh(np.maximum(a, 0.0)), a)


def classify(rewards: ArrayLike, config: SirasConfig) -> GroupKind:
    r = _np(rewards)
    if r.size == 0 or np.ptp(r) > config.reward_tie_tol:
        return "normal"
    return "all_correct" if r.mean() >= config.success_threshold else "all_wrong"


def length_scores(lengths: np.ndarray, rho: float) -> np.ndarray:
    """q_j = −(T_j − T̄)/max(σ_T, ρ·T̄): shorter rollouts positive, sums to 0."""
    mean = lengths.mean()
    scale = max(float(lengths.std()), rho * float(mean), 1e-12)
    return -(lengths - mean) / scale


def batch_scale(groups: Sequence[SiblingGroup], config: SirasConfig) -> float | None:
    """s_batch = mean |A_j| over the non-degenerate rollouts (None when there are none)."""
    vals = [np.abs(_advantages(g, config)) for g in groups if classify(g.rewards, config) == "normal"]
    vals = [v for v in vals if v.size]
    return float(np.concatenate(vals).mean()) if vals else None


def _advantages(group: SiblingGroup, config: SirasConfig) -> np.ndarray:
    a = group.advantages
    return positive_soft_clip(a) if config.positive_soft_clip else a


def shape_advantages(
    group: SiblingGroup,
    config: SirasConfig,
    markers: StructureMarkers | None = None,
    s_batch: float | None = None,
    stats: ShapeStats | None = None,
) -> list[torch.Tensor]:
    """Per-token advantages (list of (T_j,) float64 tensors) for one sibling group.

    ``s_batch`` scales degenerate residuals; when None it is this group's own mean |A| (or
    ``config.s_batch_fallback`` if the group is degenerate).
    """
    n = len(group.token_ids)
    adv = _advantages(group, config)
    kind = classify(group.rewards, config)
    if s_batch is None:
        s_batch = batch_scale([group], config)
        s_batch = config.s_batch_fallback if s_batch is None else s_batch
    if stats is not None:
        stats.kinds.append(kind)
    flat = [np.full(t.size, adv[j]) for j, t in enumerate(group.token_ids)]
    if not config.enabled or (kind != "normal" and not config.residual):
        return [torch.from_numpy(f) for f in flat]
    gw: GroupWeights = group_weights(group.token_ids, group.logprobs, config, markers, group.breaks)
    u = gw.multipliers
    if stats is not None:
        stats.multiplier_std.extend(float(x.std()) for x in u if x.size)
    if kind == "normal":
        out = [adv[j] * u[j] for j in range(n)]
    elif kind == "all_correct":
        q = length_scores(group.lengths, config.rho)
        out = [config.lam * s_batch * q[j] * u[j] for j in range(n)]
    else:
        out = []
        for j in range(n):
            r = u[j] - 1.0
            out.append(config.eta * s_batch * (r - r.mean()) if r.size else r)
    return [torch.from_numpy(np.ascontiguousarray(o, dtype=np.float64)) for o in out]


def shape_batch(
    groups: Sequence[SiblingGroup],
    config: SirasConfig,
    markers: StructureMarkers | None = None,
    s_batch_fallback: float | None = None,
) -> tuple[list[list[torch.Tensor]], ShapeStats]:
    """Shape every group of a batch with one s_batch taken from its non-degenerate rollouts."""
    s = batch_scale(groups, config)
    if s is None:
        s = config.s_batch_fallback if s_batch_fallback is None else s_batch_fallback
    stats = ShapeStats(s_batch=float(s))
    return [shape_advantages(g, config, markers, s, stats) for g in groups], stats
