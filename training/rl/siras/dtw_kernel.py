"""Compiled banded DTW (numba), same recurrence, tie rule and output as the numpy row scan in dtw.py.

Optional: ``AVAILABLE`` is False when numba is not installed and dtw.py then uses its numpy path.
The kernel (``dtw_numba``) is imported and compiled on first use (about a second or two; cached on
disk next to it).
"""

from __future__ import annotations

import importlib.util

import numpy as np

AVAILABLE = importlib.util.find_spec("numba") is not None
_KERNEL = None


def _kernel():
    """The compiled kernel (numba imported and the functions compiled on first use)."""
    global _KERNEL
    if _KERNEL is None:
        from training.rl.siras.dtw_numba import dtw_cells

        _KERNEL = dtw_cells
    return _KERNEL


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
    """DTW reading band cell k of row a of pair p at values[row_base[a, p] + k] (see
    :func:`training.rl.siras.dtw_numba.dtw_cells`)."""
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
