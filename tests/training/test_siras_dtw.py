"""Banded DTW: equals brute force over all monotone paths in the band; band respected; symmetric."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from training.rl.siras import dtw, dtw_kernel
from training.rl.siras.dtw import band_mask, dtw_batch, positional_path


def in_band(a: int, b: int, la: int, lb: int, w: int) -> bool:
    return a < la and b < lb and abs(a * lb - b * la) <= w * max(la, lb)


def brute_force(cost: np.ndarray, la: int, lb: int, w: int) -> float:
    """Minimum over every monotone (1,0)/(0,1)/(1,1) path from (0,0) to (la−1, lb−1) inside the band."""
    best = np.inf

    def walk(a: int, b: int, acc: float) -> None:
        nonlocal best
        if not in_band(a, b, la, lb, w):
            return
        acc += cost[a, b]
        if (a, b) == (la - 1, lb - 1):
            best = min(best, acc)
            return
        for da, db in ((1, 0), (0, 1), (1, 1)):
            walk(a + da, b + db, acc)

    walk(0, 0, 0.0)
    return best


pair = st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 3), st.integers(0, 2**31 - 1))


@settings(max_examples=150, deadline=None)
@given(pair)
def test_dtw_equals_brute_force_and_path_is_valid(args) -> None:
    la, lb, w, seed = args
    size = 5
    cost = np.random.default_rng(seed).random((1, size, size))
    dist, path = dtw_batch(cost, np.array([la]), np.array([lb]), w)
    assert dist[0] == pytest.approx(brute_force(cost[0], la, lb, w), abs=1e-12)
    cells = np.argwhere(path[0])
    # the path's cost is the distance, it starts and ends at the corners, steps are monotone and unit
    assert cost[0][path[0]].sum() == pytest.approx(dist[0], abs=1e-12)
    assert path[0, 0, 0] and path[0, la - 1, lb - 1]
    order = cells[np.lexsort((cells[:, 1], cells[:, 0]))]
    steps = np.diff(order, axis=0)
    assert ((steps >= 0) & (steps <= 1)).all() and (steps.sum(1) >= 1).all()
    # band respected
    assert all(in_band(int(a), int(b), la, lb, w) for a, b in cells)


@settings(max_examples=100, deadline=None)
@given(pair)
def test_dtw_symmetric(args) -> None:
    la, lb, w, seed = args
    cost = np.random.default_rng(seed).random((1, 5, 5))
    d1, p1 = dtw_batch(cost, np.array([la]), np.array([lb]), w)
    d2, p2 = dtw_batch(cost.transpose(0, 2, 1).copy(), np.array([lb]), np.array([la]), w)
    assert d1[0] == pytest.approx(d2[0], abs=1e-12)
    # random real costs: the optimum is unique, so the paths are transposes of each other
    assert (p1[0] == p2[0].T).all()


def test_batch_equals_single_pairs() -> None:
    rng = np.random.default_rng(0)
    size, p = 9, 12
    cost = rng.random((p, size, size))
    la, lb = rng.integers(1, size + 1, p), rng.integers(1, size + 1, p)
    w = rng.integers(1, 4, p)
    dist, path = dtw_batch(cost, la, lb, w)
    for i in range(p):
        d1, p1 = dtw_batch(cost[i : i + 1], la[i : i + 1], lb[i : i + 1], int(w[i]))
        assert dist[i] == pytest.approx(d1[0]) and (path[i] == p1[0]).all()


def test_narrow_band_forbids_a_cheaper_off_band_path() -> None:
    size = 6
    cost = np.ones((1, size, size))
    cost[0, 0, :] = 0.0  # a cheap route along the first row, then down the last column
    cost[0, :, size - 1] = 0.0
    wide, _ = dtw_batch(cost, np.array([size]), np.array([size]), size)
    narrow, path = dtw_batch(cost, np.array([size]), np.array([size]), 1)
    assert wide[0] == 0.0
    assert narrow[0] > 0.0
    assert not (path[0] & ~band_mask(np.array([size]), np.array([size]), size, 1)[0]).any()


def test_identical_sequences_align_on_the_diagonal() -> None:
    x = np.random.default_rng(3).random((7, 4))
    cost = np.abs(x[:, None, :] - x[None, :, :]).sum(-1)[None]
    dist, path = dtw_batch(cost, np.array([7]), np.array([7]), 2)
    assert dist[0] == 0.0 and (path[0] == np.eye(7, dtype=bool)).all()


def test_band_mask_feasible_for_unequal_lengths() -> None:
    for la, lb in itertools.product(range(1, 9), repeat=2):
        dist, _ = dtw_batch(np.zeros((1, 8, 8)), np.array([la]), np.array([lb]), 1)
        assert np.isfinite(dist[0]), (la, lb)


def test_positional_path_and_bad_lengths() -> None:
    p = positional_path(np.array([3]), np.array([2]), 4)[0]
    assert p.sum() == 2 and p[0, 0] and p[1, 1]
    with pytest.raises(ValueError, match="length"):
        dtw_batch(np.zeros((1, 3, 3)), np.array([0]), np.array([2]), 1)


def test_float32_costs_give_the_same_alignment() -> None:
    rng = np.random.default_rng(5)
    cost = rng.random((6, 10, 10))
    la, lb = rng.integers(1, 11, 6), rng.integers(1, 11, 6)
    d64, p64 = dtw_batch(cost, la, lb, 2)
    d32, p32 = dtw_batch(cost.astype(np.float32), la, lb, 2)
    assert np.allclose(d64, d32, atol=1e-5) and (p64 == p32).all()


@pytest.mark.skipif(not dtw_kernel.AVAILABLE, reason="numba not installed: only the numpy path exists")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_kernel_equals_numpy_rows(dtype, monkeypatch) -> None:
    rng = np.random.default_rng(7)
    size, p = 30, 20
    cost = rng.random((p, size, size)).astype(dtype)
    cost[:, ::3, ::2] = 0.0  # exact ties: the tie rule decides
    la, lb = rng.integers(1, size + 1, p), rng.integers(1, size + 1, p)
    w = rng.integers(1, 8, p)
    d1, p1 = dtw_batch(cost, la, lb, w)
    monkeypatch.setattr(dtw, "COMPILED", False)
    d2, p2 = dtw_batch(cost, la, lb, w)
    assert np.allclose(d1, d2, rtol=0, atol=1e-9) and (p1 == p2).all()
