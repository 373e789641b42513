"""Banded dynamic time warping over chunk sequences, batched over sibling pairs (numpy wavefront).

For a pair of sequences of lengths (La, Lb), cell (a, b) is inside the band iff
``|a·Lb − b·La| <= w·max(La, Lb)`` (Sakoe–Chiba, slope-normalised so unequal lengths still meet at
the corner; any w >= 1 leaves a path). The DTW cost of a path is the sum of its cell costs; steps are
(1, 0), (0, 1), (1, 1). Anti-diagonals are filled for all pairs at once, visiting only cells inside some
pair's band; one optimal path per pair is traced back, also for all pairs at once (ties prefer the
diagonal step, then the step in a).
"""

from __future__ import annotations

import numpy as np


def band_mask(len_a: np.ndarray, len_b: np.ndarray, size: int, halfwidth: np.ndarray | int) -> np.ndarray:
    """(P, size, size) bool: cells inside each pair's valid region and band."""
    la = np.asarray(len_a, dtype=np.int64)[:, None]
    lb = np.asarray(len_b, dtype=np.int64)[:, None]
    w = np.broadcast_to(np.asarray(halfwidth, dtype=np.int64), la.shape[:1])[:, None]
    a = np.arange(size)[None, :]
    reach = w * np.maximum(la, lb)
    # row a allows b with |a·lb − b·la| <= reach, i.e. lo <= b <= hi (exact integer bounds)
    lo = np.maximum(-((reach - a * lb) // la), 0)  # ceil((a·lb − reach)/la)
    hi = np.minimum((a * lb + reach) // la, lb - 1)
    hi = np.where(a < la, hi, -1)
    b = np.arange(size, dtype=np.int32)[None, None, :]
    return (b >= lo[:, :, None].astype(np.int32)) & (b <= hi[:, :, None].astype(np.int32))


def _diagonals(allowed: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Flat indices of the allowed cells per anti-diagonal, in order: (cost cell, D cell, D up, D left,
    D diag), with D of side S+1 (row/column 0 is the inf border)."""
    size = allowed.shape[0]
    s1 = size + 1
    a, b = np.nonzero(allowed)
    d = a + b
    order = np.argsort(d, kind="stable")
    a, b, d = a[order], b[order], d[order]
    cuts = np.cumsum(np.bincount(d, minlength=2 * size - 1))[:-1]
    out = []
    for aa, bb in zip(np.split(a, cuts), np.split(b, cuts), strict=False):
        if aa.size:
            out.append(
                (aa * size + bb, (aa + 1) * s1 + bb + 1, aa * s1 + bb + 1, (aa + 1) * s1 + bb, aa * s1 + bb)
            )
    return out


def dtw_batch(
    cost: np.ndarray, len_a: np.ndarray, len_b: np.ndarray, halfwidth: np.ndarray | int
) -> tuple[np.ndarray, np.ndarray]:
    """Banded DTW for P pairs at once.

    Args:
        cost: (P, S, S) non-negative cell costs (values outside a pair's lengths are ignored).
        len_a, len_b: (P,) sequence lengths, each >= 1 and <= S.
        halfwidth: band half-width in cells (scalar or (P,)), >= 1.

    Returns:
        (dist (P,), path (P, S, S) bool): the minimal banded path cost and one optimal path.
    """
    p, size, _ = cost.shape
    la = np.asarray(len_a, dtype=np.int64)
    lb = np.asarray(len_b, dtype=np.int64)
    if p == 0:
        return np.zeros(0), np.zeros((0, size, size), dtype=bool)
    if la.min() < 1 or lb.min() < 1 or la.max() > size or lb.max() > size:
        raise ValueError("dtw_batch: every sequence length must be in [1, S]")
    band = band_mask(la, lb, size, halfwidth)
    c = np.where(band, cost, np.inf).reshape(p, size * size)
    s1 = size + 1
    dmat = np.full((p, s1 * s1), np.inf)
    dmat[:, 0] = 0.0
    for cc, cur, up, left, diag in _diagonals(band.any(axis=0)):
        best = np.minimum(np.minimum(dmat[:, up], dmat[:, left]), dmat[:, diag])
        dmat[:, cur] = c[:, cc] + best
    dist = dmat[np.arange(p), la * s1 + lb]
    path = np.zeros((p, size * size), dtype=bool)
    a, b = la - 1, lb - 1
    rows = np.arange(p)
    active = np.isfinite(dist)
    for _ in range(2 * size):
        if not active.any():
            break
        path[rows[active], (a * size + b)[active]] = True
        active &= (a > 0) | (b > 0)
        cand = np.stack([dmat[rows, a * s1 + b], dmat[rows, a * s1 + b + 1], dmat[rows, (a + 1) * s1 + b]], 1)
        step = np.argmin(cand, axis=1)
        a = np.where(active & (step != 2), a - 1, a)
        b = np.where(active & (step != 1), b - 1, b)
    return dist, path.reshape(p, size, size)


def positional_path(len_a: np.ndarray, len_b: np.ndarray, size: int) -> np.ndarray:
    """Ablation: chunk i aligned with chunk i only (no warping); (P, S, S) bool."""
    la = np.asarray(len_a)[:, None, None]
    lb = np.asarray(len_b)[:, None, None]
    i = np.arange(size)
    eye = (i[:, None] == i[None, :])[None]
    return eye & (i[None, :, None] < la) & (i[None, None, :] < lb)
