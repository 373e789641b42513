"""Cypher for the Neo4j graph store. Every value travels as a parameter; the only things spliced into
query text are node labels, relationship types (both checked against the whitelists in ``base``), hop
counts and arrow shapes (checked integers / fixed strings).

Storage layout: every node is ``(:EFNode:<Label> {uid: "<ns>:<id>", ns, id, label, doc_ids,
name, name_key, time_start, time_end, p_<key>: <json>})``; every relationship ``[:<TYPE> {ns, doc_ids,
inferred, p_<key>: <json>}]``. User properties live under a ``p_`` prefix as JSON strings, so any
JSON value round-trips and ``SET x += $map`` with ``null`` removes a key (the shared merge rule).
"""

from __future__ import annotations

from eventrag.storage.base import NODE_LABELS, check_edge_type, check_label

BASE_LABEL = "EFNode"
SCHEMA = (
    f"CREATE CONSTRAINT ef_node_uid IF NOT EXISTS FOR (n:{BASE_LABEL}) REQUIRE n.uid IS UNIQUE",
    f"CREATE INDEX ef_node_ns IF NOT EXISTS FOR (n:{BASE_LABEL}) ON (n.ns)",
    f"CREATE INDEX ef_node_name IF NOT EXISTS FOR (n:{BASE_LABEL}) ON (n.ns, n.name_key)",
    f"CREATE INDEX ef_node_label IF NOT EXISTS FOR (n:{BASE_LABEL}) ON (n.ns, n.label)",
)
_ALL_LABELS = ":".join(NODE_LABELS)
_UNION_DOCS = "coalesce({v}.doc_ids, []) + [d IN row.doc_ids WHERE NOT d IN coalesce({v}.doc_ids, [])]"
ARROWS = {"out": ("-", "->"), "in": ("<-", "-"), "both": ("-", "-")}


def upsert_nodes(label: str) -> str:
    label = check_label(label)
    return f"""
UNWIND $rows AS row
MERGE (n:{BASE_LABEL} {{uid: row.uid}})
ON CREATE SET n.ns = $ns, n.id = row.id
SET n.label = $label, n += row.set, n.doc_ids = {_UNION_DOCS.format(v="n")}
REMOVE n:{_ALL_LABELS}
SET n:{label}
RETURN count(n) AS written"""


MISSING_NODES = f"""
UNWIND $uids AS u
OPTIONAL MATCH (n:{BASE_LABEL} {{uid: u}})
WITH u, n WHERE n IS NULL
RETURN collect(u) AS missing"""


def upsert_edges(edge_type: str) -> str:
    edge_type = check_edge_type(edge_type)
    return f"""
UNWIND $rows AS row
MATCH (a:{BASE_LABEL} {{uid: row.src}})
MATCH (b:{BASE_LABEL} {{uid: row.dst}})
MERGE (a)-[r:{edge_type}]->(b)
ON CREATE SET r.ns = $ns, r.inferred = row.inferred
ON MATCH SET r.inferred = r.inferred AND row.inferred
SET r += row.set, r.doc_ids = {_UNION_DOCS.format(v="r")}
RETURN count(r) AS written"""


def delete_edges(edge_type: str) -> str:
    edge_type = check_edge_type(edge_type)
    return f"""
UNWIND $rows AS row
MATCH (:{BASE_LABEL} {{uid: row.src}})-[r:{edge_type}]->(:{BASE_LABEL} {{uid: row.dst}})
DELETE r
RETURN count(r) AS deleted"""


GET_NODES = f"""
UNWIND $uids AS u
MATCH (n:{BASE_LABEL} {{uid: u}})
RETURN properties(n) AS n"""

EDGE_MAP = "{src: startNode(r).id, dst: endNode(r).id, type: type(r), props: properties(r)}"


def get_edges(types: tuple[str, ...] | None) -> str:
    rel = _rel(types)
    return f"""
UNWIND $uids AS u
MATCH (n:{BASE_LABEL} {{uid: u}})-[r{rel}]-(:{BASE_LABEL})
RETURN DISTINCT {EDGE_MAP} AS e"""


def _rel(types: tuple[str, ...] | None) -> str:
    return ":" + "|".join(check_edge_type(t) for t in types) if types else ""


def expand(types: tuple[str, ...] | None, hops: int, direction: str, timed: bool) -> str:
    if not isinstance(hops, int) or not 1 <= hops <= 6:
        raise ValueError(f"hops out of range: {hops!r}")
    left, right = ARROWS[direction]
    window = (
        " WHERE all(x IN nodes(p)[1..] WHERE"
        " ($from IS NULL OR coalesce(x.time_end, x.time_start, $from) >= $from) AND"
        " ($to IS NULL OR coalesce(x.time_start, x.time_end, $to) <= $to))"
        if timed
        else ""
    )
    # each node once, at its shortest hop, from the parent with the smallest id (then edge type,
    # direction): not from whichever path the store met first; only its parent and edge travel back
    # (paths are rebuilt client-side from parent pointers, so every path is consistent with the edges)
    return f"""
MATCH (s:{BASE_LABEL}) WHERE s.uid IN $seeds
MATCH p = (s){left}[{_rel(types)}*1..{hops}]{right}(n:{BASE_LABEL}){window}
WITH n, p WHERE NOT n.uid IN $seeds
WITH n, p, nodes(p)[-2] AS parent, relationships(p)[-1] AS r
WITH n, p ORDER BY length(p), parent.id, type(r), startNode(r) = parent DESC
WITH n, head(collect(p)) AS p
WITH n, p, length(p) AS hop ORDER BY hop, n.id LIMIT $limit
WITH n, hop, nodes(p)[-2] AS parent, relationships(p)[-1] AS r
RETURN properties(n) AS n, hop, parent.id AS parent, type(r) AS type, startNode(r) = parent AS forward,
       properties(r) AS r"""


def find_nodes(label: bool, name: bool, contains: bool, doc: bool) -> str:
    where = ["n.ns = $ns"]
    if label:
        where.append("n.label = $label")
    if name:
        where.append("n.name_key = $name")
    if contains:
        where.append("n.name_key CONTAINS $contains")
    if doc:
        where.append("$doc IN n.doc_ids")
    return f"""
MATCH (n:{BASE_LABEL}) WHERE {" AND ".join(where)}
RETURN properties(n) AS n ORDER BY n.id LIMIT $limit"""


DELETE_DOC_NODES = f"""
MATCH (n:{BASE_LABEL}) WHERE n.ns = $ns AND n.doc_ids = [$doc]
OPTIONAL MATCH (n)-[r]-()
WITH collect(DISTINCT n) AS nodes, count(DISTINCT r) AS rels
FOREACH (x IN nodes | DETACH DELETE x)
RETURN size(nodes) AS nodes, rels"""
DELETE_DOC_EDGES = f"""
MATCH (:{BASE_LABEL} {{ns: $ns}})-[r]->() WHERE r.doc_ids = [$doc]
DELETE r
RETURN count(r) AS rels"""
STRIP_DOC_EDGES = f"""
MATCH (:{BASE_LABEL} {{ns: $ns}})-[r]->() WHERE $doc IN r.doc_ids
SET r.doc_ids = [d IN r.doc_ids WHERE d <> $doc]
RETURN count(r) AS rels"""
STRIP_DOC_NODES = f"""
MATCH (n:{BASE_LABEL}) WHERE n.ns = $ns AND $doc IN n.doc_ids
SET n.doc_ids = [d IN n.doc_ids WHERE d <> $doc]
RETURN count(n) AS nodes"""

COUNT_NODES = f"MATCH (n:{BASE_LABEL}) WHERE n.ns = $ns RETURN n.label AS key, count(n) AS c"
COUNT_EDGES = f"MATCH (n:{BASE_LABEL} {{ns: $ns}})-[r]->() RETURN type(r) AS key, count(r) AS c"
COUNT_DOCS = f"""
MATCH (n:{BASE_LABEL}) WHERE n.ns = $ns UNWIND n.doc_ids AS d RETURN count(DISTINCT d) AS c"""
CLEAR = f"""
MATCH (n:{BASE_LABEL}) WHERE n.ns = $ns
CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF 5000 ROWS"""
