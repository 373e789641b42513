"""Chunk similarities for alignment: cosine of hashed uni+bigram count vectors, computed exactly.

sim(a, b) = fl32(fl32(⟨n_a, n_b⟩ · r_a) · r_b), with n the integer bag counts and r = fl32(1/‖n‖).
The dot product of integer counts below 2^24 is exact in float32 whatever the BLAS blocking, so a
cell's similarity does not depend on how the products were batched (no ties broken by round-off in
the DTW). Band cells are filled by per-pair row-block products over the columns the band can reach;
every product stays below OpenBLAS's multithreading threshold (thread hand-offs cost far more than
these small products on a loaded machine).
"""

from __future__ import annotations

import numpy as np

from training.rl.siras.features import hash_buckets

_MT_THRESHOLD = 2**19  # m·n·k below this: OpenBLAS runs the product on one thread


def chunk_counts(
    ids: np.ndarray, chunk: np.ndarray, starts: np.ndarray, n_chunks: int, dim: int
) -> np.ndarray:
    """(n_chunks, dim) hashed unigram + within-chunk bigram counts (float32; float64 if a dot product
    could reach 2^24). ``ids``/``chunk``/``starts`` may hold several rollouts back to back."""
    uni, big = hash_buckets(ids, chunk, starts, dim)
    counts = np.bincount(np.concatenate([uni, big]), minlength=n_chunks * dim).reshape(n_chunks, dim)
    longest = int(np.diff(np.append(np.flatnonzero(starts), len(starts))).max(initial=0))
    exact32 = (2 * longest) ** 2 < 2**24  # a dot product is at most ‖n‖² <= (2·length − 1)²
    return counts.astype(np.float32 if exact32 else np.float64)


def inverse_norms(counts: np.ndarray) -> np.ndarray:
    """(N,) float32 1/‖n‖ (chunks are never empty, so ‖n‖ >= 1)."""
    ssq = np.einsum("nd,nd->n", counts, counts, dtype=np.float64)
    return (1.0 / np.sqrt(np.maximum(ssq, 1.0))).astype(np.float32)


def pair_similarities(counts: np.ndarray, inv: np.ndarray, ga: np.ndarray, gb: np.ndarray) -> np.ndarray:
    """(M,) float32 sim(ga[i], gb[i]) for global chunk indices."""
    dot = np.einsum("nd,nd->n", counts[ga], counts[gb]).astype(np.float32)
    return (dot * inv[ga]) * inv[gb]


def band_gather(
    buf: np.ndarray,
    row_base: np.ndarray,
    inv: np.ndarray,
    off_a: np.ndarray,
    off_b: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    k: int,
) -> np.ndarray:
    """(S, P, K) float32 similarities of every pair's band cells (row a, column lo[p, a] + k) from the
    dot products of :func:`band_products`; −inf outside the band."""
    size = row_base.shape[0]
    valid = np.arange(k) <= (hi - lo).T[:, :, None]
    dot = buf.take(np.where(valid, row_base[:, :, None] + np.arange(k), buf.size - 1))
    ga = np.minimum(off_a[None, :] + np.arange(size)[:, None], inv.size - 1)
    gb = np.minimum(off_b[None, :, None] + lo.T[:, :, None] + np.arange(k), inv.size - 1)
    return (dot * inv[ga][:, :, None]) * inv[gb]


def band_products(
    counts: np.ndarray,
    off_a: np.ndarray,
    off_b: np.ndarray,
    len_a: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact count dot products of the band cells in row blocks: (buf, row_base (S, P)), the dot product
    of band cell k of row a of pair p at buf[row_base[a, p] + k]; buf[-1] = −inf. Chunk a of pair p is global
    chunk off_a[p] + a, its column b is off_b[p] + b."""
    p, size = lo.shape
    dim = counts.shape[1]
    la = np.asarray(len_a, dtype=np.int64)
    reach = int((hi - lo).max()) + 1
    slope = int(np.ceil(((hi.max(axis=1) + 1) / la).max()))
    rows = 64
    while rows > 8 and rows * (rows * slope + reach) * dim >= _MT_THRESHOLD:
        rows -= 8
    nblk = -(-size // rows)
    r0 = np.arange(nblk) * rows
    r1 = np.minimum(r0[None, :] + rows, la[:, None])  # (P, nblk)
    active = r0[None, :] < la[:, None]
    pidx = np.arange(p)[:, None]
    c0 = lo[pidx, np.minimum(r0[None, :], la[:, None] - 1)]
    c1 = hi[pidx, np.maximum(r1 - 1, 0)]
    width = np.where(active, c1 - c0 + 1, 0)
    n_rows = np.where(active, r1 - r0[None, :], 0)
    sizes = n_rows * width
    base = np.cumsum(sizes.ravel()).reshape(p, nblk) - sizes
    total = int(sizes.sum())
    buf = np.empty(total + 1, dtype=np.float32)
    buf[total] = -np.inf
    qs, bs = np.nonzero(active)
    for s0, a0, a1, b0, b1 in zip(
        base[qs, bs].tolist(), (off_a[qs] + r0[bs]).tolist(),
        (off_a[qs] + r1[qs, bs]).tolist(), (off_b[qs] + c0[qs, bs]).tolist(),
        (off_b[qs] + c1[qs, bs] + 1).tolist(), strict=True,
    ):  # fmt: skip
        out = buf[s0 : s0 + (a1 - a0) * (b1 - b0)].reshape(a1 - a0, b1 - b0)
        np.matmul(counts[a0:a1], counts[b0:b1].T, out=out, casting="same_kind")
    a = np.arange(size)
    blk = a // rows
    row_base = base[:, blk].T + (a - blk * rows)[:, None] * width[:, blk].T + (lo.T - c0[:, blk].T)  # (S, P)
    return buf, np.where(a[:, None] < la[None, :], row_base, 0)
