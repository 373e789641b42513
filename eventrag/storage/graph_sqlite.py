"""The embedded graph store: one SQLite file (WAL), transactional batches, k-hop by recursive SQL.

Layout: ``nodes`` (integer ``nid``, unique ``(ns, id)``), ``edges`` on node ``nid``s (unique
``(src, type, dst)``, indexed both ways), and provenance tables ``node_docs``/``edge_docs`` indexed by
document, so ``delete_document`` touches only that document's rows. Deletes cascade via foreign keys.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from eventrag.storage import checks, codec
from eventrag.storage.base import (
    EDGE_TYPES,
    DeleteResult,
    Edge,
    Expansion,
    GraphStats,
    Node,
    check_edge_type,
    check_id,
)
from eventrag.storage.errors import InvalidInput, MissingNode, StorageError, StoreClosed, sqlite_failure
from eventrag.storage.graph_front import ExpandingStore, Walk
from eventrag.storage.graph_sqlite_walk import walk

SCHEMA_VERSION = "1"
_CHUNK = 500  # ids per IN (...) query
_TYPE_CODE = {t: i for i, t in enumerate(EDGE_TYPES)}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes(
    nid INTEGER PRIMARY KEY,
    ns TEXT NOT NULL,
    id TEXT NOT NULL,
    label TEXT NOT NULL,
    props TEXT NOT NULL,
    name_key TEXT,
    time_start TEXT GENERATED ALWAYS AS (json_extract(props, '$.time_start')) STORED,
    time_end TEXT GENERATED ALWAYS AS (json_extract(props, '$.time_end')) STORED,
    UNIQUE(ns, id)
);
CREATE INDEX IF NOT EXISTS nodes_name ON nodes(ns, name_key);
CREATE INDEX IF NOT EXISTS nodes_label ON nodes(ns, label);
CREATE TABLE IF NOT EXISTS node_docs(
    nid INTEGER NOT NULL REFERENCES nodes(nid) ON DELETE CASCADE,
    doc_id TEXT NOT NULL,
    PRIMARY KEY(nid, doc_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS node_docs_doc ON node_docs(doc_id);
CREATE TABLE IF NOT EXISTS edges(
    eid INTEGER PRIMARY KEY,
    src INTEGER NOT NULL REFERENCES nodes(nid) ON DELETE CASCADE,
    type INTEGER NOT NULL,
    dst INTEGER NOT NULL REFERENCES nodes(nid) ON DELETE CASCADE,
    inferred INTEGER NOT NULL,
    props TEXT NOT NULL,
    UNIQUE(src, type, dst)
);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst, type, src);
CREATE TABLE IF NOT EXISTS edge_docs(
    eid INTEGER NOT NULL REFERENCES edges(eid) ON DELETE CASCADE,
    doc_id TEXT NOT NULL,
    PRIMARY KEY(eid, doc_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edge_docs_doc ON edge_docs(doc_id);
"""

_UPSERT_NODE = """
INSERT INTO nodes(ns, id, label, props, name_key) VALUES (?, ?, ?, ?, ?)
ON CONFLICT(ns, id) DO UPDATE SET
    label = excluded.label,
    props = ef_merge(nodes.props, excluded.props),
    name_key = ef_fold(json_extract(ef_merge(nodes.props, excluded.props), '$.name'))
"""
_UPSERT_EDGE = """
INSERT INTO edges(src, type, dst, inferred, props) VALUES (?, ?, ?, ?, ?)
ON CONFLICT(src, type, dst) DO UPDATE SET
    inferred = edges.inferred AND excluded.inferred,
    props = ef_merge(edges.props, excluded.props)
"""


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _qs(n: int) -> str:
    return ",".join("?" * n)


class SqliteGraphStore(ExpandingStore):
    """``GraphStore`` on a SQLite file; thread-safe (one connection behind a lock)."""

    def __init__(self, path: str | Path, namespace: str = "default", *, busy_timeout_s: float = 30.0) -> None:
        if not namespace or not all(c.isalnum() or c in "_-" for c in namespace):
            raise InvalidInput(f"namespace must be letters, digits, '_' or '-', got {namespace!r}")
        self.namespace = namespace
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            con = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open graph store {self.path}: {exc}") from exc
        con.create_function("ef_merge", 2, codec.merge_props_json, deterministic=True)
        con.create_function("ef_fold", 1, checks.fold_name, deterministic=True)
        self._con: sqlite3.Connection | None = con
        try:
            self._open_schema()
        except StorageError:
            self.close()  # a damaged or foreign file: no connection left behind
            raise

    def _open_schema(self) -> None:
        with self._sql("open") as c:
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("PRAGMA synchronous=NORMAL")
            c.execute("PRAGMA foreign_keys=ON")
            c.execute("PRAGMA cache_size=-65536")
            c.execute("PRAGMA temp_store=MEMORY")
        with self._tx("create schema") as c:
            for statement in _SCHEMA.split(";"):  # executescript() would commit mid-transaction
                if statement.strip():
                    c.execute(statement)
            c.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            found = c.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
        if found != SCHEMA_VERSION:
            raise StorageError(f"{self.path} has graph schema v{found}; this code reads v{SCHEMA_VERSION}")

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _sql(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._con is None:
                raise StoreClosed(f"graph store {self.path} is closed")
            try:
                yield self._con
            except sqlite3.Error as exc:
                raise sqlite_failure(exc, what, self.path) from exc

    @contextmanager
    def _tx(self, what: str) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed whole, or rolled back on any exception."""
        with self._sql(what) as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def _nids(self, con: sqlite3.Connection, ids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for part in _chunks(ids):
            rows = con.execute(
                f"SELECT id, nid FROM nodes WHERE ns = ? AND id IN ({_qs(len(part))})",
                (self.namespace, *part),
            )
            out.update(rows)
        return out

    # ------------------------------------------------------------------ writes
    def upsert_nodes(self, nodes: Sequence[Node]) -> int:
        batch = checks.check_nodes(nodes, self.namespace)
        if not batch:
            return 0
        rows = [
            (self.namespace, n.id, n.label, codec.dumps(n.props), checks.fold_name(n.props.get("name")))
            for n in batch
        ]
        with self._tx("upsert_nodes") as con:
            con.executemany(_UPSERT_NODE, rows)
            if any(n.doc_ids for n in batch):
                nids = self._nids(con, [n.id for n in batch if n.doc_ids])
                con.executemany(
                    "INSERT OR IGNORE INTO node_docs VALUES (?, ?)",
                    [(nids[n.id], d) for n in batch for d in n.doc_ids],
                )
        return len(batch)

    def upsert_edges(self, edges: Sequence[Edge]) -> int:
        batch = checks.check_edges(edges)
        if not batch:
            return 0
        with self._tx("upsert_edges") as con:
            nids = self._nids(con, list({i for e in batch for i in (e.src, e.dst)}))
            missing = sorted({i for e in batch for i in (e.src, e.dst) if i not in nids})
            if missing:
                raise MissingNode(
                    f"{len(missing)} edge end(s) not in namespace {self.namespace!r}: {missing[:5]}; "
                    "upsert the nodes first (nothing of this batch was written)"
                )
            keys = [(nids[e.src], _TYPE_CODE[e.type], nids[e.dst]) for e in batch]
            con.executemany(
                _UPSERT_EDGE,
                [(*k, int(e.inferred), codec.dumps(e.props)) for k, e in zip(keys, batch, strict=True)],
            )
            doc_rows = [(k, d) for k, e in zip(keys, batch, strict=True) for d in e.doc_ids]
            con.executemany(
                "INSERT OR IGNORE INTO edge_docs SELECT eid, ? FROM edges WHERE src = ? AND type = ? AND dst = ?",
                [(d, *k) for k, d in doc_rows],
            )
        return len(batch)

    def delete_edges(self, keys: Sequence[tuple[str, str, str]]) -> int:
        wanted = [(check_id(a, "edge end"), check_edge_type(t), check_id(b, "edge end")) for a, t, b in keys]
        if not wanted:
            return 0
        with self._tx("delete_edges") as con:
            nids = self._nids(con, list({i for a, _, b in wanted for i in (a, b)}))
            rows = [(nids[a], _TYPE_CODE[t], nids[b]) for a, t, b in wanted if a in nids and b in nids]
            deleted = 0
            for row in dict.fromkeys(rows):  # edge_docs rows go with their edge (ON DELETE CASCADE)
                deleted += con.execute("DELETE FROM edges WHERE src = ? AND type = ? AND dst = ?", row).rowcount
        return deleted

    def delete_document(self, doc_id: str) -> DeleteResult:
        check_id(doc_id, "doc_id")
        ns = self.namespace
        res = DeleteResult()
        with self._tx("delete_document") as con:
            con.execute("CREATE TEMP TABLE IF NOT EXISTS ef_doomed(nid INTEGER PRIMARY KEY)")
            con.execute("DELETE FROM ef_doomed")
            con.execute(
                """INSERT INTO ef_doomed SELECT d.nid FROM node_docs d JOIN nodes n ON n.nid = d.nid
                   WHERE d.doc_id = ? AND n.ns = ?
                   AND NOT EXISTS (SELECT 1 FROM node_docs o WHERE o.nid = d.nid AND o.doc_id <> d.doc_id)""",
                (doc_id, ns),
            )
            res.edges_deleted = con.execute(
                """SELECT count(*) FROM edges WHERE src IN (SELECT nid FROM ef_doomed)
                   OR dst IN (SELECT nid FROM ef_doomed)"""
            ).fetchone()[0]
            only = """FROM edge_docs d JOIN edges e ON e.eid = d.eid JOIN nodes n ON n.nid = e.src
                      WHERE d.doc_id = ? AND n.ns = ?"""
            lone = con.execute(
                f"""SELECT d.eid {only} AND e.src NOT IN (SELECT nid FROM ef_doomed)
                    AND e.dst NOT IN (SELECT nid FROM ef_doomed)
                    AND NOT EXISTS (SELECT 1 FROM edge_docs o WHERE o.eid = d.eid AND o.doc_id <> d.doc_id)""",
                (doc_id, ns),
            ).fetchall()
            res.edges_deleted += len(lone)
            con.executemany("DELETE FROM edges WHERE eid = ?", lone)
            res.nodes_deleted = con.execute(
                "DELETE FROM nodes WHERE nid IN (SELECT nid FROM ef_doomed)"
            ).rowcount
            res.edges_updated = con.execute(
                f"DELETE FROM edge_docs WHERE doc_id = ? AND eid IN (SELECT d.eid {only})",
                (doc_id, doc_id, ns),
            ).rowcount
            res.nodes_updated = con.execute(
                "DELETE FROM node_docs WHERE doc_id = ? AND nid IN (SELECT nid FROM nodes WHERE ns = ?)",
                (doc_id, ns),
            ).rowcount
        return res

    def clear(self) -> None:
        with self._tx("clear") as con:
            con.execute("DELETE FROM nodes WHERE ns = ?", (self.namespace,))

    # ------------------------------------------------------------------ reads
    def _load_nodes(self, con: sqlite3.Connection, nids: Sequence[int]) -> dict[int, Node]:
        out: dict[int, Node] = {}
        docs: dict[int, list[str]] = {}
        for part in _chunks(nids):
            q = _qs(len(part))
            for nid, doc in con.execute(f"SELECT nid, doc_id FROM node_docs WHERE nid IN ({q})", part):
                docs.setdefault(nid, []).append(doc)
            for nid, id_, label, props in con.execute(
                f"SELECT nid, id, label, props FROM nodes WHERE nid IN ({q})", part
            ):
                out[nid] = codec.build(
                    Node,
                    {"id": id_, "label": label, "namespace": self.namespace, "props": codec.loads(props),
                     "doc_ids": docs.get(nid, [])},
                )  # fmt: skip
        return out

    def _load_edges(self, con: sqlite3.Connection, where: str, params: Sequence[Any]) -> list[Edge]:
        rows = con.execute(
            f"""SELECT e.eid, s.id, e.type, d.id, e.inferred, e.props,
                       (SELECT json_group_array(doc_id) FROM edge_docs x WHERE x.eid = e.eid)
                FROM edges e JOIN nodes s ON s.nid = e.src JOIN nodes d ON d.nid = e.dst WHERE {where}""",
            params,
        ).fetchall()
        return [
            codec.build(
                Edge,
                {
                    "props": codec.loads(p),
                    "doc_ids": codec.loads(docs),
                    "src": src,
                    "dst": dst,
                    "type": EDGE_TYPES[t],
                    "inferred": bool(inf),
                },
            )  # fmt: skip
            for _, src, t, dst, inf, p, docs in rows
        ]

    def get_nodes(self, ids: Sequence[str]) -> list[Node]:
        ids = checks.check_ids(ids, "node id")
        with self._sql("get_nodes") as con:
            nids = self._nids(con, ids)
            loaded = self._load_nodes(con, list(nids.values()))
        return [loaded[nids[i]] for i in ids if i in nids]

    def get_edges(self, ids: Sequence[str], edge_types: Sequence[str] | None = None) -> list[Edge]:
        ids = checks.check_ids(ids, "node id")
        types = checks.check_expand_args(1, edge_types, "both", None, None, None)
        with self._sql("get_edges") as con:
            nids = list(self._nids(con, ids).values())
            out: dict[tuple[str, str, str], Edge] = {}
            tf = f" AND e.type IN ({_qs(len(types))})" if types else ""
            tp = [_TYPE_CODE[t] for t in types] if types else []
            for part in _chunks(nids):
                q = _qs(len(part))
                where = f"(e.src IN ({q}) OR e.dst IN ({q})){tf}"
                for e in self._load_edges(con, where, (*part, *part, *tp)):
                    out[e.key] = e
        return sorted(out.values(), key=lambda e: e.key)

    def _find_nodes(self, criteria: dict[str, str], limit: int) -> list[Node]:
        clauses = {
            "label": "n.label = ?",
            "name": "n.name_key = ?",
            "contains": "instr(n.name_key, ?) > 0",
            "doc_id": "EXISTS (SELECT 1 FROM node_docs d WHERE d.nid = n.nid AND d.doc_id = ?)",
        }
        where = ["n.ns = ?", *(clauses[k] for k in criteria)]
        params = [self.namespace, *criteria.values()]
        with self._sql("find_nodes") as con:
            nids = [
                r[0]
                for r in con.execute(
                    f"SELECT n.nid FROM nodes n WHERE {' AND '.join(where)} ORDER BY n.id LIMIT ?",
                    (*params, limit),
                )
            ]
            loaded = self._load_nodes(con, nids)
        return [loaded[n] for n in nids]

    def _walk(self, w: Walk) -> Expansion:
        with self._sql("expand") as con:
            return walk(con, self.namespace, self._nids(con, w.seeds), w)

    def count(self) -> tuple[int, int]:
        with self._sql("count") as con:
            nodes = con.execute("SELECT count(*) FROM nodes WHERE ns = ?", (self.namespace,)).fetchone()[0]
            edges = con.execute(
                "SELECT count(*) FROM edges e JOIN nodes n ON n.nid = e.src WHERE n.ns = ?", (self.namespace,)
            ).fetchone()[0]
        return nodes, edges

    def stats(self) -> GraphStats:
        ns = (self.namespace,)
        with self._sql("stats") as con:
            labels = dict(
                con.execute("SELECT label, count(*) FROM nodes WHERE ns = ? GROUP BY label", ns).fetchall()
            )
            types = {
                EDGE_TYPES[t]: c
                for t, c in con.execute(
                    "SELECT e.type, count(*) FROM edges e JOIN nodes n ON n.nid = e.src WHERE n.ns = ? GROUP BY e.type",
                    ns,
                )
            }
            docs = con.execute(
                "SELECT count(DISTINCT d.doc_id) FROM node_docs d JOIN nodes n ON n.nid = d.nid WHERE n.ns = ?",
                ns,
            ).fetchone()[0]
        return GraphStats(
            namespace=self.namespace,
            nodes=sum(labels.values()),
            edges=sum(types.values()),
            nodes_by_label=labels,
            edges_by_type=types,
            documents=docs,
        )

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None

    def __repr__(self) -> str:
        return f"SqliteGraphStore({str(self.path)!r}, namespace={self.namespace!r})"
