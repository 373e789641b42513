"""SIRAS: reshape each rollout's GRPO advantage across its tokens, keeping its token mean.

``shape_advantages(group, config)`` shapes one sibling group; ``shape_batch(groups, config)`` shapes
a batch (it computes s_batch from the non-degenerate groups first). Outputs are float64 torch tensors,
one (T_j,) tensor per rollout.

- non-degenerate group: A_jt = A_j·u_jt, token mean exactly A_j (sign rule in :class:`SirasConfig`);
  with ``positive_soft_clip`` (default) positive token advantages are then soft-clipped,
  A_jt ← c·tanh(A_jt/c): negative rollouts keep the exact mean, positive ones a smaller one
  (residuals of degenerate groups are small by construction and keep their exact means: not clipped);
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
from training.rl.siras.order_free import exact_mean, exact_std
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
    log-probs of the sampling policy, optional forced chunk breaks, rewards r_j (NaN = unscorable, as
    TRL writes a reward function's None) and GRPO advantages A_j; optional per-rollout ``success``
    scores (the correctness part of a composite reward) that decide all-correct vs all-wrong.

    Unusable rollouts — NaN reward or no valid token — get a zero advantage on every token and take no
    part in the group's statistics (classification, length scores, s_batch, alignment)."""

    token_ids: list[ArrayLike]
    rewards: ArrayLike
    advantages: ArrayLike
    logprobs: list[ArrayLike] | None = None
    breaks: list[ArrayLike | None] | None = None
    success: ArrayLike | None = None

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
        if np.isinf(self.rewards).any():
            raise ValueError("SiblingGroup: infinite reward (use None/NaN for an unscorable rollout)")
        if self.success is not None:
            self.success = _np(self.success)
            if self.success.shape != (n,):
                raise ValueError(f"SiblingGroup: {n} rollouts need {n} success scores")
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

    @property
    def usable(self) -> np.ndarray:
        """(n,) bool: a finite reward and at least one valid token."""
        return np.isfinite(self.rewards) & (self.lengths > 0)


@dataclass
class ShapeStats:
    """Diagnostics of one shaping call (the trainer logs them)."""

    kinds: list[GroupKind] = field(default_factory=list)
    s_batch: float = 0.0
    multiplier_std: list[float] = field(default_factory=list)
    cluster_skipped: int = 0
    unusable: int = 0


def positive_soft_clip(advantages: ArrayLike, level: float = 1.0) -> np.ndarray:
    """Soft-clip positive advantages towards ``level`` (A ← c·tanh(A/c) for A > 0); negatives untouched."""
    a = _np(advantages)
    return np.where(a > 0, level * np.tanh(np.maximum(a, 0.0) / level), a)


def classify(rewards: ArrayLike, config: SirasConfig, success: ArrayLike | None = None) -> GroupKind:
    """normal (rewards differ), all_correct or all_wrong (mean success score vs success_threshold);
    NaN rewards are left out (a group with fewer than one scored rollout is "normal": nothing to shape)."""
    r = _np(rewards)
    keep = np.isfinite(r)
    if not keep.any() or np.ptp(r[keep]) > config.reward_tie_tol:
        return "normal"
    score = r[keep] if success is None else _np(success)[keep]
    return "all_correct" if np.nanmean(score) >= config.success_threshold else "all_wrong"


def length_scores(lengths: np.ndarray, rho: float, usable: np.ndarray | None = None) -> np.ndarray:
    """q_j = −(T_j − T̄)/max(σ_T, ρ·T̄) over the usable rollouts (shorter positive, sums to 0); 0 elsewhere.

    T̄ and σ_T are exact sums (order-free): permuting the rollouts permutes q bit for bit."""
    keep = np.ones(lengths.shape, dtype=bool) if usable is None else usable
    q = np.zeros(lengths.shape)
    if not keep.any():
        return q
    mean = exact_mean(lengths[keep])
    scale = max(exact_std(lengths[keep]), rho * mean, 1e-12)
    q[keep] = -(lengths[keep] - mean) / scale
    return q


def _kind(g: SiblingGroup, config: SirasConfig) -> GroupKind:
    u = g.usable
    return classify(np.where(u, g.rewards, np.nan), config, g.success)


def batch_scale(groups: Sequence[SiblingGroup], config: SirasConfig) -> float | None:
    """s_batch = mean |A_j| over the usable rollouts of non-degenerate groups (None when there are none);
    an exact sum, so neither the order of the groups nor that of their rollouts changes a bit."""
    vals = [np.abs(g.advantages[g.usable]) for g in groups if _kind(g, config) == "normal"]
    vals = [v for v in vals if v.size]
    return exact_mean(np.concatenate(vals)) if vals else None


def shape_advantages(
    group: SiblingGroup,
    config: SirasConfig,
    markers: StructureMarkers | None = None,
    s_batch: float | None = None,
    stats: ShapeStats | None = None,
) -> list[torch.Tensor]:
    """Per-token advantages (list of (T_j,) float64 tensors) for one sibling group.

    ``s_batch`` scales degenerate residuals; when None it is this group's own mean |A| (or
    ``config.s_batch_fallback`` if the group is degenerate). Unusable rollouts get zeros.
    """
    n = len(group.token_ids)
    usable = group.usable
    adv = np.where(usable, group.advantages, 0.0)
    kind = _kind(group, config)
    if s_batch is None:
        s_batch = batch_scale([group], config)
        s_batch = config.s_batch_fallback if s_batch is None else s_batch
    if stats is not None:
        stats.kinds.append(kind)
        stats.unusable += int((~usable).sum())
    flat = [np.full(t.size, adv[j]) for j, t in enumerate(group.token_ids)]
    if not config.enabled or (kind != "normal" and not config.residual):
        return [torch.from_numpy(f) for f in flat]
    idx = np.flatnonzero(usable)
    lps = None if group.logprobs is None else [group.logprobs[j] for j in idx]
    brk = None if group.breaks is None else [group.breaks[j] for j in idx]
    gw: GroupWeights = group_weights([group.token_ids[j] for j in idx], lps, config, markers, brk)
    u = [np.zeros(t.size) for t in group.token_ids]
    for r, j in enumerate(idx):
        u[j] = gw.multipliers[r]
    if stats is not None:
        stats.multiplier_std.extend(float(x.std()) for x in gw.multipliers if x.size)
        stats.cluster_skipped += int(gw.cluster_skipped)
    if kind == "normal":
        out = [adv[j] * u[j] for j in range(n)]
        if config.positive_soft_clip:
            out = [positive_soft_clip(o, config.soft_clip_level) for o in out]
    elif kind == "all_correct":
        q = length_scores(group.lengths, config.rho, usable)
        out = [config.lam * s_batch * q[j] * u[j] for j in range(n)]
    else:
        out = []
        for j in range(n):
            r = u[j] - 1.0
            out.append(config.eta * s_batch * (r - r.mean()) if r.size and usable[j] else np.zeros(r.size))
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
