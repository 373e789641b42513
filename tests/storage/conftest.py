"""Storage fixtures: real stores only. Graph tests run against the embedded SQLite store and a real
Neo4j server (``neo4j_uri`` from tests/conftest.py); vector tests against Milvus Lite."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from eventrag.storage.base import GraphStore

GRAPH_BACKENDS = ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)]


def fresh_namespace() -> str:
    return "t" + uuid.uuid4().hex[:12]


@pytest.fixture(params=GRAPH_BACKENDS)
def graph_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def open_graph(
    graph_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., GraphStore]]:
    """A factory ``open_graph(namespace=None) -> GraphStore`` on the parametrised backend; every store
    it opened is cleared (Neo4j) and closed afterwards."""
    opened: list[GraphStore] = []
    uri = request.getfixturevalue("neo4j_uri") if graph_backend == "neo4j" else None
    default_ns = fresh_namespace()

    def factory(namespace: str | None = None) -> GraphStore:
        ns = namespace or default_ns
        if graph_backend == "neo4j":
            from eventrag.storage.graph_neo4j import Neo4jGraphStore

            store: GraphStore = Neo4jGraphStore(uri, namespace=ns)
        else:
            from eventrag.storage.graph_sqlite import SqliteGraphStore

            store = SqliteGraphStore(tmp_path / "graph.sqlite", namespace=ns)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()
    if graph_backend == "neo4j":  # leave the shared server as we found it
        for ns in {s.namespace for s in opened}:
            with factory(ns) as cleaner:
                cleaner.clear()


@pytest.fixture
def graph(open_graph: Callable[..., GraphStore]) -> GraphStore:
    return open_graph()


@pytest.fixture(scope="session")
def milvus_lite(tmp_path_factory: pytest.TempPathFactory):
    """One Milvus Lite store per session (opening one costs seconds); tests use fresh collections."""
    from eventrag.storage.vector_milvus import MilvusVectorStore

    store = MilvusVectorStore(tmp_path_factory.mktemp("milvus") / "vectors.db")
    yield store
    store.close()


@pytest.fixture
def collection(milvus_lite) -> Iterator[str]:
    name = "c_" + uuid.uuid4().hex[:12]
    yield name
    milvus_lite.drop_collection(name)
