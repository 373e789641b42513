"""One call to open everything EventRAG needs: stores, embedder, extractor, indexer and retriever.

    with open_stack(settings) as stack:
        stack.indexer.index_paths(["docs/"])
        result = stack.retriever.retrieve("Who led the repairs?", mode="event", top_k=5)
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from eventfold.llm.types import ChatModel
from eventfold.settings import Settings
from eventrag.embed import Embedder
from eventrag.index.chunking import ChunkingConfig
from eventrag.index.corpora import CorpusRegistry
from eventrag.index.extract import Extractor, LLMExtractor
from eventrag.index.indexer import Indexer
from eventrag.index.rules_extract import RuleExtractor
from eventrag.query.cache import QueryCache
from eventrag.query.ranking import RetrievalConfig
from eventrag.query.retrieve import Retriever
from eventrag.storage.base import GraphStore, VectorStore
from eventrag.storage.factory import collection_name, open_graph_store, open_vector_store

ExtractMode = Literal["auto", "llm", "rules"]
KINDS = ("chunks", "events", "entities")


@dataclass
class EventRAGStack:
    settings: Settings
    graph: GraphStore
    vectors: VectorStore
    embedder: Embedder
    indexer: Indexer
    retriever: Retriever
    chat_model: ChatModel | None = None
    namespace: str = "default"
    _closed: bool = field(default=False, repr=False)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.vectors.close()
        finally:
            self.graph.close()

    def __enter__(self) -> EventRAGStack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def safe_name(name: str, allowed: str = r"A-Za-z0-9_-") -> str:
    """`name` if every character is in `allowed`; else the characters replaced by '_' plus a hash of
    the whole name, so two names never map to one (``p.col`` and ``p_col`` stay apart)."""
    if re.fullmatch(f"[{allowed}]+", name):
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]
    return f"{re.sub(f'[^{allowed}]', '_', name)}_{digest}"


def stack_namespace(settings: Settings) -> str:
    """The graph namespace: `graph.namespace` when set, else the index name (so indexes never mix).

    In a store that several indexes share (Neo4j, or a SQLite file named by `graph.path`) a name with
    characters a namespace cannot hold gets a hash suffix; a per-index SQLite file keeps the plain
    mapping (nothing to clash with, and existing indexes stay readable)."""
    if settings.graph.namespace != "default":
        return settings.graph.namespace
    if settings.graph.backend == "neo4j" or settings.graph.path is not None:
        return safe_name(settings.index)
    return re.sub(r"[^A-Za-z0-9_-]", "_", settings.index)


def stack_collections(settings: Settings, namespace: str) -> dict[str, str]:
    """Vector collection per kind; unique per namespace on a shared Milvus (`vector.uri` set), the
    plain mapping in a per-index Milvus Lite file."""
    if settings.vector.uri is not None:
        return {k: safe_name(collection_name(settings, f"{namespace}_{k}"), "A-Za-z0-9_") for k in KINDS}
    return {k: re.sub(r"[^A-Za-z0-9_]", "_", collection_name(settings, f"{namespace}_{k}")) for k in KINDS}


def make_extractor(mode: ExtractMode, chat_model: ChatModel | None, settings: Settings) -> tuple[Extractor, ChatModel | None]:
    if mode == "rules" or (mode == "auto" and chat_model is None):
        return RuleExtractor(), chat_model
    if chat_model is None:
        from eventfold.llm.factory import make_chat_model

        chat_model = make_chat_model(settings)
    return LLMExtractor(chat_model, concurrency=settings.llm.concurrency), chat_model


def open_stack(settings: Settings, chat_model: ChatModel | None = None, embedder: Any = None, *,
               extract: ExtractMode = "auto", retrieval: RetrievalConfig | None = None,
               chunking: ChunkingConfig | None = None, fusion_threshold: float = 0.9,
               batch_docs: int = 32) -> EventRAGStack:
    """Open the configured stores and build the indexer and retriever on them.

    `extract`: "llm" (one structured call per chunk; a chat model is made from the settings if none is
    given), "rules" (no LLM), or "auto" (LLM when `chat_model` is given, else rules). The retriever uses
    `chat_model` (when given) for decomposition and reflection in agentic mode.
    """
    if embedder is None:
        from eventrag.embed import make_embedder

        embedder = make_embedder(settings)
    extractor, chat_model = make_extractor(extract, chat_model, settings)
    namespace = stack_namespace(settings)
    if settings.graph.backend == "embedded":
        settings.graph_path().parent.mkdir(parents=True, exist_ok=True)
    if "://" not in settings.vector_uri():
        from pathlib import Path

        Path(settings.vector_uri()).parent.mkdir(parents=True, exist_ok=True)
    graph = open_graph_store(settings, namespace=namespace)
    try:
        vectors = open_vector_store(settings)
    except Exception:
        graph.close()
        raise
    collections = stack_collections(settings, namespace)
    cache = QueryCache(graph, vectors, collections, dim=embedder.dim)
    try:
        indexer = Indexer(graph, vectors, embedder, extractor, collections=collections, chunking=chunking,
                          fusion_threshold=fusion_threshold, batch_docs=batch_docs, on_change=cache.invalidate,
                          corpora=CorpusRegistry(settings.home / "corpora.json"))
    except Exception:
        vectors.close()
        graph.close()
        raise
    retriever = Retriever(graph, vectors, embedder, collections, chat_model=chat_model, config=retrieval,
                          cache=cache)
    return EventRAGStack(settings=settings, graph=graph, vectors=vectors, embedder=embedder, indexer=indexer,
                         retriever=retriever, chat_model=chat_model, namespace=namespace)
