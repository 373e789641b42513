"""The VectorStore contract on Milvus Lite (a real embedded Milvus, no doubles)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from eventrag.storage.errors import (
    CollectionNotFound,
    DimensionMismatch,
    InvalidInput,
    StoreClosed,
    StoreLocked,
)
from eventrag.storage.vector_milvus import MilvusVectorStore


def unit(n: int, dim: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_search_matches_exact_and_filters(milvus_lite: MilvusVectorStore, collection: str) -> None:
    milvus_lite.create_collection(collection, dim=16)
    vecs = unit(300, 16)
    ids = [f"v{i}" for i in range(300)]
    meta = [{"doc_id": f"d{i % 3}", "i": i, "even": i % 2 == 0} for i in range(300)]
    assert milvus_lite.upsert(collection, ids, vecs, meta) == 300
    queries = unit(5, 16, seed=1)
    hits = milvus_lite.search(collection, queries, top_k=5)
    exact = np.argsort(-(queries @ vecs.T), axis=1)[:, :5]
    for q, row, want in zip(queries, hits, exact, strict=True):
        assert [h.id for h in row] == [ids[j] for j in want]
        assert row[0].score == pytest.approx(float(q @ vecs[want[0]]), abs=1e-4)  # COSINE: similarity
        assert all(a.score >= b.score for a, b in zip(row, row[1:], strict=False))
    filtered = milvus_lite.search(collection, queries[:1], top_k=10, filter={"doc_id": "d1", "even": True})[0]
    assert len(filtered) == 10 and all(h.metadata["i"] % 6 == 4 for h in filtered)
    either = milvus_lite.search(collection, queries[:1], top_k=300, filter={"doc_id": ["d0", "d2"]})[0]
    assert len(either) == 200 and {h.metadata["doc_id"] for h in either} == {"d0", "d2"}
    assert milvus_lite.count(collection) == 300 and milvus_lite.count(collection, {"i": 7}) == 1


def test_upsert_is_idempotent_and_replaces(milvus_lite: MilvusVectorStore, collection: str) -> None:
    milvus_lite.create_collection(collection, dim=4, metric="L2")
    milvus_lite.create_collection(collection, dim=4, metric="L2")  # exists: no-op
    vecs = np.eye(4, dtype=np.float32)
    for _ in range(2):
        milvus_lite.upsert(collection, ["a", "b", "c", "d"], vecs, [{"n": i} for i in range(4)])
    assert milvus_lite.count(collection) == 4
    milvus_lite.upsert(collection, ["a"], [[0, 0, 0, 5]], [{"n": 99}])
    (rec,) = milvus_lite.get(collection, ["a"])
    assert rec.vector == [0, 0, 0, 5] and rec.metadata == {"n": 99}
    top = milvus_lite.search(collection, [[0, 0, 0, 5]], top_k=2)[0]
    assert top[0].id == "a" and top[0].score == pytest.approx(0.0)  # L2: distance, lower is closer


def test_get_delete_count(milvus_lite: MilvusVectorStore, collection: str) -> None:
    milvus_lite.create_collection(collection, dim=8)
    milvus_lite.upsert(
        collection, [f"x{i}" for i in range(20)], unit(20, 8), [{"doc_id": f"d{i % 4}"} for i in range(20)]
    )
    assert [r.id for r in milvus_lite.get(collection, ["x3", "nope", "x1"])] == ["x3", "x1"]
    assert milvus_lite.delete(collection, ids=["x0", "x1", "nope"]) == 2
    assert milvus_lite.delete(collection, filter={"doc_id": "d2"}) == 5
    assert milvus_lite.count(collection) == 13 and milvus_lite.count(collection, {"doc_id": "d2"}) == 0
    assert all(h.id not in {"x0", "x1"} for h in milvus_lite.search(collection, unit(3, 8, 5), top_k=13)[0])
    with pytest.raises(InvalidInput):
        milvus_lite.delete(collection)


def test_bad_input_writes_nothing(milvus_lite: MilvusVectorStore, collection: str) -> None:
    milvus_lite.create_collection(collection, dim=4)
    with pytest.raises(DimensionMismatch, match="4-d"):
        milvus_lite.upsert(collection, ["a", "b"], [[1, 2, 3, 4], [1, 2, 3]])
    with pytest.raises(DimensionMismatch):
        milvus_lite.upsert(collection, ["a"], [[1, 2, 3]])
    with pytest.raises(DimensionMismatch):
        milvus_lite.search(collection, [[1.0, 2.0]])
    with pytest.raises(DimensionMismatch):
        milvus_lite.create_collection(collection, dim=5)
    with pytest.raises(InvalidInput):
        milvus_lite.upsert(collection, ["a", "a"], np.ones((2, 4)))
    with pytest.raises(InvalidInput):
        milvus_lite.upsert(collection, ["a"], [[1, 2, float("nan"), 4]])
    with pytest.raises(InvalidInput):
        milvus_lite.upsert(collection, ["a"], np.ones((1, 4)), [{"k": object()}])
    with pytest.raises(InvalidInput):
        milvus_lite.upsert(collection, ["a", "b"], np.ones((1, 4)))
    with pytest.raises(InvalidInput):
        milvus_lite.create_collection("bad name; drop", dim=4)
    with pytest.raises(CollectionNotFound):
        milvus_lite.count("c_does_not_exist")
    assert milvus_lite.upsert(collection, [], []) == 0
    assert milvus_lite.search(collection, np.zeros((0, 4))) == []
    assert milvus_lite.count(collection) == 0


def test_reopen_loads_and_finds(tmp_path: Path) -> None:
    path = tmp_path / "reopen.db"
    with MilvusVectorStore(path) as store:
        store.create_collection("chunks", dim=8)
        store.upsert("chunks", ["a", "b"], unit(2, 8), [{"k": 1}, {"k": 2}])
    code = textwrap.dedent(
        f"""
        import numpy as np
        from eventrag.storage.vector_milvus import MilvusVectorStore
        with MilvusVectorStore({str(path)!r}) as s:
            v = s.get("chunks", ["b"])[0].vector
            print(s.count("chunks"), s.search("chunks", [v], top_k=1)[0][0].id)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["2", "b"]
    with pytest.raises(StoreClosed):
        store.count("chunks")


def test_locked_lite_dir_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from eventrag.storage.vector_milvus import MilvusVectorStore
            s = MilvusVectorStore({str(path)!r})
            print("ready", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLocked, match=r"LOCK"):
            MilvusVectorStore(path)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    with MilvusVectorStore(path) as store:  # released once the holder exits
        assert not store.has_collection("anything")
