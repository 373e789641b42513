"""Chunk similarity: Dice overlap of exact token n-gram sets (DESIGN §5: "token n-gram overlap").

Each chunk is the set G of its distinct token 1-grams .. ``ngram``-grams that lie inside the chunk.
sim(a, b) = 2·|G_a ∩ G_b| / (|G_a| + |G_b|) ∈ [0, 1]; identical chunks score exactly 1, chunks with no
common token 0. The n-grams are exact (rows of token ids made unique with ``np.unique``), so unrelated
chunks never look alike through hash collisions, and a long divergent chunk is as dissimilar as a
short one (a hashed 64-bucket cosine scored unrelated chunks 0.15 at 4 tokens and 0.68 at 64).

|G_a ∩ G_b| is an integer (a sparse product of 0/1 incidence rows) and the ratio is rounded once to
float32, so every similarity, hence every DTW cost 1 − s, is a multiple of 2^-24: DTW sums are exact
in float64 and paths do not depend on evaluation order.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def chunk_ngrams(ids: np.ndarray, chunk: np.ndarray, n_chunks: int, ngram: int) -> sp.csr_matrix:
    """(n_chunks, D) 0/1 incidence of each chunk's distinct 1..ngram-grams (exact, no hashing).

    ``ids``/``chunk`` may hold several rollouts back to back with global chunk numbers: an n-gram is
    kept only when its first and last token are in the same chunk."""
    ids = np.asarray(ids, dtype=np.int64)
    rows, grams = [], []
    for k in range(1, ngram + 1):
        if ids.size < k:
            break
        m = ids.size - k + 1
        inside = chunk[:m] == chunk[k - 1 :]
        g = np.full((int(inside.sum()), ngram), -1, dtype=np.int64)
        for i in range(k):
            g[:, i] = ids[i : i + m][inside]
        rows.append(chunk[:m][inside])
        grams.append(g)
    if not rows:
        return sp.csr_matrix((n_chunks, 0), dtype=np.float32)
    row = np.concatenate(rows)
    _, col = np.unique(np.concatenate(grams), axis=0, return_inverse=True)
    col = col.reshape(-1)
    x = sp.csr_matrix((np.ones(row.size, dtype=np.float32), (row, col)), shape=(n_chunks, int(col.max()) + 1))
    x.sum_duplicates()
    x.data[:] = 1.0  # sets, not bags
    return x


def set_sizes(x: sp.csr_matrix) -> np.ndarray:
    """(N,) number of distinct n-grams per chunk (>= 1 for a non-empty chunk)."""
    return np.diff(x.indptr).astype(np.float64)


def dice(inter: np.ndarray, size_a: np.ndarray, size_b: np.ndarray) -> np.ndarray:
    """float32 2·|A∩B| / (|A| + |B|), rounded once from float64 (exact inputs, deterministic)."""
    den = np.maximum(size_a + size_b, 1.0)
    return np.minimum(2.0 * np.asarray(inter, dtype=np.float64) / den, 1.0).astype(np.float32)


def pair_similarities(x: sp.csr_matrix, sizes: np.ndarray, ga: np.ndarray, gb: np.ndarray) -> np.ndarray:
    """(M,) float32 sim(ga[i], gb[i]) for global chunk indices."""
    if ga.size == 0:
        return np.zeros(0, dtype=np.float32)
    inter = np.asarray(x[ga].multiply(x[gb]).sum(axis=1)).reshape(-1)
    return dice(inter, sizes[ga], sizes[gb])


def similarity_matrix(x: sp.csr_matrix, sizes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(R, R) float32 similarities among the chunks ``rows`` (for clustering)."""
    sub = x[rows]
    inter = (sub @ sub.T).toarray()
    return dice(inter, sizes[rows][:, None], sizes[rows][None, :])


def band_similarities(
    x: sp.csr_matrix,
    sizes: np.ndarray,
    offsets: np.ndarray,
    lens: np.ndarray,
    ia: np.ndarray,
    ib: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
) -> np.ndarray:
    """(S, P, K) float32 similarity of band cell k of row a of pair p (chunk a of rollout ia[p] vs
    chunk lo[p, a] + k of rollout ib[p]); −inf outside the band. One sparse product per first rollout."""
    p, size = lo.shape
    k = max(int((hi - lo).max()) + 1, 1)
    out = np.full((size, p, k), -np.inf, dtype=np.float32)
    kk = np.arange(k)
    for r in np.unique(ia):
        q = np.flatnonzero(ia == r)
        la = int(lens[r])
        block = x[offsets[r] : offsets[r] + la]
        inter = (block @ x.T).toarray()  # (la, N) exact intersection sizes
        cols = lo[q, :la][:, :, None] + kk  # (Q, la, K)
        valid = cols <= hi[q, :la][:, :, None]
        gb = np.where(valid, offsets[ib[q]][:, None, None] + cols, 0)
        a = np.broadcast_to(np.arange(la)[None, :, None], gb.shape)
        sim = dice(inter[a, gb], sizes[offsets[r] + a], sizes[gb])
        out[:la, q, :] = np.where(valid, sim, -np.inf).transpose(1, 0, 2)
    return out
