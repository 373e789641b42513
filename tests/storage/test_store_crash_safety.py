"""Kill a writer process in the middle of a batch: the store stays consistent (every batch is there
whole or not at all), and re-running the writer completes it exactly.

Each writer waits for a line on stdin before every batch, so the test decides how far it can get
before the kill: a fast backend cannot finish the whole run inside the kill's sleep."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

BATCHES, SIZE = 6, 600

WRITER = textwrap.dedent(
    """
    import sys
    from eventrag.storage.base import Edge, Node
    backend, target, ns, batches, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    if backend == "neo4j":
        from eventrag.storage.graph_neo4j import Neo4jGraphStore
        store = Neo4jGraphStore(target, namespace=ns)
    else:
        from eventrag.storage.graph_sqlite import SqliteGraphStore
        store = SqliteGraphStore(target, namespace=ns)
    for b in range(batches):
        sys.stdin.readline()
        ids = [f"n{b}_{i}" for i in range(size)]
        store.upsert_nodes([Node(id=i, label="Event", props={"name": i, "b": b}, doc_ids=[f"d{b}"]) for i in ids])
        store.upsert_edges([Edge(src=ids[i], dst=ids[(i + 1) % size], type="BEFORE", doc_ids=[f"d{b}"])
                            for i in range(size)])
        print(f"batch {b}", flush=True)
    store.close()
    print("done", flush=True)
    """
)


def start_writer(cmd: list[str], batches_allowed: int) -> subprocess.Popen[str]:
    """Start a writer allowed to begin `batches_allowed` batches; it blocks before the next one."""
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path.cwd()
    )
    proc.stdin.write("go\n" * batches_allowed)
    proc.stdin.flush()
    return proc


def kill_after(proc: subprocess.Popen[str], batches: int) -> None:
    """Wait for `batches` acknowledged batches, then SIGKILL the writer inside the next one."""
    for _ in range(batches):
        line = proc.stdout.readline()
        assert line.startswith("batch"), proc.stderr.read()[-2000:]
    time.sleep(0.05)  # inside the next (last allowed) batch's transaction, or just after it
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def run_writer(args: list[str], kill_after_batches: int | None) -> str:
    cmd = [sys.executable, "-c", WRITER, *args]
    if kill_after_batches is None:
        proc = start_writer(cmd, BATCHES)
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        return out
    kill_after(start_writer(cmd, kill_after_batches + 1), kill_after_batches)
    return ""


def test_killed_writer_leaves_whole_batches_and_rerun_completes(
    graph_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    ns = "crash" + uuid.uuid4().hex[:10]
    if graph_backend == "neo4j":
        from eventrag.storage.graph_neo4j import Neo4jGraphStore

        target = request.getfixturevalue("neo4j_uri")
        open_store = lambda: Neo4jGraphStore(target, namespace=ns)  # noqa: E731
    else:
        from eventrag.storage.graph_sqlite import SqliteGraphStore

        target = str(tmp_path / "crash.sqlite")
        open_store = lambda: SqliteGraphStore(target, namespace=ns)  # noqa: E731
    args = [graph_backend, target, ns, str(BATCHES), str(SIZE)]
    run_writer(args, kill_after_batches=2)
    with open_store() as store:
        try:
            nodes, edges = store.count()
            assert 2 * SIZE <= nodes <= 3 * SIZE, "acknowledged batches survive; none past the allowed one"
            assert nodes % SIZE == 0 and edges % SIZE == 0, (nodes, edges)  # no partial batch
            assert edges in (nodes, nodes - SIZE)  # at most the last batch's edges are missing
            assert run_writer(args, kill_after_batches=None).strip().endswith("done")
            assert store.count() == (BATCHES * SIZE, BATCHES * SIZE)
            assert store.stats().documents == BATCHES
            ring = store.expand(["n5_0"], hops=2, direction="out")
            assert [n.node.id for n in ring.nodes] == ["n5_0", "n5_1", "n5_2"]
        finally:
            if graph_backend == "neo4j":
                store.clear()
    if graph_backend == "embedded":
        import sqlite3

        with sqlite3.connect(target) as con:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert con.execute("PRAGMA foreign_key_check").fetchall() == []


VEC_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from eventrag.storage.vector_milvus import MilvusVectorStore
    path, batches, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = MilvusVectorStore(path)
    store.create_collection("crash", dim=8)
    for b in range(batches):
        sys.stdin.readline()
        ids = [f"v{b}_{i}" for i in range(size)]
        vecs = np.full((size, 8), b + 1, dtype=np.float32) + np.arange(size, dtype=np.float32)[:, None]
        store.upsert("crash", ids, vecs, [{"batch": b, "i": i} for i in range(size)])
        print(f"batch {b}", flush=True)
    store.flush("crash")
    store.close()
    print("done", flush=True)
    """
)


def test_killed_milvus_lite_writer_recovers(tmp_path: Path) -> None:
    from eventrag.storage.vector_milvus import MilvusVectorStore

    path, batches, size = str(tmp_path / "crash.db"), 8, 400
    cmd = [sys.executable, "-c", VEC_WRITER, path, str(batches), str(size)]
    kill_after(start_writer(cmd, 3), 2)
    with MilvusVectorStore(path) as store:  # the dead writer's lock is gone; the WAL replays
        n = store.count("crash")
        assert 2 * size <= n <= 3 * size, n  # acknowledged upserts survived the kill
        for rec in store.get("crash", ["v0_0", "v1_7"]):
            b, i = rec.metadata["batch"], rec.metadata["i"]
            assert rec.vector == [float(b + 1 + i)] * 8  # records are whole and consistent
    proc = start_writer(cmd, batches)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0 and out.strip().endswith("done"), err[-2000:]
    with MilvusVectorStore(path) as store:
        assert store.count("crash") == batches * size
        assert store.count("crash", {"batch": 3}) == size
