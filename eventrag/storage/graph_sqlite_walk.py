"""k-hop expansion for the embedded store, as one recursive SQL query.

The recursive CTE ``walk(nid, hop, parent, step, eid)`` is a breadth-first frontier: ``UNION``
deduplicates identical rows, SQLite's FIFO queue keeps hops in order, and a row cap bounds work on hubs.
Each node keeps its shortest hop and, among the rows at that hop, the parent with the smallest public
id (then edge type, direction) — never a choice that depends on row ids, i.e. on the order things were
written; paths are rebuilt from those parent pointers.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from eventrag.storage import codec
from eventrag.storage.base import EDGE_TYPES, Edge, ExpandedNode, Expansion, Node
from eventrag.storage.graph_front import Walk

MAX_WALK_ROWS = 2_000_000
_TIME = (
    " AND coalesce(n.time_end, n.time_start, ?1) >= ?1",
    " AND coalesce(n.time_start, n.time_end, ?1) <= ?1",
)


def _step_sql(
    forward: bool, hops: int, types: tuple[str, ...] | None, window: list[str | None]
) -> tuple[str, list]:
    near, far = ("src", "dst") if forward else ("dst", "src")
    step = "e.type" if forward else "-1 - e.type"
    params: list[Any] = [hops]
    sql = f"SELECT e.{far}, w.hop + 1, w.nid, {step}, e.eid FROM walk w JOIN edges e ON e.{near} = w.nid"
    where = " WHERE w.hop < ?"
    if types:
        where += f" AND e.type IN ({','.join('?' * len(types))})"
        params += [EDGE_TYPES.index(t) for t in types]
    if any(v is not None for v in window):
        sql += f" JOIN nodes n ON n.nid = e.{far}"
        for clause, value in zip(_TIME, window, strict=True):
            if value is not None:
                where += clause.replace("?1", "?")
                params += [value, value]
    return sql + where, params


def walk(con: sqlite3.Connection, namespace: str, seed_nids: dict[str, int], req: Walk) -> Expansion:
    """Run ``req`` over ``con`` from ``seed_nids`` (its seeds' public id -> row id, resolved in ``namespace``)."""
    if not seed_nids:
        return Expansion()
    sql, params = _walk_sql(seed_nids, req)
    return _expansion(con.execute(sql, params).fetchall(), namespace, seed_nids)


def _walk_sql(seed_nids: dict[str, int], req: Walk) -> tuple[str, list[Any]]:
    """The query and its parameters: one row per reached node (row id, hop, parent row id, step code,
    public id, label, props, doc ids, then the edge it was reached by: inferred, props, doc ids)."""
    parts, params = [], [*seed_nids.values()]
    for forward in (True, False):
        if req.direction == ("in" if forward else "out"):
            continue
        sql, p = _step_sql(forward, req.hops, req.types, [req.time_from, req.time_to])
        parts.append(sql)
        params += p
    cte = (
        "WITH RECURSIVE walk(nid, hop, parent, step, eid) AS ("
        f"SELECT nid, 0, NULL, NULL, NULL FROM nodes WHERE nid IN ({','.join('?' * len(seed_nids))})"
        + "".join(f" UNION {p}" for p in parts)
        + " LIMIT ?)"
    )
    params.append(MAX_WALK_ROWS)
    having = "" if req.include_seeds else " AND hop > 0"
    tail = " LIMIT ?" if req.limit else ""
    if req.limit:
        params.append(req.limit)
    docs = "(SELECT json_group_array(doc_id) FROM {t} x WHERE x.{k} = {v})"
    # each node at its shortest hop, reached from the parent with the smallest public id (then edge
    # type and direction): the same choice whatever order the rows were written in
    sql = f"""{cte}, ranked AS (
                SELECT w.nid, w.hop, w.parent, w.step, w.eid, n.id, n.label, n.props,
                       row_number() OVER (PARTITION BY w.nid ORDER BY w.hop, p.id, w.step) AS rn
                FROM walk w JOIN nodes n ON n.nid = w.nid LEFT JOIN nodes p ON p.nid = w.parent),
            best AS (
                SELECT nid, hop, parent, step, eid, id, label, props FROM ranked
                WHERE rn = 1{having} ORDER BY hop, id{tail})
            SELECT b.nid, b.hop, b.parent, b.step, b.id, b.label, b.props, {docs.format(t="node_docs", k="nid", v="b.nid")},
                   e.inferred, e.props, {docs.format(t="edge_docs", k="eid", v="b.eid")}
            FROM best b LEFT JOIN edges e ON e.eid = b.eid ORDER BY b.hop, b.id"""
    return sql, params


def _expansion(rows: list[tuple], namespace: str, seed_nids: dict[str, int]) -> Expansion:
    """The walk's rows as nodes (with their paths from a seed) and the edges that reached them."""
    loads = codec.loads
    info = {r[0]: r for r in rows}
    id_of = {nid: sid for sid, nid in seed_nids.items()} | {r[0]: r[4] for r in rows}
    out: list[ExpandedNode] = []
    edges: list[Edge] = []
    for nid, hop, parent, step, id_, label, props, node_docs, inferred, eprops, edocs in rows:
        node = codec.build(
            Node,
            {"id": id_, "label": label, "namespace": namespace, "props": loads(props), "doc_ids": loads(node_docs)},
        )
        if hop > 0:
            kind = EDGE_TYPES[step if step >= 0 else -1 - step]
            src, dst = (id_of[parent], id_) if step >= 0 else (id_, id_of[parent])
            edges.append(
                codec.build(Edge, {"props": loads(eprops), "doc_ids": loads(edocs), "src": src, "dst": dst, "type": kind,
                             "inferred": bool(inferred)})
            )  # fmt: skip
        path, path_edges = _path_to(nid, info, id_of)
        out.append(
            codec.build(
                ExpandedNode,
                {"node": node, "hop": hop, "seed": path[0], "path": path, "path_edges": path_edges},
            )
        )
    edges.sort(key=lambda e: e.key)
    return codec.build(Expansion, {"nodes": out, "edges": edges})


def _path_to(nid: int, info: dict[int, tuple], id_of: dict[int, str]) -> tuple[list[str], list[str]]:
    """(public ids from the seed to ``nid``, the edge steps between them) along the parent pointers."""
    cur = info[nid]
    path, path_edges = [cur[4]], []
    while cur[1] > 0:
        code = cur[3]
        path_edges.append(f"{EDGE_TYPES[code]}>" if code >= 0 else f"<{EDGE_TYPES[-1 - code]}")
        path.append(id_of[cur[2]])
        if cur[2] not in info:  # a seed left out of the result (neighbors())
            break
        cur = info[cur[2]]
    path.reverse()
    path_edges.reverse()
    return path, path_edges
