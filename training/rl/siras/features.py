"""Chunk features: content hashes, Jensen–Shannon divergence of surprise profiles, and average-linkage
clustering of chunks (similarities: :mod:`training.rl.siras.similarity`)."""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

_MUL = np.uint64(0x9E3779B97F4A7C15)
_R = np.uint64(0xBF58476D1CE4E5B9)


def chunk_hashes(token_ids: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(n_chunks,) uint64 content hash of each chunk's exact token sequence (polynomial, wrap-around)."""
    ids = np.asarray(token_ids, dtype=np.int64)
    if ids.size == 0:
        return np.zeros(0, dtype=np.uint64)
    first = np.flatnonzero(starts)
    pos = np.arange(ids.size) - np.repeat(first, np.diff(np.append(first, ids.size)))
    with np.errstate(over="ignore"):
        powers = np.cumprod(np.full(int(pos.max()) + 1, _R, dtype=np.uint64))
        vals = (ids.astype(np.uint64) + np.uint64(1)) * powers[pos]
        return np.add.reduceat(vals, first) ^ (np.diff(np.append(first, ids.size)).astype(np.uint64) * _MUL)


def js_divergence(p_counts: np.ndarray, q_counts: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Row-wise Jensen–Shannon divergence in bits (in [0, 1]) of two count histograms, add-α smoothed.

    A row where either side has no counts gets 1 (nothing to compare with: maximally divergent).
    """
    p = p_counts + alpha
    q = q_counts + alpha
    p = p / p.sum(-1, keepdims=True)
    q = q / q.sum(-1, keepdims=True)
    m = 0.5 * (p + q)
    js = 0.5 * (p * np.log2(p / m)).sum(-1) + 0.5 * (q * np.log2(q / m)).sum(-1)
    empty = (p_counts.sum(-1) == 0) | (q_counts.sum(-1) == 0)
    return np.where(empty, 1.0, np.clip(js, 0.0, 1.0))


def average_linkage_labels(sim: np.ndarray, cut: float, keys: np.ndarray) -> np.ndarray:
    """Cluster chunks by average linkage on distance 1 − similarity, cut at ``cut``; (N,) labels.

    ``sim`` is the (N, N) similarity matrix. Chunks with equal ``keys`` (content hashes) are clustered
    once — duplicates sit at distance 0 and merge first, so this gives the same clusters at any
    cut > 0 — and the unique chunks enter the linkage in key order, so the labels do not depend on
    the order of the rollouts.
    """
    n = sim.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if first.size == 1:
        return np.zeros(n, dtype=np.int64)
    dist = np.clip(1.0 - sim[np.ix_(first, first)].astype(np.float64), 0.0, 1.0)
    iu = np.triu_indices(first.size, k=1)
    labels = fcluster(linkage(dist[iu], method="average"), t=cut, criterion="distance")
    return labels[inverse.reshape(-1)].astype(np.int64)


def same_label_pairs(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All ordered pairs (i, j), i != j, of items sharing a label (vectorised, no Python loop)."""
    order = np.argsort(labels, kind="stable")
    lab = labels[order]
    _, gstart, gsize = np.unique(lab, return_index=True, return_counts=True)
    size_of = np.repeat(gsize, gsize)
    start_of = np.repeat(gstart, gsize)
    left = np.repeat(np.arange(lab.size), size_of)
    block = np.repeat(np.cumsum(size_of) - size_of, size_of)
    right = np.repeat(start_of, size_of) + (np.arange(left.size) - block)
    keep = left != right
    return order[left[keep]], order[right[keep]]
