"""Compiled banded DTW (numba), same recurrence, tie rule and output as the numpy row scan in dtw.py.

Optional: ``AVAILABLE`` is False when numba is not installed and dtw.py then uses its numpy path.
The kernel is compiled on first use (about a second or two; cached on disk next to this file).
"""

from __future__ import annotations

import importlib.util

import numpy as np

AVAILABLE = importlib.util.find_spec("numba") is not None
_KERNEL = None


def _kernel():
    """The compiled kernel (numba imported and the function compiled on first use)."""
    global _KERNEL
    if _KERNEL is None:
        from numba import njit

        _KERNEL = njit(cache=True, nogil=True)(_dtw)
    return _KERNEL


def _dtw(
    values, row_base, similarity, inv, off_a, off_b, lo, width, len_a, len_b
):  # pragma: no cover - compiled
    """values[row_base[a, p] + k] is the cost of band cell k of row a of pair p, or with ``similarity``
    the count dot product n of chunks ga = off_a[p] + a and gb = off_b[p] + b: similarity
    s = fl32(fl32(n·inv[ga])·inv[gb]), cost fl32(1 − min(s, 1))."""
    size, p = row_base.shape
    k = int(width.max() + 1) if width.size else 1
    one = np.float32(1.0)
    inf = np.inf
    prev = np.full(k, inf)
    cur = np.full(k, inf)
    pred = np.zeros((size, p, k), dtype=np.int8)
    dist = np.full(p, inf)
    n_cells = 0
    for q in range(p):
        for a in range(len_a[q]):
            lo_a = lo[q, a]
            w_a = width[q, a]
            lo_p = lo[q, a - 1] if a > 0 else 0
            w_p = width[q, a - 1] if a > 0 else -1
            d_left = inf
            for kk in range(w_a + 1):
                b = lo_a + kk
                v = values[row_base[a, q] + kk]
                if similarity:
                    sim = (np.float32(v) * inv[off_a[q] + a]) * inv[off_b[q] + b]
                    c = np.float64(one - min(sim, one))
                else:
                    c = np.float64(v)
                if a == 0:
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
                    pred[a, q, kk] = 2
                    d = left
                else:
                    pred[a, q, kk] = 0 if diag <= up else 1
                    d = x
                cur[kk] = d
                d_left = d
            prev, cur = cur, prev
        dist[q] = prev[len_b[q] - 1 - lo[q, len_a[q] - 1]]
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
    return dist, pp[:n], pa[:n], pb[:n], pk[:n]


def dtw_compiled(
    cost: np.ndarray, lo: np.ndarray, hi: np.ndarray, len_a: np.ndarray, len_b: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Same contract as :func:`training.rl.siras.dtw.dtw_rows` (cells in pair-major order)."""
    size, p, k = cost.shape
    if cost.dtype not in (np.float32, np.float64):
        cost = cost.astype(np.float64)
    row_base = (np.arange(size)[:, None] * p + np.arange(p)[None, :]) * k
    none = np.zeros(1, dtype=np.float32), np.zeros(p, dtype=np.int64)
    return dtw_values(
        np.ascontiguousarray(cost).reshape(-1),
        row_base,
        None,
        none[0],
        none[1],
        none[1],
        lo,
        hi,
        len_a,
        len_b,
    )


def dtw_values(
    values: np.ndarray,
    row_base: np.ndarray,
    similarity: bool | None,
    inv: np.ndarray,
    off_a: np.ndarray,
    off_b: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    len_a: np.ndarray,
    len_b: np.ndarray,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """DTW reading band cell k of row a of pair p at values[row_base[a, p] + k] (see :func:`_dtw`)."""
    dist, pp, pa, pb, pk = _kernel()(
        values,
        np.ascontiguousarray(row_base, dtype=np.int64),
        bool(similarity),
        inv,
        np.asarray(off_a, dtype=np.int64),
        np.asarray(off_b, dtype=np.int64),
        np.ascontiguousarray(lo, dtype=np.int64),
        np.ascontiguousarray(hi - lo, dtype=np.int64),
        np.asarray(len_a, dtype=np.int64),
        np.asarray(len_b, dtype=np.int64),
    )
    return dist, (pp, pa, pb, pk)
