"""Advantage estimator registry and the mask → groups → (B, T) code, without TRL; audit properties:
order independence at n = 16 and 32, empty rollouts, None rewards, non-finite log-probs, composite
rewards with a success column."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from training.rl import advantages as adv_mod
from training.rl.advantages import (
    METHODS,
    AdvantageBatch,
    EstimatorContext,
    get_adv_est,
    group_advantages,
    register_adv_est,
)
from training.rl.siras import SiblingGroup, SirasConfig, StructureMarkers, group_weights, shape_advantages
from training.rl.siras.similarity import chunk_ngrams, pair_similarities, set_sizes


def markers(vocab: int = 64) -> StructureMarkers:
    m = StructureMarkers.empty(vocab)
    m.split_after[0] = True
    m.newline[0] = True
    m.split_before[1] = True
    return m


def scaffold_batch(n: int, groups: int = 2, t: int = 40, seed: int = 0, vocab: int = 60) -> AdvantageBatch:
    """Rollouts sharing a scaffold with a divergent span; some padding; 0/1 rewards."""
    rng = np.random.default_rng(seed)
    rows = n * groups
    ids = torch.zeros(rows, t, dtype=torch.long)
    mask = torch.zeros(rows, t, dtype=torch.long)
    base = rng.integers(2, vocab, t)
    for i in range(rows):
        seq = base.copy()
        span = rng.integers(5, t - 10)
        seq[span : span + 4] = rng.integers(2, vocab, 4)
        seq[rng.random(t) < 0.05] = 0  # blank lines
        length = int(rng.integers(t // 2, t + 1))
        ids[i] = torch.from_numpy(seq)
        mask[i, :length] = 1
    rewards = torch.from_numpy(rng.integers(0, 2, rows).astype(np.float32))
    lps = torch.from_numpy(-rng.gamma(1.0, 1.5, (rows, t)).astype(np.float32))
    group = torch.arange(rows) // n
    return AdvantageBatch(ids, mask, rewards, group, lps)


def test_registry_names_lookup_and_errors() -> None:
    assert set(METHODS) <= set(adv_mod.names())
    for name in METHODS:
        assert callable(get_adv_est(name))
    with pytest.raises(ValueError, match="unknown advantage estimator 'ppo'"):
        get_adv_est("ppo")
    with pytest.raises(ValueError, match="already registered"):
        register_adv_est("grpo")(lambda b, c, x: None)


def test_grpo_matches_trl_formula_and_fills_valid_tokens() -> None:
    b = scaffold_batch(4, groups=3, seed=1)
    out = get_adv_est("grpo")(b, SirasConfig(), EstimatorContext())
    r = b.rewards.view(-1, 4).double()
    want = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)).view(-1)  # TRL 1.16
    assert torch.allclose(out.sequence, want, atol=1e-6)
    assert torch.equal(out.advantages == 0, (b.mask == 0) | (want[:, None] == 0).expand_as(b.mask))
    for i in range(b.mask.shape[0]):
        vals = out.advantages[i][b.mask[i] == 1]
        assert torch.allclose(vals, torch.full_like(vals, float(want[i])), atol=1e-6)
    none = group_advantages(b, scale="none")
    assert np.allclose(none, (r - r.mean(1, keepdim=True)).view(-1).numpy())


@pytest.mark.parametrize("name", ["siras", "siras_no_dtw", "siras_no_residual"])
def test_siras_token_mean_is_grpo_advantage_in_b_t(name) -> None:
    b = scaffold_batch(6, groups=3, seed=2)
    cfg = SirasConfig(positive_soft_clip=False, max_chunk_len=8, min_chunk_len=2)
    out = get_adv_est(name)(b, cfg, EstimatorContext(markers=markers()))
    assert out.advantages.shape == b.mask.shape and (out.advantages[b.mask == 0] == 0).all()
    for i in range(b.mask.shape[0]):
        if out.sequence[i] != 0:
            vals = out.advantages[i][b.mask[i] == 1].double()
            assert float(vals.mean()) == pytest.approx(float(out.sequence[i]), abs=1e-5)
            assert len(set(vals.tolist())) > 1  # token-level, not one value per row


def test_tool_gap_breaks_chunks_and_stays_zero() -> None:
    b = scaffold_batch(4, groups=1, seed=3)
    b.mask[:, 10:14] = 0  # a tool response inside every completion
    out = get_adv_est("siras")(b, SirasConfig(gate=False), EstimatorContext(markers=markers()))
    assert (out.advantages[:, 10:14] == 0).all()


def _permuted(b: AdvantageBatch, perm: torch.Tensor) -> AdvantageBatch:
    lp = b.logprobs[perm] if b.logprobs is not None else None
    return AdvantageBatch(b.token_ids[perm], b.mask[perm], b.rewards[perm], b.group[perm], lp)


@settings(max_examples=6, deadline=None)
@given(st.sampled_from([16, 32]), st.integers(0, 2**31 - 1), st.sampled_from(["siras", "siras_no_dtw"]))
def test_order_independence(n, seed, name) -> None:
    """Permuting the rows of a batch (siblings inside groups and groups themselves) permutes the
    output — the estimator sees every pair, in a canonical order."""
    b = scaffold_batch(n, groups=2, seed=seed % 1000, t=48)
    ctx = EstimatorContext(markers=markers())
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(b.mask.shape[0]))
    got = get_adv_est(name)(_permuted(b, perm), SirasConfig(), ctx).advantages
    want = get_adv_est(name)(b, SirasConfig(), ctx).advantages[perm]
    assert torch.equal(got, want)


@settings(max_examples=8, deadline=None)
@given(st.sampled_from([16, 32]), st.integers(0, 2**31 - 1), st.booleans())
def test_group_weights_order_free_bit_for_bit(n, seed, gate) -> None:
    """Rollouts built from a few repeated chunks (many equal-cost DTW paths, duplicates): a listing
    order that decided tie breaks or pair orientation would show here (it did before the canonical
    order)."""
    rng = np.random.default_rng(seed)
    pats = [
        np.array([2, 3, 4, 5, 6, 0]),
        np.array([7, 8, 9, 10, 11, 0]),
        np.array([2, 3, 4, 12, 13, 0]),
        np.array([20, 21, 22, 23, 24, 0]),
    ]
    toks = [np.concatenate([pats[i] for i in rng.integers(0, 4, rng.integers(4, 12))]) for _ in range(n)]
    toks[3] = toks[5].copy()
    lps = [-rng.gamma(1.0, 1.5, t.size) for t in toks] if gate else None
    cfg = SirasConfig(gate=gate)
    ref = group_weights(toks, lps, cfg, markers())
    perm = rng.permutation(n)
    got = group_weights(
        [toks[p] for p in perm], None if lps is None else [lps[p] for p in perm], cfg, markers()
    )
    for i, p in enumerate(perm):
        assert np.array_equal(got.multipliers[i], ref.multipliers[p])
        assert np.array_equal(got.match[i], ref.match[p])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 3))
def test_empty_rollouts_take_no_part(seed, n_empty) -> None:
    """A fully masked rollout changes nobody's advantage: same result as the batch without it."""
    b = scaffold_batch(6, groups=1, seed=seed % 997)
    b.rewards[:] = 1.0 if seed % 2 else torch.tensor([1.0, 0, 1, 0, 1, 1])  # all-correct or normal
    ctx = EstimatorContext(markers=markers(), s_batch_fallback=0.7)
    cfg = SirasConfig()
    keep = torch.arange(6 - n_empty)
    small = get_adv_est("siras")(
        AdvantageBatch(b.token_ids[keep], b.mask[keep], b.rewards[keep], b.group[keep], b.logprobs[keep]),
        cfg,
        ctx,
    )
    b.mask[6 - n_empty :] = 0
    b.rewards[6 - n_empty :] = 0.0  # an empty rollout's reward must not count either
    full = get_adv_est("siras")(b, cfg, ctx)
    assert (full.advantages[6 - n_empty :] == 0).all()
    assert torch.allclose(full.advantages[keep], small.advantages, atol=1e-6)


def test_empty_rollout_cannot_turn_successes_negative() -> None:
    """Audit item 3: all-correct group with one empty rollout — the real successes keep length-centred
    means (the shortest positive), as without the empty one."""
    toks = [np.arange(2, 12), np.arange(2, 22), np.arange(2, 32), np.array([], dtype=np.int64)]
    g = SiblingGroup(toks, np.ones(4), np.zeros(4))
    out = shape_advantages(g, SirasConfig(positive_soft_clip=False), s_batch=1.0)
    means = [float(o.mean()) for o in out[:3]]
    assert means[0] > 0 > means[2] and abs(sum(means)) < 1e-9 and out[3].numel() == 0


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["grpo", "siras"]))
def test_none_rewards_are_excluded(seed, name) -> None:
    """NaN reward (a reward function's None): A = 0 on its tokens, and the others get exactly what
    they get without that row (not what a reward of 0 would give)."""
    b = scaffold_batch(6, groups=1, seed=seed % 991)
    b.rewards[:] = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.5, 1.0])
    ctx = EstimatorContext(markers=markers())
    keep = torch.arange(5)
    small = get_adv_est(name)(
        AdvantageBatch(b.token_ids[keep], b.mask[keep], b.rewards[keep], b.group[keep], b.logprobs[keep]),
        SirasConfig(), ctx,
    )  # fmt: skip
    b.rewards[5] = float("nan")
    full = get_adv_est(name)(b, SirasConfig(), ctx)
    assert (full.advantages[5] == 0).all() and full.sequence[5] == 0
    assert torch.allclose(full.advantages[keep], small.advantages, atol=1e-6)
    b.rewards[5] = 0.0
    assert not torch.allclose(get_adv_est(name)(b, SirasConfig(), ctx).advantages[keep], small.advantages)


def test_infinite_reward_is_a_clear_error() -> None:
    b = scaffold_batch(4, groups=1)
    with pytest.raises(ValueError, match="infinite reward"):
        AdvantageBatch(b.token_ids, b.mask, torch.tensor([1.0, float("inf"), 0, 0]), b.group)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 2**31 - 1),
    st.sampled_from([float("nan"), float("-inf"), float("inf")]),
    st.floats(0.01, 0.5),
)
def test_non_finite_logprobs(seed, bad, frac) -> None:
    """NaN / ±inf sampling log-probs: finite output, token means kept, masked tokens 0."""
    b = scaffold_batch(6, groups=2, seed=seed % 983)
    b.rewards[:] = torch.tensor([1.0, 0.0] * 6)  # non-degenerate groups: token mean = A_j
    rng = np.random.default_rng(seed)
    hit = torch.from_numpy(rng.random(b.logprobs.shape) < frac)
    b.logprobs[hit] = bad
    cfg = SirasConfig(positive_soft_clip=False)
    out = get_adv_est("siras")(b, cfg, EstimatorContext(markers=markers()))
    assert torch.isfinite(out.advantages).all() and (out.advantages[b.mask == 0] == 0).all()
    for i in range(b.mask.shape[0]):
        vals = out.advantages[i][b.mask[i] == 1].double()
        assert float(vals.mean()) == pytest.approx(float(out.sequence[i]), abs=1e-5)


def test_success_column_decides_degenerate_kind() -> None:
    """Audit item 6: composite reward 0.6 = format 0.6 + correctness 0 is all-wrong when success is read
    from the correctness column; the total alone (0.6 >= 0.5) would call it all-correct."""
    b = scaffold_batch(4, groups=1, seed=4)
    b.rewards[:] = 0.6
    ctx = EstimatorContext(markers=markers(), s_batch_fallback=1.0)
    by_total = get_adv_est("siras")(b, SirasConfig(), ctx).stats.kinds
    b.success = torch.zeros(4)
    by_success = get_adv_est("siras")(b, SirasConfig(), ctx)
    assert by_total == ["all_correct"] and by_success.stats.kinds == ["all_wrong"]
    for i in range(4):  # all-wrong residual: every rollout's token mean exactly 0
        assert abs(float(by_success.advantages[i][b.mask[i] == 1].double().mean())) < 1e-6


def test_ngram_similarity_is_exact_overlap() -> None:
    """Unrelated chunks score 0 at any length; identical 1; Dice of the n-gram sets otherwise."""
    a = np.arange(100, 164)
    b_ = np.arange(300, 364)
    ids = np.concatenate([a, b_, a, a[:32]])
    chunk = np.repeat([0, 1, 2, 3], [64, 64, 64, 32])
    x = chunk_ngrams(ids, chunk, 4, 2)
    sizes = set_sizes(x)
    sims = pair_similarities(x, sizes, np.array([0, 0, 0]), np.array([1, 2, 3]))
    assert sims[0] == 0.0 and sims[1] == 1.0
    assert sims[2] == pytest.approx(2 * (32 + 31) / (127 + 63), abs=1e-7)


def test_longer_divergent_chunks_are_not_less_divergent() -> None:
    """Audit item 1: the divergent chunk's match stays ~0 whatever its length (hashing made it grow)."""
    for length in (4, 16, 64):
        rng = np.random.default_rng(length)
        head = np.arange(2, 10)
        toks = [np.concatenate([head, [0], rng.integers(1000, 50000, length)]) for _ in range(4)]
        gw = group_weights(toks, None, SirasConfig(gate=False, max_chunk_len=128), markers(50001))
        assert all(m[-1] < 0.05 and m[0] == 1.0 for m in gw.match)
