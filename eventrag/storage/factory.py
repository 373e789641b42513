"""Open the configured stores from ``eventfold.settings.Settings`` (backend modules load lazily)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventrag.storage.base import GraphStore, VectorStore

if TYPE_CHECKING:
    from eventfold.settings import Settings


def open_graph_store(settings: Settings, namespace: str | None = None) -> GraphStore:
    """``graph.backend == "embedded"``: SQLite file at ``settings.graph_path()``;
    ``"neo4j"``: the server at ``graph.uri``. ``namespace`` defaults to ``graph.namespace``."""
    ns = namespace or settings.graph.namespace
    if settings.graph.backend == "neo4j":
        from eventrag.storage.graph_neo4j import Neo4jGraphStore

        password = settings.graph.password.get_secret_value() if settings.graph.password else None
        return Neo4jGraphStore(
            settings.graph.uri,
            namespace=ns,
            user=settings.graph.user,
            password=password,
            database=settings.graph.database,
        )
    from eventrag.storage.graph_sqlite import SqliteGraphStore

    return SqliteGraphStore(settings.graph_path(), namespace=ns)


def open_vector_store(settings: Settings) -> VectorStore:
    """Milvus Lite for a local path (default ``settings.vector_uri()``), a Milvus server for http(s)://."""
    from eventrag.storage.vector_milvus import MilvusVectorStore

    token = settings.vector.token.get_secret_value() if settings.vector.token else None
    return MilvusVectorStore(settings.vector_uri(), token=token)


def collection_name(settings: Settings, kind: str) -> str:
    """The collection for ``kind`` (e.g. "chunks", "events") under the configured prefix."""
    return f"{settings.vector.collection_prefix}_{kind}"
