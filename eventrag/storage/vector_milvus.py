"""The vector store on Milvus through ``pymilvus.MilvusClient``: a local ``*.db`` path is Milvus Lite
(embedded, one process per directory), an ``http(s)://`` URI a Milvus server; one code path.

Collections have three fields: ``id`` (VARCHAR primary key), ``vector`` (FLOAT_VECTOR, HNSW index by
default) and ``meta`` (JSON). Lite quirks handled here: collections are loaded on first use after a
reopen; writes mark a collection dirty and it is flushed before the next search/count (unflushed
segments make searches ~50x slower); a data directory locked by another process raises
``StoreLocked`` naming the lock file. Filters come from dicts (``milvus_filter``), never raw text.

Performance (bench/storage.py, 100k x 384-d): Milvus Lite 3.2 makes one pure-Python pass over every
row of a collection per search *call* (dedup/tombstone mask in ``milvus_lite.search.executor_indexed``),
so a single-vector search costs O(rows) regardless of the index; pass many query vectors per
``search`` call to amortise it, or use a Milvus server (``http://``) for large collections. HNSW with
``search_ef=256`` gave recall@10 = 1.0 on clustered data (ef=64: 0.87); FLAT is slower in Lite.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Self

import numpy as np

# gRPC's C core prints its log lines onto the user's console, among them an ERROR-level GOAWAY
# "too_many_pings" each time Milvus Lite throttles the client's keepalive pings (harmless: the client
# reconnects). Silence the C core unless the user asked for its logs (failures still raise in Python);
# Milvus Lite's in-process gRPC server logs its unimplemented-method tracebacks through Python logging.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
logging.getLogger("grpc._server").setLevel(logging.CRITICAL)

from pymilvus import DataType, MilvusClient, MilvusException  # noqa: E402
from pymilvus.exceptions import ConnectionConfigException, MilvusUnavailableException  # noqa: E402

from eventrag.storage import milvus_lite as lite  # noqa: E402  (after the gRPC settings above)
from eventrag.storage.base import MAX_ID_LEN, MetadataFilter, Metric, VectorHit, VectorRecord, check_filter  # noqa: E402
from eventrag.storage.checks import check_ids  # noqa: E402
from eventrag.storage.errors import (  # noqa: E402
    CollectionNotFound,
    DimensionMismatch,
    InvalidInput,
    StorageError,
    StoreClosed,
    StoreLocked,
    StoreUnavailable,
)

logger = logging.getLogger(__name__)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
_ROWS_PER_CALL = 2000
_IDS_PER_QUERY = 500
_MAX_DIM = 32768
IndexType = Literal["HNSW", "FLAT"]
_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def _literal(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    # the escapes both Milvus Lite's tokenizer and the server grammar accept; other characters are literal
    return '"' + value.translate(_ESCAPES) + '"'


def milvus_filter(flt: MetadataFilter | None) -> str:
    """``{"doc_id": "d1", "kind": ["a", "b"]}`` -> ``meta["doc_id"] == "d1" and (meta["kind"] == "a" or ...)``.

    Keys must be identifiers (checked); values become escaped literals, so no value can alter the
    expression. ``in`` is spelled as ``or`` because Milvus Lite accepts ``in`` only on plain fields."""
    parts = []
    for key, value in check_filter(flt).items():
        values = value if isinstance(value, list) else [value]
        terms = [f'meta["{key}"] == {_literal(v)}' for v in values]
        parts.append(terms[0] if len(terms) == 1 else "(" + " or ".join(terms) + ")")
    return " and ".join(parts)


def _ids_filter(ids: Sequence[str]) -> str:
    """``id in [...]`` with escaped literals (pymilvus' own ``get(ids=...)`` does not escape quotes)."""
    return "id in [" + ", ".join(_literal(i) for i in ids) + "]"


class MilvusVectorStore:
    """``VectorStore`` on Milvus Lite or a Milvus server."""

    def __init__(
        self,
        uri: str | Path,
        *,
        token: str | None = None,
        index_type: IndexType = "HNSW",
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 200,
        search_ef: int = 256,
    ) -> None:
        uri = str(uri)
        self.is_lite = not uri.startswith(("http://", "https://"))
        if self.is_lite:
            path = Path(uri).expanduser()
            if path.suffix != ".db":
                raise InvalidInput(
                    f"a Milvus Lite path must end in '.db' (got {uri!r}); servers use http(s)://"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            uri = os.path.abspath(path)
        self.uri = uri
        self.index_type = index_type
        self.search_ef = search_ef
        self._build = {"M": hnsw_m, "efConstruction": hnsw_ef_construction} if index_type == "HNSW" else {}
        self._lock = threading.RLock()
        self._info: dict[str, tuple[int, str]] = {}  # collection -> (dim, metric), loaded
        self._dirty: set[str] = set()
        try:
            self._client: MilvusClient | None = lite.connect(uri, token, self.is_lite)
        except (ConnectionConfigException, MilvusException) as exc:
            holder = lite.lock_holder(Path(uri)) if self.is_lite and not lite.lite_in_use(uri) else None
            if holder:
                raise StoreLocked(
                    f"Milvus Lite data directory {uri} is in use by another process (lock {holder}); "
                    "Milvus Lite allows one process per directory: close the other one or use a Milvus server"
                ) from exc
            raise StoreUnavailable(f"cannot open Milvus at {uri}: {exc}") from exc
        if self.is_lite:
            lite.acquire_lite(uri)

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _call(self, what: str) -> Iterator[MilvusClient]:
        with self._lock:
            if self._client is None:
                raise StoreClosed(f"vector store {self.uri} is closed")
            try:
                yield self._client
            except StorageError:
                raise
            except MilvusUnavailableException as exc:
                raise StoreUnavailable(f"{what}: Milvus at {self.uri} is unavailable: {exc}") from exc
            except MilvusException as exc:
                raise StorageError(f"{what} failed on Milvus at {self.uri}: {exc}") from exc

    def _collection(self, name: str) -> tuple[int, str]:
        """(dim, metric) of a loaded collection; loads it on first use (needed after a reopen)."""
        if name in self._info:
            return self._info[name]
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidInput(f"collection name {name!r} must match {_NAME.pattern}")
        with self._call("open collection") as c:
            if not c.has_collection(name):
                raise CollectionNotFound(
                    f"no collection {name!r} in {self.uri}; call create_collection first"
                )
            desc = c.describe_collection(name)
            dim = next(int(f["params"]["dim"]) for f in desc["fields"] if f["name"] == "vector")
            metric = c.describe_index(name, "vector")["metric_type"]
            state = c.get_load_state(name).get("state")
            if getattr(state, "name", str(state)) != "Loaded":
                c.load_collection(name)
        self._info[name] = (dim, metric)
        return dim, metric

    def _matrix(self, vectors: Any, dim: int, name: str) -> np.ndarray:
        try:
            arr = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            lengths = (
                sorted({len(v) for v in vectors if hasattr(v, "__len__")})
                if hasattr(vectors, "__iter__")
                else []
            )
            if any(n != dim for n in lengths):
                raise DimensionMismatch(
                    f"collection {name!r} holds {dim}-d vectors, got lengths {lengths}"
                ) from exc
            raise InvalidInput(f"vectors must be numbers of equal length: {exc}") from exc
        if arr.ndim == 1 and arr.size:
            arr = arr[None, :]
        if arr.ndim != 2:
            raise InvalidInput(f"vectors must be a 2-D array (n, {dim}), got shape {arr.shape}")
        if arr.shape[0] and arr.shape[1] != dim:
            raise DimensionMismatch(f"collection {name!r} holds {dim}-d vectors, got {arr.shape[1]}-d")
        if not np.isfinite(arr).all():
            raise InvalidInput("vectors contain NaN or infinity")
        return arr

    def _flush_if_dirty(self, c: MilvusClient, name: str) -> None:
        if name in self._dirty:
            c.flush(name)
            self._dirty.discard(name)

    # ------------------------------------------------------------------ collections
    def create_collection(self, name: str, dim: int, metric: Metric = "COSINE") -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidInput(f"collection name {name!r} must match {_NAME.pattern}")
        if not isinstance(dim, int) or not 1 <= dim <= _MAX_DIM:
            raise InvalidInput(f"dim must be an integer in [1, {_MAX_DIM}], got {dim!r}")
        if metric not in ("COSINE", "IP", "L2"):
            raise InvalidInput(f"metric must be COSINE, IP or L2, got {metric!r}")
        with self._call("create_collection") as c:
            if c.has_collection(name):
                have_dim, have_metric = self._collection(name)
                if have_dim != dim:
                    raise DimensionMismatch(
                        f"collection {name!r} exists with dim {have_dim}, asked for {dim}"
                    )
                if have_metric != metric:
                    raise InvalidInput(
                        f"collection {name!r} exists with metric {have_metric}, asked for {metric}"
                    )
                return
            schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
            schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=MAX_ID_LEN)
            schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
            schema.add_field("meta", DataType.JSON)
            index = c.prepare_index_params()
            index.add_index(
                field_name="vector", index_type=self.index_type, metric_type=metric, params=self._build
            )
            c.create_collection(name, schema=schema, index_params=index, consistency_level="Strong")
        self._info.pop(name, None)
        self._collection(name)

    def has_collection(self, name: str) -> bool:
        with self._call("has_collection") as c:
            return bool(c.has_collection(name))

    def drop_collection(self, name: str) -> None:
        with self._call("drop_collection") as c:
            if c.has_collection(name):
                c.drop_collection(name)
            self._info.pop(name, None)
            self._dirty.discard(name)

    # ------------------------------------------------------------------ records
    def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: Any,
        metadata: Sequence[dict[str, Any]] | None = None,
    ) -> int:
        dim, _ = self._collection(name)
        ids = list(ids) if not isinstance(ids, str) else [ids]
        unique = check_ids(ids, "vector id")
        if len(unique) != len(ids):
            raise InvalidInput("ids in one upsert must be distinct")
        arr = self._matrix(vectors, dim, name) if ids else np.zeros((0, dim), np.float32)
        metas = list(metadata) if metadata is not None else [{} for _ in ids]
        if not (len(ids) == arr.shape[0] == len(metas)):
            raise InvalidInput(f"got {len(ids)} ids, {arr.shape[0]} vectors and {len(metas)} metadata dicts")
        for m in metas:
            if not isinstance(m, dict):
                raise InvalidInput(f"metadata must be dicts, got {type(m).__name__}")
            try:
                json.dumps(m, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InvalidInput(f"metadata is not JSON-serialisable: {exc}") from exc
        if not ids:
            return 0
        rows = [{"id": i, "vector": v, "meta": m} for i, v, m in zip(ids, arr.tolist(), metas, strict=True)]
        with self._call("upsert") as c:
            for i in range(0, len(rows), _ROWS_PER_CALL):
                c.upsert(name, rows[i : i + _ROWS_PER_CALL])
            self._dirty.add(name)
        return len(rows)

    def search(
        self,
        name: str,
        vectors: Any,
        top_k: int = 10,
        filter: MetadataFilter | None = None,
    ) -> list[list[VectorHit]]:
        dim, metric = self._collection(name)
        if not isinstance(top_k, int) or not 1 <= top_k <= 16384:
            raise InvalidInput(f"top_k must be an integer in [1, 16384], got {top_k!r}")
        arr = self._matrix(vectors, dim, name)
        if arr.shape[0] == 0:
            return []
        expr = milvus_filter(filter)
        params: dict[str, Any] = {"metric_type": metric, "params": {}}
        if self.index_type == "HNSW":
            params["params"]["ef"] = max(self.search_ef, top_k)
        with self._call("search") as c:
            self._flush_if_dirty(c, name)
            res = c.search(
                name,
                data=arr.tolist(),
                limit=top_k,
                filter=expr,
                output_fields=["meta"],
                search_params=params,
            )
        return [
            [
                VectorHit(id=h["id"], score=float(h["distance"]), metadata=h["entity"].get("meta") or {})
                for h in hits
            ]
            for hits in res
        ]

    def get(self, name: str, ids: Sequence[str]) -> list[VectorRecord]:
        self._collection(name)
        ids = check_ids(ids, "vector id")
        if not ids:
            return []
        found: dict[str, dict[str, Any]] = {}
        with self._call("get") as c:
            self._flush_if_dirty(c, name)
            for i in range(0, len(ids), _IDS_PER_QUERY):
                part = ids[i : i + _IDS_PER_QUERY]
                rows = c.query(
                    name, filter=_ids_filter(part), output_fields=["id", "vector", "meta"], limit=len(part)
                )
                found.update((r["id"], r) for r in rows)
        return [
            VectorRecord(
                id=i, vector=[float(x) for x in found[i]["vector"]], metadata=found[i].get("meta") or {}
            )
            for i in ids
            if i in found
        ]

    def delete(
        self, name: str, ids: Sequence[str] | None = None, filter: MetadataFilter | None = None
    ) -> int:
        self._collection(name)
        if ids is None and not filter:
            raise InvalidInput("delete needs ids or a non-empty filter (use drop_collection to remove all)")
        deleted = 0
        with self._call("delete") as c:
            if ids is not None:
                present = [r.id for r in self.get(name, ids)]
                for i in range(0, len(present), _IDS_PER_QUERY):
                    c.delete(name, filter=_ids_filter(present[i : i + _IDS_PER_QUERY]))
                deleted += len(present)
            if filter:
                self._flush_if_dirty(c, name)
                res = c.delete(name, filter=milvus_filter(filter))
                deleted += len(res) if isinstance(res, list) else int(res.get("delete_count", 0))
            self._dirty.add(name)
        return deleted

    def count(self, name: str, filter: MetadataFilter | None = None) -> int:
        self._collection(name)
        expr = milvus_filter(filter)
        with self._call("count") as c:
            self._flush_if_dirty(c, name)
            res = c.query(name, filter=expr, output_fields=["count(*)"])
        return int(res[0]["count(*)"])

    def flush(self, name: str, *, wait_index_s: float = 600.0) -> None:
        """Persist buffered writes and wait (up to ``wait_index_s``) until the vector index covers them:
        Milvus builds indexes in the background, and searches before that scan raw segments."""
        self._collection(name)
        with self._call("flush") as c:
            c.flush(name)
            self._dirty.discard(name)
            if self.is_lite:
                lite.drain_lite_background(self.uri, name, wait_index_s)
            deadline = time.monotonic() + wait_index_s
            while time.monotonic() < deadline:
                info = c.describe_index(name, "vector")
                if (
                    int(info.get("pending_index_rows", 0)) == 0
                    and info.get("state", "Finished") == "Finished"
                ):
                    return
                time.sleep(0.2)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
                if self.is_lite:
                    lite.release_lite(self.uri)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MilvusVectorStore({self.uri!r}, index={self.index_type})"
