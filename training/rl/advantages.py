"""Advantage estimators: pure functions in a registry, looked up by name (as verl's ``core_algos.py``).

    @register_adv_est("grpo")
    def grpo(batch: AdvantageBatch, config: SirasConfig, ctx: EstimatorContext) -> AdvantageOutput

Registered: ``grpo`` (one group-normalised advantage A_j on every valid token), ``siras`` (DESIGN §5
token shaping with the run's :class:`SirasConfig`) and its ablations ``siras_no_dtw`` (positional
alignment), ``siras_no_residual`` (degenerate groups get GRPO's zero) and ``siras_no_softclip``.
The run config names one (``[advantage] method``); the trainer calls it on the gathered generation
batch. Everything here is torch/numpy on CPU tensors, with no trainer state: the mask → groups →
(B, T) bookkeeping lives here and is tested without TRL.

Group statistics follow TRL's GRPO (A_j = (r_j − mean r)/(std r + ε), std unbiased, ``scale`` =
"group" | "batch" | "none") with two deliberate differences: a rollout whose reward is NaN (a reward
function returned None) or that has no valid token (fully masked) is left out of the mean and std
and gets A_j = 0 — it carries no information about the policy's choice, so it must not move its
siblings' baseline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from training.rl.siras.chunking import StructureMarkers
from training.rl.siras.config import SirasConfig
from training.rl.siras.order_free import exact_mean, exact_std
from training.rl.siras.shape import ShapeStats, SiblingGroup, shape_batch

Scale = Literal["group", "batch", "none"]


@dataclass
class AdvantageBatch:
    """A generation batch, rows in any order: ``token_ids``/``mask`` (B, T) (mask: tokens the loss
    sees — completion × tool mask), ``rewards`` (B,) (NaN = unscorable), ``group`` (B,) sibling-group
    id of each row, optional sampling ``logprobs`` (B, T) and per-row ``success`` scores (B,)."""

    token_ids: torch.Tensor
    mask: torch.Tensor
    rewards: torch.Tensor
    group: torch.Tensor
    logprobs: torch.Tensor | None = None
    success: torch.Tensor | None = None

    def __post_init__(self) -> None:
        b, t = self.token_ids.shape
        if self.mask.shape != (b, t) or self.rewards.shape != (b,) or self.group.shape != (b,):
            raise ValueError(
                f"AdvantageBatch: token_ids {tuple(self.token_ids.shape)} needs mask (B, T), rewards and "
                f"group (B,) (got {tuple(self.mask.shape)}, {tuple(self.rewards.shape)}, {tuple(self.group.shape)})"
            )
        if self.logprobs is not None and self.logprobs.shape != (b, t):
            raise ValueError("AdvantageBatch: logprobs must have the shape of token_ids")
        if self.success is not None and self.success.shape != (b,):
            raise ValueError("AdvantageBatch: success must be (B,)")
        if torch.isinf(self.rewards.double()).any():
            raise ValueError("AdvantageBatch: infinite reward (write None/NaN for an unscorable rollout)")


@dataclass(frozen=True)
class EstimatorContext:
    """What an estimator may read besides the batch: GRPO scaling, the tokenizer's structure markers,
    and the last s_batch seen (for a batch whose groups are all degenerate)."""

    scale: Scale = "group"
    std_eps: float = 1e-4
    markers: StructureMarkers | None = None
    s_batch_fallback: float | None = None


@dataclass
class AdvantageOutput:
    """(B, T) float32 token advantages (0 on masked tokens), (B,) A_j, and shaping diagnostics."""

    advantages: torch.Tensor
    sequence: torch.Tensor
    stats: ShapeStats = field(default_factory=ShapeStats)


Estimator = Callable[[AdvantageBatch, SirasConfig, EstimatorContext], AdvantageOutput]
_REGISTRY: dict[str, Estimator] = {}


def register_adv_est(name: str) -> Callable[[Estimator], Estimator]:
    """Decorator: register an estimator under ``name`` (a name is registered once)."""

    def deco(fn: Estimator) -> Estimator:
        if name in _REGISTRY and _REGISTRY[name] is not fn:
            raise ValueError(f"advantage estimator {name!r} is already registered")
        _REGISTRY[name] = fn
        return fn

    return deco


def get_adv_est(name: str) -> Estimator:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown advantage estimator {name!r} (registered: {', '.join(names())})") from None


def names() -> list[str]:
    return sorted(_REGISTRY)


def usable_rows(batch: AdvantageBatch) -> np.ndarray:
    """(B,) bool: a finite reward and at least one valid token."""
    return np.isfinite(batch.rewards.double().numpy()) & (batch.mask.sum(1) > 0).numpy()


def group_advantages(batch: AdvantageBatch, scale: Scale = "group", eps: float = 1e-4) -> np.ndarray:
    """(B,) float64 A_j = (r_j − mean)/(std + eps) over each group's usable rows; 0 for the others.

    std is unbiased (torch's, as TRL); a group with fewer than two usable rows gets 0."""
    r = batch.rewards.double().numpy()
    use = usable_rows(batch)
    gid = batch.group.numpy()
    adv = np.zeros(r.shape)
    stds: dict[int, float] = {}
    for g in np.unique(gid):
        rows = np.flatnonzero((gid == g) & use)
        if rows.size < 2:
            continue
        adv[rows] = r[rows] - exact_mean(r[rows])  # exact sums: the row order changes no bit
        stds[int(g)] = exact_std(r[rows], ddof=1)
    if scale == "group":
        for g, s in stds.items():
            rows = np.flatnonzero((gid == g) & use)
            adv[rows] /= s + eps
    elif scale == "batch" and use.sum() >= 2:
        adv /= exact_std(r[use], ddof=1) + eps
    return adv


def _valid_positions(batch: AdvantageBatch) -> list[torch.Tensor]:
    return [torch.nonzero(batch.mask[i], as_tuple=False).squeeze(1) for i in range(batch.mask.shape[0])]


def sibling_groups(batch: AdvantageBatch, adv: np.ndarray) -> list[tuple[np.ndarray, SiblingGroup]]:
    """(row indices, SiblingGroup) per group id (ascending): valid tokens only, a forced chunk break
    where masked tokens (tool output) were cut out."""
    pos = _valid_positions(batch)
    gid = batch.group.numpy()
    ids = batch.token_ids
    lps = batch.logprobs
    out = []
    for g in np.unique(gid):
        rows = np.flatnonzero(gid == g)
        toks, lpl, brk = [], [], []
        for i in rows:
            p = pos[i]
            toks.append(ids[i, p].numpy())
            lpl.append(lps[i, p].double().numpy() if lps is not None else None)
            gaps = np.zeros(p.numel(), dtype=bool)
            if p.numel() > 1:
                gaps[1:] = (p[1:] - p[:-1] > 1).numpy()
            brk.append(gaps)
        success = batch.success[rows].double().numpy() if batch.success is not None else None
        group = SiblingGroup(
            token_ids=toks, rewards=batch.rewards[rows].double().numpy(), advantages=adv[rows],
            logprobs=lpl if lps is not None else None, breaks=brk, success=success,
        )  # fmt: skip
        out.append((rows, group))
    return out


def _scatter(batch: AdvantageBatch, rows_vals: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
    full = torch.zeros(batch.mask.shape, dtype=torch.float32)
    pos = _valid_positions(batch)
    for i, vals in rows_vals:
        full[i, pos[i]] = vals.float()
    return full


@register_adv_est("grpo")
def grpo(batch: AdvantageBatch, config: SirasConfig, ctx: EstimatorContext) -> AdvantageOutput:
    """Plain GRPO: A_j on every valid token (``config`` unused)."""
    adv = group_advantages(batch, ctx.scale, ctx.std_eps)
    full = torch.from_numpy(adv).float()[:, None] * batch.mask.float()
    return AdvantageOutput(full, torch.from_numpy(adv), ShapeStats(unusable=int((~usable_rows(batch)).sum())))


@register_adv_est("siras")
def siras(batch: AdvantageBatch, config: SirasConfig, ctx: EstimatorContext) -> AdvantageOutput:
    """SIRAS (DESIGN §5): GRPO's A_j reshaped across each rollout's tokens by sibling divergence."""
    adv = group_advantages(batch, ctx.scale, ctx.std_eps)
    groups = sibling_groups(batch, adv)
    shaped, stats = shape_batch([g for _, g in groups], config, ctx.markers, ctx.s_batch_fallback)
    pairs = [
        (int(i), t)
        for (rows, _), ts in zip(groups, shaped, strict=True)
        for i, t in zip(rows, ts, strict=True)
    ]
    return AdvantageOutput(_scatter(batch, pairs), torch.from_numpy(adv), stats)


def _ablation(name: str, **override: object) -> Estimator:
    def estimator(batch: AdvantageBatch, config: SirasConfig, ctx: EstimatorContext) -> AdvantageOutput:
        return siras(batch, config.model_copy(update=override), ctx)

    estimator.__name__ = name
    estimator.__doc__ = f"SIRAS with {override} (ablation)."
    return register_adv_est(name)(estimator)


siras_no_dtw = _ablation("siras_no_dtw", alignment="positional")
siras_no_residual = _ablation("siras_no_residual", residual=False)
siras_no_softclip = _ablation("siras_no_softclip", positive_soft_clip=False)

METHODS = ("grpo", "siras", "siras_no_dtw", "siras_no_residual", "siras_no_softclip")
