"""Banded dynamic time warping over chunk sequences, batched over sibling pairs (numpy).

For a pair of sequences of lengths (La, Lb), cell (a, b) is inside the band iff
``|a·Lb − b·La| <= w·max(La, Lb)`` (Sakoe–Chiba, slope-normalised so unequal lengths still meet at
the corner; any w >= 1 leaves a path). The DTW cost of a path is the sum of its cell costs; steps are
(1, 0), (0, 1), (1, 1).

Only band cells are stored: row a of pair p holds columns ``lo[p, a] .. hi[p, a]`` at band offsets
0..K−1. Rows are filled for all pairs at once; inside a row the horizontal recurrence
D[b] = min(X[b], D[b−1] + c[b]) is a min-plus prefix scan, D = C + cummin(X − C) with C the running
cost sum, so a row is a handful of vector operations. One optimal path per pair is traced back from
stored predecessors (ties prefer the diagonal step, then the step in a, then the step in b).
"""

from __future__ import annotations

import numpy as np


def band_limits(
    len_a: np.ndarray, len_b: np.ndarray, size: int, halfwidth: np.ndarray | int
) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi), each (P, size): the band's first and last column per row (hi < lo for empty rows)."""
    la = np.asarray(len_a, dtype=np.int64)[:, None]
    lb = np.asarray(len_b, dtype=np.int64)[:, None]
    w = np.broadcast_to(np.asarray(halfwidth, dtype=np.int64), la.shape[:1])[:, None]
    a = np.arange(size)[None, :]
    reach = w * np.maximum(la, lb)
    lo = np.maximum(-((reach - a * lb) // la), 0)  # ceil((a·lb − reach)/la)
    hi = np.minimum((a * lb + reach) // la, lb - 1)
    hi = np.where(a < la, hi, -1)
    lo = np.where(a < la, lo, 0)
    return lo, hi


def band_mask(len_a: np.ndarray, len_b: np.ndarray, size: int, halfwidth: np.ndarray | int) -> np.ndarray:
    """(P, size, size) bool: cells inside each pair's valid region and band."""
    lo, hi = band_limits(len_a, len_b, size, halfwidth)
    b = np.arange(size)[None, None, :]
    return (b >= lo[:, :, None]) & (b <= hi[:, :, None])


def band_columns(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cols (P, S, K) clipped column index of each band cell, valid (P, S, K))."""
    k = max(int((hi - lo).max()) + 1, 1)
    cols = lo[:, :, None] + np.arange(k)[None, None, :]
    valid = cols <= hi[:, :, None]
    return np.where(valid, cols, 0), valid


def dtw_banded(
    cost: np.ndarray, lo: np.ndarray, hi: np.ndarray, len_a: np.ndarray, len_b: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """DTW on band-stored costs.

    Args:
        cost: (P, S, K) cost of band cell k of row a (column lo[p, a] + k); ignored outside the band.
        lo, hi: (P, S) band limits from :func:`band_limits`; len_a, len_b: (P,) lengths >= 1.

    Returns:
        dist (P,) and the optimal path's cells as flat arrays (pair, row, column, band offset).
    """
    p, size, k = cost.shape
    kk = np.arange(k)[None, :]
    width = hi - lo
    dmat = np.full((p, size, k), np.inf, dtype=cost.dtype)  # float32 costs run in float32
    pred = np.zeros((p, size, k), dtype=np.int8)
    inf_col = np.full((p, 1), np.inf, dtype=cost.dtype)
    base = (np.arange(p) * (k + 2))[:, None]
    shift = np.diff(lo, axis=1)  # >= 0: band rows only move right
    for a in range(size):
        valid = kk <= width[:, a, None]
        c = np.where(valid, cost[:, a, :], np.inf)
        if a == 0:
            up = np.full((p, k), np.inf)
            diag = np.where(lo[:, 0, None] + kk == 0, 0.0, np.inf).astype(cost.dtype)
        else:
            prev = np.concatenate([inf_col, dmat[:, a - 1, :], inf_col], axis=1).ravel()  # padded by inf
            idx = kk + shift[:, a - 1, None]  # column b in the previous row's band, +1 for the pad
            up = prev[base + np.clip(idx + 1, 0, k + 1)]
            diag = prev[base + np.clip(idx, 0, k + 1)]
        x = c + np.minimum(diag, up)
        run = np.cumsum(np.where(valid, c, 0), axis=1, dtype=cost.dtype)
        d = np.where(valid, run + np.minimum.accumulate(x - run, axis=1), np.inf)
        left = np.concatenate([inf_col, d[:, :-1]], axis=1) + c
        dmat[:, a, :] = np.where(valid, np.minimum(x, left), np.inf)
        pred[:, a, :] = np.where(left < x, 2, np.where(diag <= up, 0, 1))
    la = np.asarray(len_a, dtype=np.int64)
    lb = np.asarray(len_b, dtype=np.int64)
    rows = np.arange(p)
    dist = dmat[rows, la - 1, lb - 1 - lo[rows, la - 1]]
    # trace all pairs in lockstep; a finished pair stays at (0, 0) and its repeats are dropped
    a, b = la - 1, lb - 1
    steps = 2 * size - 1
    trace_a = np.empty((steps, p), dtype=np.int64)
    trace_b = np.empty((steps, p), dtype=np.int64)
    n_steps = 0
    for t in range(steps):
        trace_a[t], trace_b[t] = a, b
        n_steps = t + 1
        if t % 16 == 15 and not (a | b).any():
            break
        step = pred[rows, a, b - lo[rows, a]]
        done = (a == 0) & (b == 0)
        a = np.where(done, 0, a - (step != 2))
        b = np.where(done, 0, b - (step != 1))
    ta, tb = trace_a[:n_steps], trace_b[:n_steps]
    new = np.ones_like(ta, dtype=bool)
    new[1:] = (ta[1:] != ta[:-1]) | (tb[1:] != tb[:-1])
    new &= np.isfinite(dist)[None, :]
    tt, pp = np.nonzero(new)
    pa, pb = ta[tt, pp], tb[tt, pp]
    cells = (pp, pa, pb, pb - lo[pp, pa])
    return dist, cells  # type: ignore[return-value]


def dtw_batch(
    cost: np.ndarray, len_a: np.ndarray, len_b: np.ndarray, halfwidth: np.ndarray | int
) -> tuple[np.ndarray, np.ndarray]:
    """Banded DTW for P pairs given full (P, S, S) costs; returns (dist (P,), dense path (P, S, S) bool)."""
    p, size, _ = cost.shape
    la = np.asarray(len_a, dtype=np.int64)
    lb = np.asarray(len_b, dtype=np.int64)
    if p == 0:
        return np.zeros(0), np.zeros((0, size, size), dtype=bool)
    if la.min() < 1 or lb.min() < 1 or la.max() > size or lb.max() > size:
        raise ValueError("dtw_batch: every sequence length must be in [1, S]")
    lo, hi = band_limits(la, lb, size, halfwidth)
    cols, _ = band_columns(lo, hi)
    band_cost = np.take_along_axis(cost, cols, axis=2)
    dist, (pp, pa, pb, _) = dtw_banded(band_cost, lo, hi, la, lb)
    path = np.zeros((p, size, size), dtype=bool)
    path[pp, pa, pb] = True
    return dist, path


def positional_path(len_a: np.ndarray, len_b: np.ndarray, size: int) -> np.ndarray:
    """Ablation: chunk i aligned with chunk i only (no warping); (P, S, S) bool."""
    la = np.asarray(len_a)[:, None, None]
    lb = np.asarray(len_b)[:, None, None]
    i = np.arange(size)
    eye = (i[:, None] == i[None, :])[None]
    return eye & (i[None, :, None] < la) & (i[None, None, :] < lb)
