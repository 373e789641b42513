"""Chunk weights and token multipliers for one sibling group.

m_c  = mean over siblings k ≠ j of max(s_{j→k}(c), κ_{j→k}(c))   (leave-one-out match)
       s_{j→k}(c): best similarity of c to the chunks of k aligned with it (banded DTW path);
       κ_{j→k}(c): best similarity of c to the chunks of k in its average-linkage cluster (0 if none),
       so shared scaffolding that moved position still counts as shared.
d_c  = (1 − m_c)^γ
g_c  = floor + (1 − floor)·min(1, JS(surprise profile of c ‖ pooled profile of its aligned chunks)/js_ref)
ω_c  = ε_w + (1 − ε_w)·d_c·g_c
u_t  = ω_chunk(t) / ω̄_j  →  clip to [u_min, u_max]  →  u_t + (1 − mean u)   (token mean exactly 1)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from training.rl.siras.chunking import StructureMarkers, chunk_index, chunk_starts
from training.rl.siras.config import SirasConfig
from training.rl.siras.dtw import dtw_batch, positional_path
from training.rl.siras.features import (
    average_linkage_labels,
    chunk_vectors,
    js_divergence,
    surprise_histograms,
)


@dataclass(frozen=True)
class GroupWeights:
    """Per rollout: chunk starts (T,), chunk weights ω (C,), match m (C,) and mean-1 multipliers (T,)."""

    starts: list[np.ndarray]
    omega: list[np.ndarray]
    match: list[np.ndarray]
    multipliers: list[np.ndarray]


def mean_match(u: np.ndarray, config: SirasConfig) -> np.ndarray:
    """Clip multipliers to [u_min, u_max], then shift them additively so their mean is exactly 1."""
    if u.size == 0:
        return u
    c = np.clip(u, config.u_min, config.u_max)
    return c + (1.0 - c.mean())


def _pad(rows: list[np.ndarray], size: int, fill: float) -> np.ndarray:
    out = np.full((len(rows), size, *rows[0].shape[1:]), fill, dtype=rows[0].dtype)
    for i, r in enumerate(rows):
        out[i, : r.shape[0]] = r
    return out


def group_weights(
    token_ids: list[np.ndarray],
    logprobs: list[np.ndarray] | None,
    config: SirasConfig,
    markers: StructureMarkers | None = None,
    breaks: list[np.ndarray | None] | None = None,
) -> GroupWeights:
    """Chunk every sibling, align all pairs, and turn divergence into mean-1 token multipliers."""
    n = len(token_ids)
    lps = logprobs if logprobs is not None else [None] * n
    brk = breaks if breaks is not None else [None] * n
    starts = [chunk_starts(token_ids[j], lps[j], config, markers, brk[j]) for j in range(n)]
    chunks = [chunk_index(s) for s in starts]
    n_ch = np.array([int(s.sum()) for s in starts], dtype=np.int64)
    valid = np.flatnonzero(n_ch > 0)
    match = [np.ones(c, dtype=np.float64) for c in n_ch]
    omega = [np.full(c, config.eps_w) for c in n_ch]
    if valid.size >= 2:
        match, omega = _weights(token_ids, lps, starts, chunks, n_ch, valid, config)
    mult = [
        mean_match(omega[j][chunks[j]] / omega[j][chunks[j]].mean(), config) if n_ch[j] else np.zeros(0)
        for j in range(n)
    ]
    return GroupWeights(starts=starts, omega=omega, match=match, multipliers=mult)


def _weights(token_ids, lps, starts, chunks, n_ch, valid, config):
    size = int(n_ch.max())
    nb = len(config.surprise_bins) + 1
    vec = [chunk_vectors(token_ids[j], chunks[j], starts[j], int(n_ch[j]), config.hash_dim) for j in valid]
    has_lp = config.gate and all(lps[j] is not None for j in valid)
    hist = [
        surprise_histograms(lps[j] if has_lp else None, chunks[j], int(n_ch[j]), config.surprise_bins)
        for j in valid
    ]
    v = len(valid)
    vec_pad = _pad(vec, size, 0.0)  # (v, S, D)
    hist_pad = _pad(hist, size, 0.0)  # (v, S, nb)
    lens = n_ch[valid]
    ia, ib = np.triu_indices(v, k=1)
    tv = torch.from_numpy(vec_pad)
    sims = torch.bmm(tv[ia], tv[ib].transpose(1, 2)).numpy().astype(np.float64).clip(0.0, 1.0)
    sims[sims > 1.0 - 1e-6] = 1.0  # float32 round-off: identical chunks match exactly
    if config.alignment == "dtw":
        halfwidth = np.maximum(config.min_band, np.ceil(config.band * np.maximum(lens[ia], lens[ib])))
        _, path = dtw_batch(1.0 - sims, lens[ia], lens[ib], halfwidth.astype(np.int64))
    else:
        path = positional_path(lens[ia], lens[ib], size)
    pp, pa, pb = np.nonzero(path)  # aligned cells, ~2S per pair
    on = sims[pp, pa, pb]
    m_ab = np.zeros((ia.size, size))
    m_ba = np.zeros((ia.size, size))
    np.maximum.at(m_ab, (pp, pa), on)
    np.maximum.at(m_ba, (pp, pb), on)
    if config.cluster:
        # only chunks the alignment left poorly matched are clustered (shared ones already match)
        msum = np.zeros((v, size))
        np.add.at(msum, ia, m_ab)
        np.add.at(msum, ib, m_ba)
        cand = (msum / (v - 1) < config.cluster_max_match) & (np.arange(size)[None, :] < lens[:, None])
        lab_pad = np.full((v, size), -1, dtype=np.int64)
        if 2 <= cand.sum() <= config.cluster_max_chunks:
            lab_pad[cand] = average_linkage_labels(vec_pad[cand], config.cluster_cut)
            same = (lab_pad[ia][:, :, None] == lab_pad[ib][:, None, :]) & (lab_pad[ia][:, :, None] >= 0)
            clus = np.where(same, sims, 0.0)
            m_ab = np.maximum(m_ab, clus.max(axis=2))
            m_ba = np.maximum(m_ba, clus.max(axis=1))
    msum = np.zeros((v, size))
    np.add.at(msum, ia, m_ab)
    np.add.at(msum, ib, m_ba)
    m = np.clip(msum / (v - 1), 0.0, 1.0)
    d = (1.0 - m) ** config.gamma
    if has_lp:
        pooled = np.zeros((v, size, nb))
        np.add.at(pooled, (ia[pp], pa), hist_pad[ib[pp], pb])
        np.add.at(pooled, (ib[pp], pb), hist_pad[ia[pp], pa])
        js = js_divergence(hist_pad, pooled)
        g = config.gate_floor + (1.0 - config.gate_floor) * np.minimum(1.0, js / config.js_ref)
    else:
        g = np.ones_like(d)
    w = config.eps_w + (1.0 - config.eps_w) * d * g
    match = [np.ones(c) for c in n_ch]
    omega = [np.full(c, config.eps_w) for c in n_ch]
    for r, j in enumerate(valid):
        match[j] = m[r, : n_ch[j]]
        omega[j] = w[r, : n_ch[j]]
    return match, omega
