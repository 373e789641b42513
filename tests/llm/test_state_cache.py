"""The prompt-state cache of the local backend stays within its bound, counting the logits each saved
state copies (llama-cpp-python's own count leaves them out)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llama_cpp")

from llama_cpp.llama import LlamaState  # noqa: E402

from eventfold.llm.local_backend import bounded_state_cache  # noqa: E402

MB = 1 << 20


def _state(n: int) -> LlamaState:
    scores = np.zeros((64, 4096), dtype=np.single)  # 1 MB of logits, as save_state copies them
    return LlamaState(np.arange(n, dtype=np.intc), scores, n, b"kv", 64 * 1024, 0)


def test_logits_count_towards_the_bound_and_the_oldest_states_go_first():
    cache = bounded_state_cache(3 * MB)
    for n in range(1, 11):  # ten states of ~1.06 MB each: the library's own count would keep all ten
        cache[list(range(n))] = _state(n)
    assert len(cache.cache_state) == 2 and cache.cache_size <= 3 * MB
    assert [len(k) for k in cache.cache_state] == [9, 10]
    # a longer prompt restores the longest cached prefix
    assert cache[list(range(12))].n_tokens == 10
