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

from training.rl.siras import dtw, dtw_kernel
from training.rl.siras.chunking import StructureMarkers, chunk_index, chunk_starts
from training.rl.siras.config import SirasConfig
from training.rl.siras.dtw import band_limits
from training.rl.siras.features import (
    average_linkage_labels,
    chunk_hashes,
    js_divergence,
    normalise,
    same_label_pairs,
)
from training.rl.siras.similarity import (
    band_gather,
    band_products,
    chunk_counts,
    inverse_norms,
    pair_similarities,
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


def partner_pairs(v: int, max_partners: int) -> tuple[np.ndarray, np.ndarray]:
    """Sibling pairs (a < b) compared: all of them, or a ring where each rollout meets ~max_partners."""
    if v - 1 <= max_partners:
        return np.triu_indices(v, k=1)
    h = max(1, max_partners // 2)
    j = np.repeat(np.arange(v), h)
    k = (j + np.tile(np.arange(1, h + 1), v)) % v
    pairs = np.unique(np.stack([np.minimum(j, k), np.maximum(j, k)], 1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def _weights(token_ids, lps, starts, chunks, n_ch, valid, config):
    size = int(n_ch.max())
    nb = len(config.surprise_bins) + 1
    v = len(valid)
    lens = n_ch[valid]
    offsets = np.concatenate([[0], np.cumsum(lens)[:-1]])
    gchunk = np.concatenate([chunks[j] + o for j, o in zip(valid, offsets, strict=True)])
    counts = chunk_counts(
        np.concatenate([token_ids[j] for j in valid]), gchunk, np.concatenate([starts[j] for j in valid]),
        int(lens.sum()), config.hash_dim,
    )  # fmt: skip
    inv = inverse_norms(counts)
    ar = np.arange(size)[None, :]
    gidx = np.where(ar < lens[:, None], offsets[:, None] + ar, 0)  # (v, S) global chunk index (0 = pad)
    has_lp = config.gate and all(lps[j] is not None for j in valid)
    ia, ib = partner_pairs(v, config.max_partners)
    la, lb = lens[ia], lens[ib]
    if config.alignment == "dtw":
        halfwidth = np.maximum(config.min_band, np.ceil(config.band * np.maximum(la, lb))).astype(np.int64)
        lo, hi = band_limits(la, lb, size, halfwidth)
        buf, row_base = band_products(counts, offsets[ia], offsets[ib], la, lo, hi)
        oa, ob = offsets[ia], offsets[ib]
        if dtw.COMPILED:  # the kernel reads the block products directly
            _, (pp, pa, pb, pk) = dtw_kernel.dtw_values(buf, row_base, True, inv, oa, ob, lo, hi, la, lb)
            on = (buf[row_base[pa, pp] + pk] * inv[oa[pp] + pa]) * inv[ob[pp] + pb]
        else:
            sims = band_gather(buf, row_base, inv, oa, ob, lo, hi, int((hi - lo).max()) + 1)
            cost = np.float32(1.0) - np.minimum(sims, np.float32(1.0))  # +inf outside the band
            _, (pp, pa, pb, pk) = dtw.dtw_rows(cost, lo, hi, la, lb, masked=True)
            on = sims[pa, pp, pk]
    else:
        m = np.minimum(la, lb)
        pp = np.repeat(np.arange(ia.size), m)
        pa = pb = np.arange(pp.size) - np.repeat(np.cumsum(m) - m, m)
        on = pair_similarities(counts, inv, gidx[ia[pp], pa], gidx[ib[pp], pb])
    on = np.clip(on, 0.0, 1.0).astype(np.float64)
    on[on > 1.0 - 1e-6] = 1.0  # float32 round-off: identical chunks match exactly
    m_ab = np.zeros((ia.size, size))
    m_ba = np.zeros((ia.size, size))
    np.maximum.at(m_ab.reshape(-1), pp * size + pa, on)
    np.maximum.at(m_ba.reshape(-1), pp * size + pb, on)
    count = (np.bincount(ia, minlength=v) + np.bincount(ib, minlength=v)).astype(np.float64)[:, None]

    def mean_match() -> np.ndarray:
        msum = np.zeros((v, size))
        np.add.at(msum, ia, m_ab)
        np.add.at(msum, ib, m_ba)
        return np.clip(msum / count, 0.0, 1.0)

    if config.cluster:

        def keys() -> np.ndarray:
            return np.concatenate([chunk_hashes(token_ids[j], starts[j]) for j in valid])

        _credit_clusters(mean_match(), counts, keys, gidx, lens, ia, ib, m_ab, m_ba, config)
    d = (1.0 - mean_match()) ** config.gamma
    if has_lp:
        edges = np.asarray(config.surprise_bins)
        rows = np.concatenate([r * size + chunks[j] for r, j in enumerate(valid)])
        bins = np.searchsorted(edges, -np.concatenate([np.asarray(lps[j], dtype=np.float64) for j in valid]),
                               side="right")  # fmt: skip
        hist = np.bincount(rows * nb + bins, minlength=v * size * nb).reshape(v * size, nb).astype(np.float64)
        target = np.concatenate([ia[pp] * size + pa, ib[pp] * size + pb])
        source = np.concatenate([ib[pp] * size + pb, ia[pp] * size + pa])
        pooled = np.bincount(
            (target[:, None] * nb + np.arange(nb)).reshape(-1), weights=hist[source].reshape(-1),
            minlength=v * size * nb,
        ).reshape(v, size, nb)  # fmt: skip
        js = js_divergence(hist.reshape(v, size, nb), pooled)
        g = config.gate_floor + (1.0 - config.gate_floor) * np.minimum(1.0, js / config.js_ref)
    else:
        g = np.ones_like(d)
    w = config.eps_w + (1.0 - config.eps_w) * d * g
    m = mean_match()
    match = [np.ones(c) for c in n_ch]
    omega = [np.full(c, config.eps_w) for c in n_ch]
    for r, j in enumerate(valid):
        match[j] = m[r, : n_ch[j]]
        omega[j] = w[r, : n_ch[j]]
    return match, omega


def _credit_clusters(m, counts, keys, gidx, lens, ia, ib, m_ab, m_ba, config) -> None:
    """Raise s_{j→k}(c) to the best similarity with a chunk of k in c's average-linkage cluster.

    Only chunks the alignment left poorly matched (m < cluster_max_match) are clustered: shared
    scaffolding already matches, so this is where moved/reordered shared chunks are found."""
    v, size = m.shape
    cand = (m < config.cluster_max_match) & (np.arange(size)[None, :] < lens[:, None])
    n_cand = int(cand.sum())
    if n_cand < 2 or n_cand > config.cluster_max_chunks:
        return
    roll, ch = np.nonzero(cand)
    g = gidx[roll, ch]
    vec = normalise(counts[g])
    labels = average_linkage_labels(vec, config.cluster_cut, keys()[g])
    left, right = same_label_pairs(labels)
    pair_id = np.full((v, v), -1, dtype=np.int64)
    pair_id[ia, ib] = np.arange(ia.size)
    pair_id[ib, ia] = np.arange(ia.size)
    rl, rr = roll[left], roll[right]
    pid = pair_id[rl, rr]
    keep = (rl != rr) & (pid >= 0)
    left, right, rl, rr, pid = left[keep], right[keep], rl[keep], rr[keep], pid[keep]
    sim = np.clip(np.einsum("nd,nd->n", vec[left], vec[right]), 0.0, 1.0)
    a_side = rl < rr
    np.maximum.at(m_ab, (pid[a_side], ch[left][a_side]), sim[a_side])
    np.maximum.at(m_ba, (pid[~a_side], ch[left][~a_side]), sim[~a_side])
