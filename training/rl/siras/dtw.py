"""Banded dynamic time warping over chunk sequences, batched over sibling pairs (numpy).

For a pair of sequences of lengths (La, Lb), cell (a, b) is inside the band iff
``|a·Lb − b·La| <= w·max(La, Lb)`` (Sakoe–Chiba, slope-normalised so unequal lengths still meet at
the corner; any w >= 1 leaves a path). The DTW cost of a path is the sum of its cell costs; steps are
(1, 0), (0, 1), (1, 1).

Only band cells are stored: row a of pair p holds columns ``lo[p, a] .. hi[p, a]`` at band offsets
0..K−1 (layout (S, P, K): row-major over all pairs). With numba installed the DTW runs in the compiled
kernel of dtw_kernel.py (cell by cell); otherwise rows are filled for all pairs at once: inside a row
the horizontal recurrence D[b] = min(X[b], D[b−1] + c[b]) is a min-plus prefix scan,
D = C + cummin(X − C) with C the running cost sum (torch's cumsum/cummin: 3× numpy's accumulate).
Both run in float64; float32 costs in [0, 1] are multiples of 2^-24, so all sums are exact and both
give the same path. One optimal path per pair is traced back from stored predecessors (ties prefer
the diagonal step, then the step in a, then the step in b).
"""

from __future__ import annotations

import numpy as np
import torch

from training.rl.siras import dtw_kernel

COMPILED = dtw_kernel.AVAILABLE  # numba kernel when installed; tests switch it off to check the numpy path


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


_HUGE = float(2**40)  # run-sum step of out-of-band cells: their D is >= 2^40 − K, never a minimum


def dtw_rows(
    cost: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    len_a: np.ndarray,
    len_b: np.ndarray,
    masked: bool = False,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """DTW on band-stored costs laid out row-major over all pairs.

    Args:
        cost: (S, P, K) cost of band cell k of row a of pair p (column lo[p, a] + k); ignored outside
            the band. Runs in float64: float32 costs in [0, 1] are multiples of 2^-24, so every
            sum is exact and the optimal path does not depend on the evaluation order.
        lo, hi: (P, S) band limits from :func:`band_limits`; len_a, len_b: (P,) lengths >= 1.
        masked: the caller already set every cell outside the band to +inf.

    Returns:
        dist (P,) and the optimal path's cells as flat arrays (pair, row, column, band offset).
    """
    if COMPILED:
        return dtw_kernel.dtw_compiled(cost, lo, hi, len_a, len_b)
    _, p, k = cost.shape
    la = np.asarray(len_a, dtype=np.int64)
    lb = np.asarray(len_b, dtype=np.int64)
    if masked:
        c = cost.astype(np.float64)
    else:
        in_band = np.arange(k)[None, None, :] <= (hi - lo).T[:, :, None]
        c = np.where(in_band, cost, np.inf).astype(np.float64, copy=False)
    end_k = lb - 1 - lo[np.arange(p), la - 1]
    dist, off = _RowScan(c, lo).run(la, end_k)
    return dist, _traceback(off, dist, lo, la, lb, end_k)


class _RowScan:
    """The forward pass of the numpy path: D row by row for all pairs at once, two rows kept.

    Row a of pair p sits in ``prev``/``cur`` at offsets shifted so that the previous row's cells
    (b − 1, b) are gathered as one window; ``off[a, p, k]`` is the flat offset of cell k's predecessor
    (up = this, diag = this − 1, left = −1), which the traceback follows.
    """

    def __init__(self, c: np.ndarray, lo: np.ndarray) -> None:
        size, p, k = c.shape
        self.c, self.size, self.p, self.k = c, size, p, k
        self.c0_t = torch.from_numpy(np.minimum(c, _HUGE))
        shift = np.zeros((size, p), dtype=np.int64)
        shift[1:] = np.maximum(np.diff(lo, axis=1).T, 0)  # band rows only move right (0 past a pair's end)
        kp = k + 1 + int(shift.max(initial=0)) + 1
        self.gather_base = (np.arange(p) * kp)[None, :, None] + shift[:, :, None]  # (S, P, 1)
        self.jj = np.arange(k + 1)[None, :]
        self.off_base = (shift - p * k).astype(np.int32)[:, :, None]
        self.prev = np.full((p, kp), np.inf)
        self.prev[:, 0] = 0.0  # virtual row −1: the diagonal predecessor of cell (0, 0)
        self.cur = np.full((p, kp), np.inf)
        self.off = np.empty((size, p, k), dtype=np.int32)
        # scratch, reused by every row
        self.ib = np.empty((p, k + 1), dtype=np.int64)
        self.w = np.empty((p, k + 1))
        self.m, self.x, self.t = np.empty((p, k)), np.empty((p, k)), np.empty((p, k))
        self.left = np.full((p, k), np.inf)
        self.run_t, self.tmin_t = torch.empty((p, k), dtype=torch.float64), torch.empty((p, k), dtype=torch.float64)
        self.t_t, self.run_np, self.tmin_np = torch.from_numpy(self.t), self.run_t.numpy(), self.tmin_t.numpy()
        self.tidx = torch.empty((p, k), dtype=torch.long)
        self.lt, self.dle = np.empty((p, k), dtype=bool), np.empty((p, k), dtype=bool)

    def run(self, la: np.ndarray, end_k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(dist (P,), off (S, P, K)): each pair's D at its end cell (inf when unreachable)."""
        dist = np.full(self.p, np.inf)
        ends = {int(a): np.flatnonzero(la - 1 == a) for a in np.unique(la - 1)}
        for a in range(self.size):
            d = self._row(a)
            if a in ends:
                q = ends[a]
                dist[q] = d[q, end_k[q]]
            self.prev, self.cur = self.cur, self.prev
            if a == 0:
                self.cur[:, 0] = np.inf
        dist[dist >= _HUGE / 2] = np.inf
        self.off[0, :, 0] = 0  # the start cells are fixed points of the traceback
        return dist, self.off

    def _row(self, a: int) -> np.ndarray:
        """Fill row a of every pair into ``cur`` (returned as its (P, K) band view) and ``off[a]``."""
        c, t, x, left, run_np = self.c, self.t, self.x, self.left, self.run_np
        np.add(self.gather_base[a], self.jj, out=self.ib)
        np.take(self.prev.reshape(-1), self.ib, out=self.w)
        diag, up = self.w[:, :-1], self.w[:, 1:]
        np.less_equal(diag, up, out=self.dle)
        np.minimum(diag, up, out=self.m)
        np.add(c[a], self.m, out=x)
        # horizontal steps: D[b] = min(x[b], D[b−1] + c[b]) = run[b] + cummin(x − run)[b]
        torch.cumsum(self.c0_t[a], 1, out=self.run_t)
        np.subtract(x, run_np, out=t)
        torch.cummin(self.t_t, 1, out=(self.tmin_t, self.tidx))
        np.add(self.tmin_np, run_np, out=t)
        np.add(t[:, :-1], c[a][:, 1:], out=left[:, 1:])  # D[b−1] + c[b]: the step in b
        np.less(left, x, out=self.lt)
        d = self.cur[:, 1 : self.k + 1]
        np.minimum(x, left, out=d)
        np.subtract(self.off_base[a], self.dle.view(np.int8), out=self.off[a])
        np.putmask(self.off[a], self.lt, -1)
        return d


def _traceback(
    off: np.ndarray, dist: np.ndarray, lo: np.ndarray, la: np.ndarray, lb: np.ndarray, end_k: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The optimal path's cells (pair, row, column, band offset) of every pair with a finite distance,
    following ``off`` from each end cell, all pairs in lockstep."""
    _, p, k = off.shape
    finite = np.isfinite(dist)
    pk = p * k
    pos = np.where(finite, ((la - 1) * p + np.arange(p)) * k + end_k, np.arange(p) * k)
    steps = int((la + lb).max()) - 1
    trace = np.empty((steps, p), dtype=np.int64)
    flat_off = off.reshape(-1)
    for s in range(steps):  # a finished pair stays on its start cell
        trace[s] = pos
        pos = pos + flat_off.take(pos)
    new = np.ones_like(trace, dtype=bool)
    new[1:] = trace[1:] != trace[:-1]
    new &= finite[None, :]
    tt, pp = np.nonzero(new)
    f = trace[tt, pp]
    pa, pk_ = f // pk, f % k
    return pp, pa, lo[pp, pa] + pk_, pk_


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
    band_cost = np.take_along_axis(cost, cols, axis=2).transpose(1, 0, 2)
    dist, (pp, pa, pb, _) = dtw_rows(np.ascontiguousarray(band_cost), lo, hi, la, lb)
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
