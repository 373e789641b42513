"""The vectorised SIRAS weights equal a small loop-per-pair reference implementation on random groups.

The reference aligns every sibling pair on its own with a plain banded DTW (cell by cell, float64, ties:
diagonal, then the step in a, then the step in b) over a dense similarity matrix, and accumulates
matches, cluster credit and pooled surprise profiles cell by cell. Similarities are computed
independently from Python sets of token n-grams (Dice overlap, rounded once to float32 as the
library does), so both sides see the same bits and the DTW paths must be identical. The group is
processed in the library's canonical (content-sorted) order.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from training.rl.siras import (
    SirasConfig,
    StructureMarkers,
    chunk_index,
    chunk_starts,
    dtw,
    dtw_kernel,
    group_weights,
    mean_match,
)
from training.rl.siras.features import average_linkage_labels, chunk_hashes, js_divergence, same_label_pairs
from training.rl.siras.weights import canonical_order


def _gram_sets(ids: np.ndarray, starts: np.ndarray, ngram: int) -> list[set]:
    chunk = chunk_index(starts)
    sets: list[set] = [set() for _ in range(int(starts.sum()))]
    for k in range(1, ngram + 1):
        for i in range(ids.size - k + 1):
            if chunk[i] == chunk[i + k - 1]:
                sets[chunk[i]].add(tuple(ids[i : i + k].tolist()))
    return sets


def _dice(a: set, b: set) -> np.float32:
    return np.float32(min(1.0, 2.0 * len(a & b) / max(len(a) + len(b), 1)))


def _dtw_path(cost: np.ndarray, w: int) -> list[tuple[int, int]]:
    la, lb = cost.shape
    d = np.full((la + 1, lb + 1), np.inf)
    d[0, 0] = 0.0
    pred = np.zeros((la, lb), dtype=np.int64)
    for a in range(la):
        for b in range(lb):
            if abs(a * lb - b * la) > w * max(la, lb):
                continue
            diag, up, left = d[a, b], d[a, b + 1], d[a + 1, b]
            if left < min(diag, up):
                pred[a, b], best = 2, left
            elif diag <= up:
                pred[a, b], best = 0, diag
            else:
                pred[a, b], best = 1, up
            d[a + 1, b + 1] = float(cost[a, b]) + best
    a, b, path = la - 1, lb - 1, []
    while True:
        path.append((a, b))
        if a == 0 and b == 0:
            return path
        step = pred[a, b]
        a, b = a - (step != 2), b - (step != 1)


def reference_weights(token_ids, logprobs, config: SirasConfig, markers: StructureMarkers):
    n = len(token_ids)
    order = canonical_order(token_ids, logprobs, [None] * n)
    token_ids = [token_ids[j] for j in order]
    logprobs = [logprobs[j] for j in order]
    m, omega, mult = _reference_sorted(token_ids, logprobs, config, markers)
    back = np.argsort(order)
    return [m[b] for b in back], [omega[b] for b in back], [mult[b] for b in back]


def _reference_sorted(token_ids, logprobs, config: SirasConfig, markers: StructureMarkers):
    n = len(token_ids)
    starts = [chunk_starts(token_ids[j], logprobs[j], config, markers) for j in range(n)]
    chunks = [chunk_index(s) for s in starts]
    grams = [_gram_sets(token_ids[j], starts[j], config.ngram) for j in range(n)]
    n_ch = [len(g) for g in grams]
    pairs = list(zip(*np.triu_indices(n, k=1), strict=True))
    m_ab, m_ba, paths = _aligned_matches(grams, pairs, config)
    if config.cluster:
        m = _mean_matches(pairs, m_ab, m_ba, n_ch)
        _add_cluster_matches(token_ids, starts, grams, m, pairs, m_ab, m_ba, config)
    m = _mean_matches(pairs, m_ab, m_ba, n_ch)
    omega, mult = [], []
    for j in range(n):
        g = _gate(j, logprobs, chunks, n_ch, pairs, paths, config) if config.gate else np.ones(n_ch[j])
        w = config.eps_w + (1.0 - config.eps_w) * (1.0 - m[j]) ** config.gamma * g
        omega.append(w)
        mult.append(mean_match(w[chunks[j]] / w[chunks[j]].mean(), config))
    return m, omega, mult


def _aligned_matches(grams, pairs, config: SirasConfig):
    """Per pair (a, b): each chunk's best similarity along the alignment path, both ways, and the path."""
    m_ab = [np.zeros(len(grams[a])) for a, _ in pairs]
    m_ba = [np.zeros(len(grams[b])) for _, b in pairs]
    paths = []
    for q, (a, b) in enumerate(pairs):
        sim = np.array([[_dice(x, y) for y in grams[b]] for x in grams[a]], dtype=np.float32)
        la, lb = len(grams[a]), len(grams[b])
        if config.alignment == "dtw":
            hw = max(config.min_band, int(np.ceil(config.band * max(la, lb))))
            path = _dtw_path(np.float32(1.0) - sim, hw)
        else:
            path = [(i, i) for i in range(min(la, lb))]
        paths.append(path)
        for x, y in path:
            s = float(sim[x, y])
            m_ab[q][x] = max(m_ab[q][x], s)
            m_ba[q][y] = max(m_ba[q][y], s)
    return m_ab, m_ba, paths


def _mean_matches(pairs, m_ab, m_ba, n_ch):
    """Each sequence's per-chunk match, averaged over its pairs and clipped to [0, 1]."""
    tot = [np.zeros(c) for c in n_ch]
    cnt = np.zeros(len(n_ch))
    for q, (a, b) in enumerate(pairs):
        tot[a] += m_ab[q]
        tot[b] += m_ba[q]
        cnt[a] += 1
        cnt[b] += 1
    return [np.clip(t / c, 0.0, 1.0) for t, c in zip(tot, cnt, strict=True)]


def _add_cluster_matches(token_ids, starts, grams, m, pairs, m_ab, m_ba, config: SirasConfig) -> None:
    """Raise the matches of poorly matched chunks that cluster together (in place)."""
    n_ch = [len(g) for g in grams]
    cand = [(j, c) for j in range(len(grams)) for c in range(n_ch[j]) if m[j][c] < config.cluster_max_match]
    if not 2 <= len(cand) <= config.cluster_max_chunks:
        return
    simmat = np.array([[_dice(grams[j][c], grams[k][d]) for k, d in cand] for j, c in cand])
    keys = np.array([chunk_hashes(token_ids[j], starts[j])[c] for j, c in cand])
    labels = average_linkage_labels(simmat, config.cluster_cut, keys)
    sims = [float(simmat[x, y]) for x, y in zip(*same_label_pairs(labels), strict=True)]
    for (left, right), s in zip(zip(*same_label_pairs(labels), strict=True), sims, strict=True):
        (j, c), (k, _) = cand[left], cand[right]
        for q, (a, b) in enumerate(pairs):
            if (a, b) == (j, k):
                m_ab[q][c] = max(m_ab[q][c], s)
            elif (a, b) == (k, j):
                m_ba[q][c] = max(m_ba[q][c], s)


def _gate(j, logprobs, chunks, n_ch, pairs, paths, config: SirasConfig):
    """Sequence j's surprise gate per chunk: JS divergence of its surprise histogram from its aligned
    siblings' pooled one."""
    nb = len(config.surprise_bins) + 1

    def histogram(i):
        bins = np.searchsorted(np.asarray(config.surprise_bins), -logprobs[i], side="right")
        hist = np.zeros((n_ch[i], nb))
        np.add.at(hist, (chunks[i], bins), 1.0)
        return hist

    hist = histogram(j)
    pooled = np.zeros_like(hist)
    for q, (a, b) in enumerate(pairs):
        if j not in (a, b):
            continue
        ohist = histogram(b if j == a else a)
        for x, y in paths[q]:
            mine, theirs = (x, y) if j == a else (y, x)
            pooled[mine] += ohist[theirs]
    js = js_divergence(hist, pooled)
    return config.gate_floor + (1.0 - config.gate_floor) * np.minimum(1.0, js / config.js_ref)


CONFIGS = [
    {},
    {"alignment": "positional"},
    {"gate": False},
    {"cluster": False},
    {"ngram": 3},
    {"band": 0.01, "min_band": 1},
    {"band": 0.3, "gamma": 2.0},
]


@st.composite
def random_group(draw):
    n = draw(st.integers(2, 6))
    vocab = draw(st.integers(3, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    long = draw(st.booleans())  # long: > 64 chunks per rollout (several product row blocks)
    base = rng.integers(0, vocab, 400 if long else 60)
    toks = []
    for _ in range(n):
        t = base[: rng.integers(len(base) // 2, len(base) + 1)].copy()
        flips = rng.random(t.size) < draw(st.sampled_from([0.0, 0.05, 0.3]))
        t[flips] = rng.integers(0, vocab, int(flips.sum()))
        toks.append(t)
    lps = [-rng.gamma(1.0, 1.5, t.size) for t in toks]
    extra = {"max_chunk_len": 4, "min_chunk_len": 2} if long else {}
    return toks, lps, SirasConfig(**draw(st.sampled_from(CONFIGS)), **extra)


def _markers() -> StructureMarkers:
    m = StructureMarkers.empty(40)
    m.split_after[0] = True
    m.newline[0] = True
    m.split_before[1] = True
    return m


@settings(max_examples=40, deadline=None)
@given(random_group(), st.booleans())
def test_vectorised_weights_equal_reference(group, compiled) -> None:
    """Both DTW paths: the numba kernel (when installed) and the numpy row scan."""
    toks, lps, cfg = group
    saved = dtw.COMPILED
    dtw.COMPILED = compiled and dtw_kernel.AVAILABLE
    try:
        got = group_weights(toks, lps, cfg, _markers())
    finally:
        dtw.COMPILED = saved
    m, omega, mult = reference_weights(toks, lps, cfg, _markers())
    for j in range(len(toks)):
        np.testing.assert_allclose(got.match[j], m[j], rtol=0, atol=1e-9)
        np.testing.assert_allclose(got.omega[j], omega[j], rtol=0, atol=1e-9)
        np.testing.assert_allclose(got.multipliers[j], mult[j], rtol=0, atol=1e-9)
