"""Hybrid chunking: structural markers from a real tokenizer, surprise peaks, max length, ablation modes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from training.common.tiny import build_tiny_tokenizer
from training.rl.siras import SirasConfig, StructureMarkers, chunk_index, chunk_starts


@pytest.fixture(scope="module")
def tok():
    return build_tiny_tokenizer()


def spans(ids: list[int], starts: np.ndarray, tok) -> list[str]:
    idx = np.flatnonzero(starts).tolist() + [len(ids)]
    return [tok.decode(ids[a:b]) for a, b in zip(idx[:-1], idx[1:], strict=False)]


def test_structural_markers_from_tokenizer(tok) -> None:
    m = StructureMarkers.from_tokenizer(tok)
    text = 'Plan the answer.\n\n1. Find it.\n2. Check it.\n<tool_call>\n{"name": "search"}\n</tool_call>Done.'
    ids = tok(text).input_ids
    cfg = SirasConfig(chunking="structure", max_chunk_len=1000)
    parts = spans(ids, chunk_starts(np.array(ids), None, cfg, m), tok)
    assert "".join(parts) == text
    assert parts[0].endswith("\n\n")  # blank line closes a chunk
    assert any(p.lstrip().startswith("2.") for p in parts)  # step marker after a newline opens one
    assert any(p.startswith("<tool_call>") for p in parts)  # tool-call boundary
    assert any(p.startswith("Done") for p in parts)  # closing tag ends its chunk


def test_surprise_peaks_split_only_in_hybrid() -> None:
    ids = np.arange(30) % 7 + 1
    lp = np.full(30, -0.1)
    lp[[12, 20]] = -6.0  # two surprise peaks
    hybrid = chunk_starts(ids, lp, SirasConfig(max_chunk_len=100, min_chunk_len=4))
    assert np.flatnonzero(hybrid).tolist() == [0, 12, 20]
    structure = chunk_starts(ids, lp, SirasConfig(chunking="structure", max_chunk_len=100))
    assert np.flatnonzero(structure).tolist() == [0]
    close = chunk_starts(ids, lp, SirasConfig(max_chunk_len=100, min_chunk_len=10))
    assert np.flatnonzero(close).tolist() == [0, 12]  # 20 is only 8 tokens after the split at 12


def test_fixed_chunking_ignores_markers() -> None:
    m = StructureMarkers.empty(10)
    m.split_after[0] = True
    ids = np.array([1, 0, 2, 3, 0, 4, 5, 6, 7])
    assert np.flatnonzero(
        chunk_starts(ids, None, SirasConfig(chunking="fixed", max_chunk_len=4), m)
    ).tolist() == [0, 4, 8]
    assert np.flatnonzero(chunk_starts(ids, None, SirasConfig(chunking="structure"), m)).tolist() == [0, 2, 5]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 300),
    st.integers(1, 20),
    st.integers(0, 2**31 - 1),
    st.sampled_from(["hybrid", "structure", "fixed"]),
)
def test_chunks_partition_and_respect_max_length(t, max_len, seed, mode) -> None:
    rng = np.random.default_rng(seed)
    m = StructureMarkers.empty(12)
    m.split_after[0] = True
    m.split_before[1] = True
    ids = rng.integers(0, 12, t)
    cfg = SirasConfig(
        chunking=mode, max_chunk_len=max_len, min_chunk_len=1, surprise_threshold=1.0, surprise_z=0.5
    )
    starts = chunk_starts(ids, -rng.gamma(1.0, 1.5, t), cfg, m, breaks=rng.random(t) < 0.05)
    assert starts.shape == (t,)
    if t:
        assert starts[0]
        ci = chunk_index(starts)
        assert ci[0] == 0 and (np.diff(ci) >= 0).all()
        assert np.bincount(ci).max() <= max_len
