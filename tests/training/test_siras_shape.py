"""SIRAS invariants on random sibling groups (hypothesis) and on constructed examples."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from training.rl.siras import (
    SiblingGroup,
    SirasConfig,
    StructureMarkers,
    batch_scale,
    classify,
    group_weights,
    length_scores,
    positive_soft_clip,
    shape_advantages,
    shape_batch,
)

ABLATIONS = [
    {},
    {"alignment": "positional"},
    {"gate": False},
    {"chunking": "structure"},
    {"chunking": "fixed", "max_chunk_len": 5},
    {"cluster": False},
    {"ngram": 1},
    {"ngram": 3},
    {"band": 0.01, "min_band": 1},
    {"u_min": 0.0},
    {"max_chunk_len": 3, "min_chunk_len": 1, "surprise_threshold": 0.5, "surprise_z": 0.0},
]


def grpo(r: np.ndarray) -> np.ndarray:
    return (r - r.mean()) / (r.std() + 1e-4)


def markers(vocab: int = 40) -> StructureMarkers:
    m = StructureMarkers.empty(vocab)
    m.split_after[0] = True  # token 0 = a blank line
    m.newline[0] = True
    m.split_before[1] = True  # token 1 = <tool_call>
    return m


@st.composite
def groups(draw, kind: str = "any"):
    n = draw(st.integers(2, 6))
    vocab = draw(st.integers(3, 40))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    base = rng.integers(0, vocab, 60)
    toks = []
    for _ in range(n):
        t = base[: rng.integers(1, 61)].copy()
        flips = rng.random(t.size) < draw(st.sampled_from([0.0, 0.1, 0.5]))
        t[flips] = rng.integers(0, vocab, int(flips.sum()))
        toks.append(t)
    lps = [-rng.gamma(1.0, 1.5, t.size) for t in toks]
    if kind == "all_wrong":
        r = np.zeros(n)
    elif kind == "all_correct":
        r = np.ones(n)
    else:
        r = rng.integers(0, 2, n).astype(float)
        r[0], r[1] = 0.0, 1.0  # non-degenerate
        r = r + rng.random(n) * draw(st.sampled_from([0.0, 0.3]))
    ablation = draw(st.sampled_from(ABLATIONS))
    return SiblingGroup(toks, r, grpo(r), lps), SirasConfig(positive_soft_clip=False, **ablation)


@settings(max_examples=100, deadline=None)
@given(groups())
def test_token_mean_and_sign_rule(gc) -> None:
    """Every rollout's token mean is its GRPO advantage A_j (within 1e-6).

    Sign rule: with u_min > 0 every token has exactly the sign of A_j; with u_min = 0 a token has the
    sign of A_j or is 0, never the opposite sign. |A_jt| <= |A_j|·(u_max + 1 − u_min).
    """
    g, cfg = gc
    out = shape_advantages(g, cfg, markers())
    for o, t, a in zip(out, g.token_ids, g.advantages, strict=True):
        assert o.shape == (t.size,) and o.dtype == torch.float64
        if t.size:
            assert float(o.mean()) == pytest.approx(a, abs=1e-6)
        o = o.numpy()
        if a == 0:
            assert (o == 0).all()
        elif cfg.u_min > 0:
            assert (np.sign(o) == np.sign(a)).all()
        else:
            assert (o * a >= 0).all()
        assert (np.abs(o) <= abs(a) * (cfg.u_max + 1 - cfg.u_min) + 1e-9).all()


@settings(max_examples=60, deadline=None)
@given(groups(), st.sampled_from([0.5, 1.0, 2.0]))
def test_soft_clip_acts_on_shaped_token_advantages(gc, level) -> None:
    """The positive soft clip maps each shaped token advantage x > 0 to c·tanh(x/c) (< c, monotone);
    negative token advantages, hence negative rollouts' exact token means, are untouched."""
    g, cfg = gc
    raw = shape_advantages(g, cfg, markers())
    clipped = shape_advantages(
        g, cfg.model_copy(update={"positive_soft_clip": True, "soft_clip_level": level}), markers()
    )
    for r, c, a in zip(raw, clipped, g.advantages, strict=True):
        r, c = r.numpy(), c.numpy()
        pos = r > 0
        np.testing.assert_allclose(c[pos], level * np.tanh(r[pos] / level), rtol=0, atol=1e-12)
        assert (c[pos] < level).all() and (c[~pos] == r[~pos]).all()
        if a < 0 and r.size:
            assert float(c.mean()) == pytest.approx(a, abs=1e-6)
        order = np.argsort(r, kind="stable")
        assert (np.diff(c[order]) >= -1e-12).all()  # ranking of tokens kept


@settings(max_examples=40, deadline=None)
@given(groups("all_wrong"), st.floats(0.1, 3.0))
def test_all_wrong_token_mean_is_zero(gc, s_batch) -> None:
    g, cfg = gc
    assert classify(g.rewards, cfg) == "all_wrong"
    out = shape_advantages(g, cfg, markers(), s_batch=s_batch)
    for o in out:
        assert abs(float(o.sum())) < 1e-9 * max(1, o.numel())


@settings(max_examples=40, deadline=None)
@given(groups("all_correct"), st.floats(0.1, 3.0))
def test_all_correct_shorter_gets_larger_mean(gc, s_batch) -> None:
    g, cfg = gc
    out = shape_advantages(g, cfg, markers(), s_batch=s_batch)
    lengths = g.lengths
    means = np.array([float(o.mean()) if o.numel() else 0.0 for o in out])
    assert abs(means.sum()) < 1e-6 * len(out) * (1 + np.abs(means).max())  # length-centred
    for j in range(len(out)):
        for k in range(len(out)):
            if lengths[j] < lengths[k]:
                assert means[j] > means[k]
            if lengths[j] == lengths[k]:
                assert means[j] == pytest.approx(means[k], abs=1e-12)


def test_identical_siblings_give_flat_multipliers() -> None:
    rng = np.random.default_rng(0)
    t = rng.integers(0, 30, 50)
    lp = -rng.gamma(1.0, 1.5, 50)
    r = np.array([0.0, 1.0, 1.0, 0.0])
    g = SiblingGroup([t] * 4, r, grpo(r), [lp] * 4)
    for cfg in (
        SirasConfig(positive_soft_clip=False),
        SirasConfig(alignment="positional", positive_soft_clip=False),
        SirasConfig(gate=False, positive_soft_clip=False),
    ):
        gw = group_weights(g.token_ids, g.logprobs, cfg, markers())
        for u in gw.multipliers:
            assert np.allclose(u, 1.0, atol=1e-12)
        for o, a in zip(shape_advantages(g, cfg, markers()), g.advantages, strict=False):
            assert np.allclose(o.numpy(), a, atol=1e-12)


def _scaffold_group(n: int = 4, decisive_len: int = 6):
    """Shared scaffold chunks around one divergent (decisive) chunk per sibling."""
    head = [5, 6, 7, 8, 9, 10, 0]
    tail = [11, 12, 13, 14, 15, 16, 0]
    toks, spans = [], []
    for j in range(n):
        decisive = list(range(17 + decisive_len * j, 17 + decisive_len * (j + 1))) + [0]
        seq = head + decisive + tail
        toks.append(np.array(seq))
        spans.append((len(head), len(head) + len(decisive)))
    return toks, spans


def test_divergent_chunk_gets_more_weight_than_shared() -> None:
    toks, spans = _scaffold_group()
    cfg = SirasConfig(gate=False)
    gw = group_weights(toks, None, cfg, markers(17 + 6 * 4 + 1))
    for u, (a, b) in zip(gw.multipliers, spans, strict=False):
        assert u[a:b].min() > u[:a].max() and u[a:b].min() > u[b:].max()
        assert u.mean() == pytest.approx(1.0, abs=1e-12)
    r = np.array([1.0, 0.0, 0.0, 1.0])
    out = shape_advantages(SiblingGroup(toks, r, grpo(r)), cfg, markers(60))
    for o, (a, b) in zip(out, spans, strict=False):
        assert o[a:b].abs().min() > o[:a].abs().max()


def test_all_wrong_pushes_shared_down_divergent_up() -> None:
    toks, spans = _scaffold_group()
    g = SiblingGroup(toks, np.zeros(4), np.zeros(4))
    out = shape_advantages(g, SirasConfig(gate=False), markers(60), s_batch=1.0)
    for o, (a, b) in zip(out, spans, strict=False):
        assert (o[a:b] > 0).all() and (o[:a] < 0).all() and (o[b:] < 0).all()


def test_reordered_shared_chunk_is_credited_by_clustering() -> None:
    a_chunk = [5, 6, 7, 8, 9, 10, 0]
    b_chunk = [20, 21, 22, 23, 24, 25, 0]
    c_chunk = [30, 31, 32, 33, 34, 35, 0]
    toks = [np.array(a_chunk + b_chunk + c_chunk), np.array(c_chunk + b_chunk + a_chunk)]
    with_c = group_weights(toks, None, SirasConfig(gate=False, alignment="positional"), markers())
    without = group_weights(
        toks, None, SirasConfig(gate=False, alignment="positional", cluster=False), markers()
    )
    assert with_c.match[0][0] == pytest.approx(1.0) and without.match[0][0] < 0.5


def test_s_batch_scales_degenerate_residuals() -> None:
    toks, _ = _scaffold_group()
    wrong = SiblingGroup(toks, np.zeros(4), np.zeros(4))
    r = np.array([1.0, 0.0, 0.0, 1.0])
    normal = SiblingGroup(toks, r, grpo(r))
    big = SiblingGroup(toks, r, 2 * grpo(r))
    cfg = SirasConfig(gate=False, positive_soft_clip=False)
    (_, res1), st1 = shape_batch([normal, wrong], cfg, markers(60))
    (_, res2), st2 = shape_batch([big, wrong], cfg, markers(60))
    assert st1.kinds == ["normal", "all_wrong"]
    assert st2.s_batch == pytest.approx(2 * st1.s_batch)
    assert torch.allclose(res2[0], 2 * res1[0])
    (res0,), st0 = shape_batch([wrong], cfg, markers(60))  # no non-degenerate group: fallback 0
    assert st0.s_batch == 0.0 and all((o == 0).all() for o in res0)


def test_switches_residual_and_enabled() -> None:
    toks, _ = _scaffold_group()
    g = SiblingGroup(toks, np.zeros(4), np.zeros(4))
    assert all((o == 0).all() for o in shape_advantages(g, SirasConfig(residual=False), s_batch=1.0))
    assert any((o != 0).any() for o in shape_advantages(g, SirasConfig(), markers(60), s_batch=1.0))
    r = np.array([1.0, 0.0, 0.0, 1.0])
    flat = shape_advantages(SiblingGroup(toks, r, grpo(r)), SirasConfig(enabled=False), markers(60))
    assert all(torch.allclose(o, torch.full_like(o, a)) for o, a in zip(flat, grpo(r), strict=False))


def test_positive_soft_clip() -> None:
    a = np.array([-3.0, -0.5, 0.0, 0.5, 1.0, 3.0, 30.0])
    assert np.allclose(positive_soft_clip(a, 2.0)[3:], 2.0 * np.tanh(a[3:] / 2.0))
    c = positive_soft_clip(a)
    assert (c[:3] == a[:3]).all()
    assert (c[3:] > 0).all() and (c[3:] < 1.0 + 1e-12).all() and (np.diff(c[3:]) >= 0).all()


def test_empty_and_single_rollouts() -> None:
    g = SiblingGroup([np.array([], dtype=np.int64), np.array([1, 2, 3])], [0.0, 1.0], [-1.0, 1.0])
    out = shape_advantages(g, SirasConfig(positive_soft_clip=False), s_batch=1.0)
    # the empty rollout takes no part: one scored rollout is a degenerate group (q = 0: no residual)
    assert out[0].numel() == 0 and (out[1] == 0).all()
    two = SiblingGroup(
        [np.array([], dtype=np.int64), np.array([1, 2, 3]), np.array([1, 2, 4])],
        [0.0, 1.0, 0.0],
        [0.0, 1.0, -1.0],
    )
    out = shape_advantages(two, SirasConfig(positive_soft_clip=False))
    assert out[0].numel() == 0 and float(out[1].mean()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="rewards"):
        SiblingGroup([np.array([1])], [0.0, 1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="surprise_bins"):
        SirasConfig(surprise_bins=(2.0, 1.0))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(3, 9))
def test_length_scores_and_batch_scale_are_permutation_equivariant_bit_for_bit(seed, n) -> None:
    """σ_T, T̄ and s_batch are exact sums: listing the siblings (or the groups) in another order
    permutes q and leaves s_batch unchanged, to the last bit (a running sum differed by one ulp)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 5000, n).astype(np.float64)
    usable = rng.random(n) < 0.8
    perm = rng.permutation(n)
    want = length_scores(lengths, 0.1, usable)
    assert np.array_equal(length_scores(lengths[perm], 0.1, usable[perm]), want[perm])
    cfg = SirasConfig()
    adv = [rng.normal(size=n) * rng.uniform(0.1, 3.0) for _ in range(3)]
    rew = [rng.random(n) for _ in range(3)]
    grps = [SiblingGroup([np.arange(1 + k % 4) for k in range(n)], r, a) for r, a in zip(rew, adv, strict=True)]
    shuffled = [SiblingGroup([np.arange(1 + k % 4) for k in perm], r[perm], a[perm])
                for r, a in zip(rew, adv, strict=True)][::-1]
    assert batch_scale(shuffled, cfg) == batch_scale(grps, cfg)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_shape_batch_permutation_equivariant_bit_for_bit(seed) -> None:
    """A permutation of the siblings inside each group, and of the groups, permutes shape_batch's
    output bit for bit: non-degenerate groups set s_batch, degenerate ones use it (and σ_T)."""
    rng = np.random.default_rng(seed)
    grps = []
    for kind in ("normal", "normal", "all_correct", "all_wrong"):
        n = int(rng.integers(4, 9))
        toks = [rng.integers(0, 30, int(rng.integers(5, 300))) for _ in range(n)]
        r = {"normal": rng.random(n), "all_correct": np.ones(n), "all_wrong": np.zeros(n)}[kind]
        a = grpo(r) * rng.uniform(0.3, 3.0) if kind == "normal" else np.zeros(n)
        grps.append(SiblingGroup(toks, r, a, [-rng.gamma(1.0, 1.5, t.size) for t in toks]))
    perms = [rng.permutation(len(g.token_ids)) for g in grps]
    moved = [SiblingGroup([g.token_ids[j] for j in p], g.rewards[p], g.advantages[p], [g.logprobs[j] for j in p])
             for g, p in zip(grps, perms, strict=True)][::-1]
    want, _ = shape_batch(grps, SirasConfig(), markers())
    got, _ = shape_batch(moved, SirasConfig(), markers())
    for gi, p in enumerate(perms):
        for i, j in enumerate(p):
            assert torch.equal(got[len(grps) - 1 - gi][i], want[gi][j])


@settings(max_examples=50, deadline=None)
@given(groups())
def test_without_gate_or_hybrid_chunking_logprobs_change_nothing(gc) -> None:
    """`reads_logprobs` is False exactly when shaping ignores the log-probs: the trainer then skips the
    forward pass that computes them, so the shaped advantages must not depend on them."""
    g, cfg = gc
    blind = SiblingGroup(g.token_ids, g.rewards, g.advantages, None)
    with_lp, _ = shape_batch([g], cfg, markers())
    without_lp, _ = shape_batch([blind], cfg, markers())
    if not cfg.reads_logprobs:
        for a, b in zip(with_lp[0], without_lp[0], strict=True):
            assert torch.equal(a, b)
    assert cfg.reads_logprobs == (cfg.gate or cfg.chunking == "hybrid")
    assert SirasConfig().reads_logprobs and not SirasConfig(gate=False, chunking="structure").reads_logprobs
