"""Unavailable and locked stores fail with clear types; the factories open what Settings name."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from eventfold.settings import Settings
from eventrag.storage.base import GraphStore, Node, VectorStore
from eventrag.storage.errors import InvalidInput, StoreLocked, StoreUnavailable
from eventrag.storage.factory import collection_name, open_graph_store, open_vector_store
from eventrag.storage.graph_sqlite import SqliteGraphStore


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("scheme", ["bolt", "neo4j"])
def test_unreachable_neo4j_is_store_unavailable(scheme: str) -> None:
    from eventrag.storage.graph_neo4j import Neo4jGraphStore

    uri = f"{scheme}://127.0.0.1:{closed_port()}"
    start = time.monotonic()
    with pytest.raises(StoreUnavailable, match="unreachable|cannot connect"):
        Neo4jGraphStore(uri, namespace="x", connection_timeout_s=1.0)
    assert time.monotonic() - start < 30


def test_bad_uris_and_namespaces_are_invalid_input(tmp_path: Path) -> None:
    from eventrag.storage.graph_neo4j import Neo4jGraphStore
    from eventrag.storage.vector_milvus import MilvusVectorStore

    with pytest.raises(InvalidInput):
        Neo4jGraphStore("http://127.0.0.1:7474", namespace="x")
    with pytest.raises(InvalidInput):
        SqliteGraphStore(tmp_path / "g.sqlite", namespace="a b")
    with pytest.raises(InvalidInput, match=r"\.db"):
        MilvusVectorStore(tmp_path / "vectors")


def test_locked_sqlite_is_store_locked_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "locked.sqlite"
    SqliteGraphStore(path, namespace="n").close()
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sqlite3, sys
            con = sqlite3.connect({str(path)!r}, isolation_level=None)
            con.execute("BEGIN IMMEDIATE")
            print("locked", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    store = SqliteGraphStore(path, namespace="n", busy_timeout_s=0.3)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreLocked, match="locked"):
            store.upsert_nodes([Node(id="a", label="Event")])
        assert store.count() == (0, 0)  # readers are not blocked (WAL)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert store.upsert_nodes([Node(id="a", label="Event")]) == 1
    store.close()


def test_factories_follow_settings(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, index="idx")
    with open_graph_store(settings) as graph:
        assert isinstance(graph, SqliteGraphStore) and isinstance(graph, GraphStore)
        assert graph.path == settings.graph_path() and graph.namespace == "default"
    with open_vector_store(settings) as vectors:
        assert isinstance(vectors, VectorStore)
        name = collection_name(settings, "chunks")
        vectors.create_collection(name, dim=3)
        assert vectors.has_collection(name)
    assert Path(settings.vector_uri()).is_dir()


@pytest.mark.neo4j
def test_factory_opens_neo4j_over_routing_uri(neo4j_uri: str) -> None:
    from eventrag.storage.graph_neo4j import Neo4jGraphStore

    routing = neo4j_uri.replace("bolt://", "neo4j://")
    settings = Settings(graph={"backend": "neo4j", "uri": routing, "namespace": "factory_test"})
    with open_graph_store(settings) as graph:
        assert isinstance(graph, Neo4jGraphStore)
        try:
            graph.upsert_nodes([Node(id="a", label="Document")])
            assert [n.label for n in graph.get_nodes(["a"])] == ["Document"]
        finally:
            graph.clear()


def test_milvus_lite_survives_80_s_idle_and_a_second_open(tmp_path: Path) -> None:
    """pymilvus pings an idle Lite server every 10 s; after about a minute the server answered GOAWAY
    "too_many_pings" and a second store on the same index (as `eval` opens after indexing) failed
    as StoreLocked, blaming this very process. Both stores must work after a minute of idle."""
    from eventrag.storage.vector_milvus import MilvusVectorStore

    first = MilvusVectorStore(tmp_path / "milvus.db")
    try:
        first.create_collection("c", dim=4)
        first.upsert("c", ["a", "b"], [[1, 0, 0, 0], [0, 1, 0, 0]])
        assert first.search("c", [[1, 0, 0, 0]], top_k=1)[0][0].id == "a"
        time.sleep(80)
        second = MilvusVectorStore(tmp_path / "milvus.db")
        try:
            assert second.search("c", [[0, 1, 0, 0]], top_k=1)[0][0].id == "b"
        finally:
            second.close()
        assert first.search("c", [[1, 0, 0, 0]], top_k=1)[0][0].id == "a"
    finally:
        first.close()
