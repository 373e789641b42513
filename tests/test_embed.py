"""Embeddings with the packaged all-MiniLM-L6-v2 (the real model). The OpenAI-compatible embedder is
tested in tests/llm/test_openai_embedder.py against the local HTTP server fixture."""

from __future__ import annotations

import numpy as np
import pytest

from eventfold.settings import Settings
from eventrag.embed import Embedder, EmbeddingError, SentenceTransformerEmbedder, make_embedder


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    embedder = make_embedder(Settings())
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder


def test_shape_dtype_and_normalisation(minilm):
    vectors = minilm.embed(["Acme was founded in 1999.", "The board met in March.", "x"])
    assert isinstance(minilm, Embedder)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32 and minilm.dim == 384
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


def test_similar_sentences_are_closer_than_unrelated(minilm):
    a, b, c = minilm.embed([
        "Acme Corp acquired the startup Widgetly in 2015.",
        "In 2015 Widgetly was bought by Acme Corporation.",
        "Bake the bread at 220 degrees for forty minutes.",
    ])
    assert a @ b > 0.7 and a @ c < 0.3 and a @ b > a @ c + 0.4


def test_batching_gives_the_same_vectors(minilm):
    texts = [f"Event number {i} happened on day {i}." for i in range(7)]
    small = SentenceTransformerEmbedder(minilm.model_path, batch_size=2)
    np.testing.assert_allclose(small.embed(texts), minilm.embed(texts), atol=1e-5)


def test_wrong_dimension_is_reported(minilm):
    with pytest.raises(EmbeddingError, match="EVENTFOLD_EMBED__DIM=384"):
        SentenceTransformerEmbedder(minilm.model_path, dim=768).embed(["x"])


def test_late_chunking_one_pass_gives_text_and_span_vectors(minilm):
    text = ("Pan (2015 film)\nPan is a 2015 fantasy film directed by Joe Wright. "
            "The film stars Hugh Jackman as Blackbeard. It was released by Warner Bros.")
    first = text.index("Pan is")
    second = text.index("The film stars")
    vecs, spans = minilm.embed_with_spans([text, "short"], [[(first, second - 1), (second, len(text)), (5000, 5010)], []])
    np.testing.assert_allclose(vecs, minilm.embed([text, "short"]), atol=1e-5)  # same as embed()
    director, cast, outside = spans[0]
    assert outside is None and spans[1] == []  # a span beyond the text has no tokens
    np.testing.assert_allclose([np.linalg.norm(director), np.linalg.norm(cast)], 1.0, atol=1e-5)
    q_dir, q_cast = minilm.embed(["Who directed the film Pan?", "Who played Blackbeard?"])
    assert q_dir @ director > q_dir @ cast and q_cast @ cast > q_cast @ director  # each span keeps its own content
    with pytest.raises(ValueError, match="span lists"):
        minilm.embed_with_spans(["a"], [])


def test_query_fast_path_equals_the_sentence_transformers_pipeline(minilm):
    """A few queries skip `encode`'s bookkeeping (padding, mean pooling over the mask ourselves): the
    vectors must be those of `encode`, for mixed lengths and a text past the 256-token window."""
    texts = ["Who directed Brother?", "Where was the director of film The Rank Organisation born, and when?",
             "x", " ".join(["river"] * 400)]
    fast = minilm.embed(texts)  # <= SMALL_BATCH: the direct path
    model = minilm._load()
    from eventrag.embed import _plain_mean_pooling

    assert _plain_mean_pooling(model)
    slow = model.encode(texts, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
    np.testing.assert_allclose(fast, slow, atol=1e-5)
    many = minilm.embed(texts * 3)  # > SMALL_BATCH: encode itself
    np.testing.assert_allclose(many[: len(texts)], fast, atol=1e-5)
