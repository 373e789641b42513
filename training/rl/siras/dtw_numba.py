"""The banded DTW kernel in numba (imported only when numba is installed, by ``dtw_kernel._kernel``).

Row by row per pair, cell by cell inside the band, in float64: the same recurrence, tie rule and path
as the numpy row scan of dtw.py. Every function is compiled (``cache=True``: on disk next to this
file) and calls only compiled functions.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_jit = njit(cache=True, nogil=True)


@_jit
def _cell_cost(values, i, similarity, inv, ga, gb):  # pragma: no cover - compiled
    """values[i], or with ``similarity`` the count dot product n of chunks ga and gb:
    s = fl32(fl32(n·inv[ga])·inv[gb]), cost fl32(1 − min(s, 1)); as float64."""
    if similarity:
        one = np.float32(1.0)
        sim = (np.float32(values[i]) * inv[ga]) * inv[gb]
        return np.float64(one - min(sim, one))
    return np.float64(values[i])


@_jit
def _fill_row(values, start, similarity, inv, ga, gb0, lo_a, w_a, lo_p, w_p, first, prev, cur, pred_row):  # pragma: no cover - compiled
    """One row of one pair: cur[k] = D of band cell k (column lo_a + k) from the previous row ``prev``
    (band lo_p .. lo_p + w_p; ``first``: the virtual row before row 0), pred_row[k] its step
    (0 diagonal, 1 in a, 2 in b; ties prefer the diagonal, then the step in a)."""
    inf = np.inf
    d_left = inf
    for kk in range(w_a + 1):
        b = lo_a + kk
        c = _cell_cost(values, start + kk, similarity, inv, ga, gb0 + b)
        if first:
            diag = 0.0 if b == 0 else inf
            up = inf
        else:
            kd = b - 1 - lo_p
            diag = prev[kd] if 0 <= kd <= w_p else inf
            ku = b - lo_p
            up = prev[ku] if 0 <= ku <= w_p else inf
        x = c + min(diag, up)
        left = d_left + c
        if left < x:
            pred_row[kk] = 2
            d = left
        else:
            pred_row[kk] = 0 if diag <= up else 1
            d = x
        cur[kk] = d
        d_left = d


@_jit
def _forward(values, row_base, similarity, inv, off_a, off_b, lo, width, len_a, len_b):  # pragma: no cover - compiled
    """(dist (P,), pred (S, P, K) step of every band cell): every pair's rows, two rows of D kept."""
    size, p = row_base.shape
    k = int(width.max() + 1) if width.size else 1
    prev = np.full(k, np.inf)
    cur = np.full(k, np.inf)
    pred = np.zeros((size, p, k), dtype=np.int8)
    dist = np.full(p, np.inf)
    for q in range(p):
        for a in range(len_a[q]):
            lo_p = lo[q, a - 1] if a > 0 else 0
            w_p = width[q, a - 1] if a > 0 else -1
            _fill_row(values, row_base[a, q], similarity, inv, off_a[q] + a, off_b[q], lo[q, a], width[q, a],
                      lo_p, w_p, a == 0, prev, cur, pred[a, q])  # fmt: skip
            prev, cur = cur, prev
        dist[q] = prev[len_b[q] - 1 - lo[q, len_a[q] - 1]]
    return dist, pred


@_jit
def _trace(pred, dist, lo, len_a, len_b):  # pragma: no cover - compiled
    """The optimal path of every pair with a finite distance, from its end cell back to (0, 0), as flat
    arrays (pair, row, column, band offset) in pair-major order."""
    p = dist.shape[0]
    n_cells = 0
    for q in range(p):
        if np.isfinite(dist[q]):
            n_cells += len_a[q] + len_b[q] - 1
    pp = np.empty(n_cells, dtype=np.int64)
    pa = np.empty(n_cells, dtype=np.int64)
    pb = np.empty(n_cells, dtype=np.int64)
    pk = np.empty(n_cells, dtype=np.int64)
    n = 0
    for q in range(p):
        if not np.isfinite(dist[q]):
            continue
        a = len_a[q] - 1
        b = len_b[q] - 1
        while True:
            pp[n] = q
            pa[n] = a
            pb[n] = b
            pk[n] = b - lo[q, a]
            n += 1
            if a == 0 and b == 0:
                break
            step = pred[a, q, b - lo[q, a]]
            if step != 2:
                a -= 1
            if step != 1:
                b -= 1
    return pp[:n], pa[:n], pb[:n], pk[:n]


@_jit
def dtw_cells(values, row_base, similarity, inv, off_a, off_b, lo, width, len_a, len_b):  # pragma: no cover - compiled
    """values[row_base[a, p] + k] is the cost of band cell k of row a of pair p, or with ``similarity``
    the count dot product of chunks off_a[p] + a and off_b[p] + b (see :func:`_cell_cost`); ``width`` is
    hi − lo. Returns (dist (P,), pair, row, column, band offset) of the optimal paths."""
    dist, pred = _forward(values, row_base, similarity, inv, off_a, off_b, lo, width, len_a, len_b)
    pp, pa, pb, pk = _trace(pred, dist, lo, len_a, len_b)
    return dist, pp, pa, pb, pk
