"""The OpenAI-compatible /embeddings backend against the local HTTP server fixture."""

from __future__ import annotations

import numpy as np
import pytest

from eventfold.settings import Settings
from eventrag.embed import EmbeddingError, OpenAIEmbedder, make_embedder


def fake_embeddings(body: dict) -> tuple[int, dict]:
    """Vector [len(text), 1, 0, 0] per input, returned in reverse order (clients must sort by index)."""
    rows = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0, 0.0]}
            for i, t in enumerate(body["input"])]
    return 200, {"object": "list", "data": rows[::-1], "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}


def test_batches_retries_orders_and_normalises(fake_openai):
    fake_openai.script = [fake_openai.error(503), fake_embeddings, fake_embeddings]
    settings = Settings(embed={"backend": "openai", "base_url": fake_openai.base_url, "model": "e5", "dim": 4, "batch_size": 2})
    embedder = make_embedder(settings)
    assert isinstance(embedder, OpenAIEmbedder)
    embedder.backoff_base_s = 0.01
    vectors = embedder.embed(["a", "bbb", "cc"])
    assert [r["input"] for r in fake_openai.requests] == [["a", "bbb"], ["a", "bbb"], ["cc"]]
    assert fake_openai.requests[0]["_path"] == "/v1/embeddings"
    expected = np.array([[1, 1, 0, 0], [3, 1, 0, 0], [2, 1, 0, 0]], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-6)
    assert vectors.dtype == np.float32


def test_checks_dimension(fake_openai):
    fake_openai.script = [fake_embeddings]
    with pytest.raises(EmbeddingError, match="4-dim"):
        OpenAIEmbedder(fake_openai.base_url, "e5", dim=8).embed(["a"])


def test_gives_up_with_a_clear_error(fake_openai):
    fake_openai.script = [fake_openai.error(500)] * 3
    with pytest.raises(EmbeddingError, match="InternalServerError"):
        OpenAIEmbedder(fake_openai.base_url, "e5", dim=4, max_retries=2, backoff_base_s=0.01).embed(["a"])
    assert len(fake_openai.requests) == 3
