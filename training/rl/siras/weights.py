"""Chunk weights and token multipliers for one sibling group.

m_c  = mean over all siblings k ≠ j of max(s_{j→k}(c), κ_{j→k}(c))   (leave-one-out match)
       s_{j→k}(c): best similarity of c to the chunks of k aligned with it (banded DTW path);
       κ_{j→k}(c): best similarity of c to the chunks of k in its average-linkage cluster (0 if none),
       so shared scaffolding that moved position still counts as shared.
d_c  = (1 − m_c)^γ
g_c  = floor + (1 − floor)·min(1, JS(surprise profile of c ‖ pooled profile of its aligned chunks)/js_ref)
ω_c  = ε_w + (1 − ε_w)·d_c·g_c
u_t  = ω_chunk(t) / ω̄_j  →  clip to [u_min, u_max]  →  u_t + (1 − mean u)   (token mean exactly 1)

Order-free: every pair of non-empty siblings is compared (no partner subset), and the group is
processed in a canonical order (rollouts sorted by content: tokens, log-probs, breaks), so DTW tie
breaks, pair orientation and summation order do not depend on how the siblings were listed —
permuting the input permutes the output, bit for bit. Empty rollouts take no part.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from training.rl.siras import dtw
from training.rl.siras.chunking import StructureMarkers, chunk_index, chunk_starts, surprise
from training.rl.siras.config import SirasConfig
from training.rl.siras.dtw import band_limits
from training.rl.siras.features import average_linkage_labels, chunk_hashes, js_divergence, same_label_pairs
from training.rl.siras.similarity import (
    band_similarities,
    chunk_ngrams,
    pair_similarities,
    set_sizes,
    similarity_matrix,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GroupWeights:
    """Per rollout: chunk starts (T,), chunk weights ω (C,), match m (C,) and mean-1 multipliers (T,);
    ``cluster_skipped``: clustering was skipped for this group (more candidates than the cap)."""

    starts: list[np.ndarray]
    omega: list[np.ndarray]
    match: list[np.ndarray]
    multipliers: list[np.ndarray]
    cluster_skipped: bool = False


def mean_match(u: np.ndarray, config: SirasConfig) -> np.ndarray:
    """Clip multipliers to [u_min, u_max], then shift them additively so their mean is exactly 1."""
    if u.size == 0:
        return u
    c = np.clip(u, config.u_min, config.u_max)
    return c + (1.0 - c.mean())


def canonical_order(token_ids: list[np.ndarray], logprobs: list, breaks: list) -> np.ndarray:
    """Rollout indices sorted by content (token ids, then log-probs, then break positions)."""

    def key(j: int) -> tuple:
        lp = logprobs[j]
        lp_key = (
            () if lp is None else tuple(np.nan_to_num(lp, nan=1e300, posinf=1e301, neginf=-1e301).tolist())
        )
        brk = breaks[j]
        return (
            tuple(np.asarray(token_ids[j]).tolist()),
            lp_key,
            () if brk is None else tuple(np.flatnonzero(brk).tolist()),
        )

    return np.array(sorted(range(len(token_ids)), key=key), dtype=np.int64)


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
    order = canonical_order(token_ids, lps, brk)
    gw = _sorted_group_weights(
        [token_ids[j] for j in order], [lps[j] for j in order], config, markers, [brk[j] for j in order]
    )
    back = np.argsort(order)

    def unsort(xs: list[np.ndarray]) -> list[np.ndarray]:
        return [xs[int(back[j])] for j in range(n)]

    return GroupWeights(
        unsort(gw.starts), unsort(gw.omega), unsort(gw.match), unsort(gw.multipliers), gw.cluster_skipped
    )


def _sorted_group_weights(token_ids, lps, config, markers, brk) -> GroupWeights:
    n = len(token_ids)
    starts = [chunk_starts(token_ids[j], lps[j], config, markers, brk[j]) for j in range(n)]
    chunks = [chunk_index(s) for s in starts]
    n_ch = np.array([int(s.sum()) for s in starts], dtype=np.int64)
    valid = np.flatnonzero(n_ch > 0)
    match = [np.ones(c, dtype=np.float64) for c in n_ch]
    omega = [np.full(c, config.eps_w) for c in n_ch]
    skipped = False
    if valid.size >= 2:
        match, omega, skipped = _weights(token_ids, lps, starts, chunks, n_ch, valid, config)
    mult = [
        mean_match(omega[j][chunks[j]] / omega[j][chunks[j]].mean(), config) if n_ch[j] else np.zeros(0)
        for j in range(n)
    ]
    return GroupWeights(starts=starts, omega=omega, match=match, multipliers=mult, cluster_skipped=skipped)


def _aligned_cells(x, sizes, offsets, lens, gidx, ia, ib, size, config):
    """Similarity of every aligned cell: (pair, row, column, similarity) flat arrays."""
    la, lb = lens[ia], lens[ib]
    if config.alignment == "dtw":
        halfwidth = np.maximum(config.min_band, np.ceil(config.band * np.maximum(la, lb))).astype(np.int64)
        lo, hi = band_limits(la, lb, size, halfwidth)
        sims = band_similarities(x, sizes, offsets, lens, ia, ib, lo, hi)
        cost = np.float32(1.0) - sims  # +inf outside the band
        _, (pp, pa, pb, pk) = dtw.dtw_rows(cost, lo, hi, la, lb, masked=True)
        on = sims[pa, pp, pk]
    else:
        m = np.minimum(la, lb)
        pp = np.repeat(np.arange(ia.size), m)
        pa = pb = np.arange(pp.size) - np.repeat(np.cumsum(m) - m, m)
        on = pair_similarities(x, sizes, gidx[ia[pp], pa], gidx[ib[pp], pb])
    return pp, pa, pb, np.clip(on, 0.0, 1.0).astype(np.float64)


def _weights(token_ids, lps, starts, chunks, n_ch, valid, config):
    size = int(n_ch.max())
    nb = len(config.surprise_bins) + 1
    v = len(valid)
    lens = n_ch[valid]
    offsets = np.concatenate([[0], np.cumsum(lens)[:-1]])
    gchunk = np.concatenate([chunks[j] + o for j, o in zip(valid, offsets, strict=True)])
    x = chunk_ngrams(np.concatenate([token_ids[j] for j in valid]), gchunk, int(lens.sum()), config.ngram)
    sizes = set_sizes(x)
    ar = np.arange(size)[None, :]
    gidx = np.where(ar < lens[:, None], offsets[:, None] + ar, 0)  # (v, S) global chunk index (0 = pad)
    has_lp = config.gate and all(lps[j] is not None for j in valid)
    ia, ib = np.triu_indices(v, k=1)  # every pair: the leave-one-out mean is over all siblings
    pp, pa, pb, on = _aligned_cells(x, sizes, offsets, lens, gidx, ia, ib, size, config)
    m_ab = np.zeros((ia.size, size))
    m_ba = np.zeros((ia.size, size))
    np.maximum.at(m_ab.reshape(-1), pp * size + pa, on)
    np.maximum.at(m_ba.reshape(-1), pp * size + pb, on)

    def mean_match() -> np.ndarray:
        msum = np.zeros((v, size))
        np.add.at(msum, ia, m_ab)
        np.add.at(msum, ib, m_ba)
        return np.clip(msum / (v - 1), 0.0, 1.0)

    skipped = False
    if config.cluster:

        def keys() -> np.ndarray:
            return np.concatenate([chunk_hashes(token_ids[j], starts[j]) for j in valid])

        skipped = _credit_clusters(mean_match(), x, sizes, keys, gidx, lens, ia, ib, m_ab, m_ba, config)
    d = (1.0 - mean_match()) ** config.gamma
    if has_lp:
        edges = np.asarray(config.surprise_bins)
        rows = np.concatenate([r * size + chunks[j] for r, j in enumerate(valid)])
        s_all = np.concatenate([surprise(lps[j]) for j in valid])
        known = (~np.isnan(s_all)).astype(np.float64)  # unknown surprise (NaN log-prob): not counted
        bins = np.searchsorted(edges, np.nan_to_num(s_all, nan=0.0), side="right")
        hist = np.bincount(rows * nb + bins, weights=known, minlength=v * size * nb).reshape(v * size, nb)
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
    return match, omega, skipped


def _credit_clusters(m, x, sizes, keys, gidx, lens, ia, ib, m_ab, m_ba, config) -> bool:
    """Raise s_{j→k}(c) to the best similarity with a chunk of k in c's average-linkage cluster.

    Only chunks the alignment left poorly matched (m < cluster_max_match) are clustered: shared
    scaffolding already matches, so this is where moved/reordered shared chunks are found. Returns True
    when the group had more candidates than ``cluster_max_chunks`` and clustering was skipped (logged)."""
    v, size = m.shape
    cand = (m < config.cluster_max_match) & (np.arange(size)[None, :] < lens[:, None])
    n_cand = int(cand.sum())
    if n_cand > config.cluster_max_chunks:
        log.warning(
            "SIRAS: clustering skipped for a group with %d candidate chunks (cluster_max_chunks=%d)",
            n_cand, config.cluster_max_chunks,
        )  # fmt: skip
        return True
    if n_cand < 2:
        return False
    roll, ch = np.nonzero(cand)
    g = gidx[roll, ch]
    simmat = similarity_matrix(x, sizes, g)
    labels = average_linkage_labels(simmat, config.cluster_cut, keys()[g])
    left, right = same_label_pairs(labels)
    pair_id = np.full((v, v), -1, dtype=np.int64)
    pair_id[ia, ib] = np.arange(ia.size)
    pair_id[ib, ia] = np.arange(ia.size)
    rl, rr = roll[left], roll[right]
    pid = pair_id[rl, rr]
    keep = (rl != rr) & (pid >= 0)
    left, right, rl, rr, pid = left[keep], right[keep], rl[keep], rr[keep], pid[keep]
    sim = simmat[left, right].astype(np.float64)
    a_side = rl < rr
    np.maximum.at(m_ab, (pid[a_side], ch[left][a_side]), sim[a_side])
    np.maximum.at(m_ba, (pid[~a_side], ch[left][~a_side]), sim[~a_side])
    return False
