"""The Neo4j graph store, through the official driver (``bolt://``, ``neo4j://``, ``+s``/``+ssc`` variants).

Managed transactions (``execute_read``/``execute_write``) retry transient failures; one call is one
transaction. Constraints and indexes are created on first use. Queries are in ``graph_neo4j_cypher``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import neo4j
from neo4j import exceptions as nx

from eventrag.storage import checks, codec
from eventrag.storage import graph_neo4j_cypher as cy
from eventrag.storage.base import (
    DeleteResult,
    Edge,
    ExpandedNode,
    Expansion,
    GraphStats,
    Node,
    check_edge_type,
    check_id,
)
from eventrag.storage.errors import InvalidInput, MissingNode, StorageError, StoreClosed, StoreUnavailable
from eventrag.storage.graph_front import ExpandingStore, Walk

T = TypeVar("T")
_PREFIX = "p_"
_ROWS_PER_QUERY = 5000
_URI_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")


def _set_map(props: dict[str, Any], indexed: bool) -> dict[str, Any]:
    """Properties to ``SET x += map``: user props JSON-encoded under ``p_``; ``None`` removes."""
    out: dict[str, Any] = {_PREFIX + k: (None if v is None else codec.dumps(v)) for k, v in props.items()}
    if indexed:
        if "name" in props:
            out["name"] = props["name"]
            out["name_key"] = checks.fold_name(props["name"])
        for key in ("time_start", "time_end"):
            if key in props:
                out[key] = props[key]
    return out


def _props(raw: dict[str, Any]) -> dict[str, Any]:
    return {k[len(_PREFIX) :]: codec.loads(v) for k, v in raw.items() if k.startswith(_PREFIX)}


class Neo4jGraphStore(ExpandingStore):
    """``GraphStore`` on a Neo4j 5 server; thread-safe (the driver pools connections)."""

    def __init__(
        self,
        uri: str,
        namespace: str = "default",
        *,
        user: str = "neo4j",
        password: str | None = None,
        database: str | None = None,
        connection_timeout_s: float = 5.0,
        max_retry_time_s: float = 30.0,
    ) -> None:
        if not namespace or not all(c.isalnum() or c in "_-" for c in namespace):
            raise InvalidInput(f"namespace must be letters, digits, '_' or '-', got {namespace!r}")
        if not uri.startswith(_URI_SCHEMES):
            raise InvalidInput(f"Neo4j URI must start with one of {', '.join(_URI_SCHEMES)}, got {uri!r}")
        self.namespace = namespace
        self.uri = uri
        self.database = database
        auth = (user, password) if password else None
        try:
            self._driver: neo4j.Driver | None = neo4j.GraphDatabase.driver(
                uri,
                auth=auth,
                connection_timeout=connection_timeout_s,
                connection_acquisition_timeout=connection_timeout_s * 2,
                max_transaction_retry_time=max_retry_time_s,
                notifications_min_severity="OFF",
            )
            self._driver.verify_connectivity()
        except (nx.ServiceUnavailable, nx.SessionExpired, OSError) as exc:
            raise StoreUnavailable(f"Neo4j at {uri} is unreachable: {exc}") from exc
        except nx.AuthError as exc:
            raise StoreUnavailable(f"Neo4j at {uri} refused the credentials of user {user!r}: {exc}") from exc
        except (nx.Neo4jError, nx.DriverError) as exc:
            raise StoreUnavailable(f"cannot connect to Neo4j at {uri}: {exc}") from exc
        self._schema_ready = False

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except StorageError:
            raise
        except (nx.ServiceUnavailable, nx.SessionExpired) as exc:
            raise StoreUnavailable(f"{what}: Neo4j at {self.uri} became unavailable: {exc}") from exc
        except (nx.Neo4jError, nx.DriverError) as exc:
            raise StorageError(f"{what} failed on Neo4j at {self.uri}: {exc}") from exc

    def _session(self) -> neo4j.Session:
        if self._driver is None:
            raise StoreClosed(f"graph store on {self.uri} is closed")
        return self._driver.session(database=self.database) if self.database else self._driver.session()

    def _write(self, what: str, fn: Callable[[neo4j.ManagedTransaction], T]) -> T:
        self._ensure_schema()
        with self._errors(what), self._session() as session:
            return session.execute_write(fn)

    def _read(self, what: str, fn: Callable[[neo4j.ManagedTransaction], T]) -> T:
        with self._errors(what), self._session() as session:
            return session.execute_read(fn)

    def _ensure_schema(self) -> None:
        if self._schema_ready:
            return
        with self._errors("create constraints"), self._session() as session:
            for statement in cy.SCHEMA:
                session.run(statement).consume()
            session.run("CALL db.awaitIndexes(60)").consume()
        self._schema_ready = True

    def _uid(self, node_id: str) -> str:
        return f"{self.namespace}:{node_id}"

    def _node(self, raw: dict[str, Any]) -> Node:
        return codec.build(
            Node,
            {"id": raw["id"], "label": raw["label"], "namespace": self.namespace, "props": _props(raw),
             "doc_ids": list(raw["doc_ids"])},
        )  # fmt: skip

    @staticmethod
    def _edge(raw: dict[str, Any]) -> Edge:
        p = raw["props"]
        return codec.build(
            Edge,
            {"props": _props(p), "doc_ids": list(p.get("doc_ids", [])), "src": raw["src"], "dst": raw["dst"],
             "type": raw["type"], "inferred": bool(p.get("inferred", False))},
        )  # fmt: skip

    # ------------------------------------------------------------------ writes
    def upsert_nodes(self, nodes: Sequence[Node]) -> int:
        batch = checks.check_nodes(nodes, self.namespace)
        if not batch:
            return 0
        by_label: dict[str, list[dict[str, Any]]] = {}
        for n in batch:
            row = {"uid": self._uid(n.id), "id": n.id, "set": _set_map(n.props, True), "doc_ids": n.doc_ids}
            by_label.setdefault(n.label, []).append(row)

        def work(tx: neo4j.ManagedTransaction) -> int:
            for label, rows in by_label.items():
                query = cy.upsert_nodes(label)
                for i in range(0, len(rows), _ROWS_PER_QUERY):
                    tx.run(
                        query, rows=rows[i : i + _ROWS_PER_QUERY], ns=self.namespace, label=label
                    ).consume()
            return len(batch)

        return self._write("upsert_nodes", work)

    def upsert_edges(self, edges: Sequence[Edge]) -> int:
        batch = checks.check_edges(edges)
        if not batch:
            return 0
        uids = sorted({self._uid(i) for e in batch for i in (e.src, e.dst)})
        by_type: dict[str, list[dict[str, Any]]] = {}
        for e in batch:
            row = {
                "src": self._uid(e.src), "dst": self._uid(e.dst), "inferred": e.inferred,
                "set": _set_map(e.props, False), "doc_ids": e.doc_ids,
            }  # fmt: skip
            by_type.setdefault(e.type, []).append(row)

        def work(tx: neo4j.ManagedTransaction) -> int:
            missing: list[str] = []
            for i in range(0, len(uids), _ROWS_PER_QUERY):
                missing += tx.run(cy.MISSING_NODES, uids=uids[i : i + _ROWS_PER_QUERY]).single()["missing"]
            if missing:
                ids = sorted(m.split(":", 1)[1] for m in missing)
                raise MissingNode(
                    f"{len(ids)} edge end(s) not in namespace {self.namespace!r}: {ids[:5]}; "
                    "upsert the nodes first (nothing of this batch was written)"
                )
            for edge_type, rows in by_type.items():
                query = cy.upsert_edges(edge_type)
                for i in range(0, len(rows), _ROWS_PER_QUERY):
                    tx.run(query, rows=rows[i : i + _ROWS_PER_QUERY], ns=self.namespace).consume()
            return len(batch)

        return self._write("upsert_edges", work)

    def delete_edges(self, keys: Sequence[tuple[str, str, str]]) -> int:
        by_type: dict[str, dict[tuple[str, str], dict[str, str]]] = {}
        for a, t, b in keys:
            row = {"src": self._uid(check_id(a, "edge end")), "dst": self._uid(check_id(b, "edge end"))}
            by_type.setdefault(check_edge_type(t), {})[(row["src"], row["dst"])] = row
        if not by_type:
            return 0

        def work(tx: neo4j.ManagedTransaction) -> int:
            deleted = 0
            for edge_type, rows in by_type.items():
                query, batch = cy.delete_edges(edge_type), list(rows.values())
                for i in range(0, len(batch), _ROWS_PER_QUERY):
                    deleted += tx.run(query, rows=batch[i : i + _ROWS_PER_QUERY]).single()["deleted"]
            return deleted

        return self._write("delete_edges", work)

    def delete_document(self, doc_id: str) -> DeleteResult:
        check_id(doc_id, "doc_id")
        params = {"ns": self.namespace, "doc": doc_id}

        def work(tx: neo4j.ManagedTransaction) -> DeleteResult:
            nodes = tx.run(cy.DELETE_DOC_NODES, params).single()
            rels = tx.run(cy.DELETE_DOC_EDGES, params).single()["rels"]
            return DeleteResult(
                nodes_deleted=nodes["nodes"],
                edges_deleted=nodes["rels"] + rels,
                edges_updated=tx.run(cy.STRIP_DOC_EDGES, params).single()["rels"],
                nodes_updated=tx.run(cy.STRIP_DOC_NODES, params).single()["nodes"],
            )

        return self._write("delete_document", work)

    def clear(self) -> None:
        self._ensure_schema()
        with self._errors("clear"), self._session() as session:
            session.run(cy.CLEAR, ns=self.namespace).consume()  # auto-commit: batched deletes

    # ------------------------------------------------------------------ reads
    def get_nodes(self, ids: Sequence[str]) -> list[Node]:
        ids = checks.check_ids(ids, "node id")
        if not ids:
            return []
        uids = [self._uid(i) for i in ids]
        rows = self._read("get_nodes", lambda tx: [r["n"] for r in tx.run(cy.GET_NODES, uids=uids)])
        return [self._node(r) for r in rows]

    def get_edges(self, ids: Sequence[str], edge_types: Sequence[str] | None = None) -> list[Edge]:
        ids = checks.check_ids(ids, "node id")
        types = checks.check_expand_args(1, edge_types, "both", None, None, None)
        if not ids:
            return []
        uids = [self._uid(i) for i in ids]
        query = cy.get_edges(types)
        rows = self._read("get_edges", lambda tx: [r["e"] for r in tx.run(query, uids=uids)])
        return sorted((self._edge(r) for r in rows), key=lambda e: e.key)

    def _find_nodes(self, criteria: dict[str, str], limit: int) -> list[Node]:
        query = cy.find_nodes(
            "label" in criteria, "name" in criteria, "contains" in criteria, "doc_id" in criteria
        )
        params = {
            "ns": self.namespace,
            "limit": limit,
            "label": None,
            "name": None,
            "contains": None,
            "doc": None,
        }
        params.update({("doc" if k == "doc_id" else k): v for k, v in criteria.items()})
        rows = self._read("find_nodes", lambda tx: [r["n"] for r in tx.run(query, params)])
        return [self._node(r) for r in rows]

    def _walk(self, w: Walk) -> Expansion:
        seeds, limit = w.seeds, w.limit
        seed_nodes = self.get_nodes(seeds) if w.include_seeds else []
        out = [
            codec.build(ExpandedNode, {"node": n, "hop": 0, "seed": n.id, "path": [n.id], "path_edges": []})
            for n in seed_nodes
        ]
        room = (limit - len(out)) if limit else 2**62
        edges: list[Edge] = []
        if w.hops > 0 and room > 0 and seeds:
            query = cy.expand(w.types, w.hops, w.direction, w.timed)
            params = {"seeds": [self._uid(s) for s in seeds], "limit": room, "from": w.time_from, "to": w.time_to}
            rows = self._read("expand", lambda tx: [r.values() for r in tx.run(query, params)])
            trail: dict[str, tuple[list[str], list[str]]] = {s: ([s], []) for s in seeds}
            for raw, hop, parent, kind, forward, rel in rows:
                node = self._node(raw)
                src, dst = (parent, node.id) if forward else (node.id, parent)
                edges.append(self._edge({"src": src, "dst": dst, "type": kind, "props": rel}))
                path, steps = trail[parent]
                trail[node.id] = (path + [node.id], steps + [f"{kind}>" if forward else f"<{kind}"])
                out.append(
                    codec.build(
                        ExpandedNode,
                        {"node": node, "hop": hop, "seed": path[0], "path": trail[node.id][0],
                         "path_edges": trail[node.id][1]},
                    )
                )  # fmt: skip
        edges.sort(key=lambda e: e.key)
        return codec.build(Expansion, {"nodes": out, "edges": edges})

    def _counts(self, query: str) -> dict[str, int]:
        return self._read("count", lambda tx: {r["key"]: r["c"] for r in tx.run(query, ns=self.namespace)})

    def count(self) -> tuple[int, int]:
        return sum(self._counts(cy.COUNT_NODES).values()), sum(self._counts(cy.COUNT_EDGES).values())

    def stats(self) -> GraphStats:
        labels, types = self._counts(cy.COUNT_NODES), self._counts(cy.COUNT_EDGES)
        docs = self._read("stats", lambda tx: tx.run(cy.COUNT_DOCS, ns=self.namespace).single()["c"])
        return GraphStats(
            namespace=self.namespace, nodes=sum(labels.values()), edges=sum(types.values()),
            nodes_by_label=labels, edges_by_type=types, documents=docs,
        )  # fmt: skip

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    def __repr__(self) -> str:
        return f"Neo4jGraphStore({self.uri!r}, namespace={self.namespace!r})"
