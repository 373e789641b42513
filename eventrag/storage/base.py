"""The storage contract: graph and vector stores behind two small, synchronous protocols.

Every backend (``graph_sqlite.SqliteGraphStore``, ``graph_neo4j.Neo4jGraphStore``, ``vector_milvus.MilvusVectorStore``)
implements exactly these methods with exactly these semantics; the rest of the code only imports
this module and ``eventrag.storage.factory``.

Graph model
-----------
* ``Node``: ``id`` (unique within a namespace), ``label`` from ``NODE_LABELS``, ``props`` (JSON values),
  ``doc_ids`` (provenance: which documents produced it). Well-known props are indexed:
  ``name`` (lexical lookup, ``find_nodes``), ``time_start``/``time_end`` (ISO-8601 strings, compared as
  strings: use one format, e.g. ``2024-05-01`` or ``2024-05-01T10:00:00``; they drive time filters).
* ``Edge``: identified by ``(src, type, dst)``; ``type`` from ``EDGE_TYPES``; ``inferred`` marks edges
  produced by knowledge expansion rather than read in a document.
* Upserts are idempotent. Upserting an existing node/edge merges: ``props`` are merged key by key (the
  new value wins; a ``None`` value removes the key), ``doc_ids`` are unioned, ``label`` is replaced,
  ``inferred`` stays ``False`` once any upsert said ``False``. Edges need both end nodes to exist
  (``MissingNode`` otherwise). A batch is one transaction: it is written whole or not at all.
* ``delete_document(doc)`` removes nodes/edges whose only provenance is ``doc`` (with their edges) and
  strips ``doc`` from the ``doc_ids`` of the others; ``delete_edges(keys)`` removes edges by identity.
* A store is opened on one namespace (workspace); it never sees another namespace's records.

Vector model
------------
Named collections of ``(id, vector, metadata)``; ``metric`` is COSINE (score: higher is closer), IP, or
L2 (score: distance, lower is closer). Filters are dicts ``{key: value}`` (equality) or
``{key: [v1, v2]}`` (membership), ANDed; keys are identifiers, values str/int/float/bool. They are
turned into parameterised expressions: never pass raw user text as an expression.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Literal, Protocol, Self, get_args, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from eventrag.storage.errors import InvalidInput, UnknownEdgeType, UnknownLabel
from eventrag.storage.props import check_props

NodeLabel = Literal["Event", "Entity", "Chunk", "Document", "Memory"]
NODE_LABELS: tuple[str, ...] = get_args(NodeLabel)

EdgeType = Literal[
    "BEFORE",
    "AFTER",
    "CAUSES",
    "ENABLES",
    "PART_OF",
    "PARTICIPATES_IN",
    "LOCATED_IN",
    "RELATED_TO",
    "MENTIONED_IN",
    "SIMILAR_TO",
]
EDGE_TYPES: tuple[str, ...] = get_args(EdgeType)
Direction = Literal["out", "in", "both"]
Metric = Literal["COSINE", "IP", "L2"]

MAX_ID_LEN = 512
INDEXED_PROPS = ("name", "time_start", "time_end")
_FILTER_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
FilterValue = str | int | float | bool
MetadataFilter = dict[str, FilterValue | list[FilterValue]]


def check_id(value: str, what: str = "id") -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LEN:
        raise InvalidInput(
            f"{what} must be a non-empty string of at most {MAX_ID_LEN} characters, got {value!r}"
        )
    if "\x00" in value:
        raise InvalidInput(f"{what} must not contain NUL characters: {value!r}")
    return value


def check_edge_type(value: str) -> str:
    if value not in EDGE_TYPES:
        raise UnknownEdgeType(f"unknown edge type {value!r}; allowed: {', '.join(EDGE_TYPES)}")
    return value


def check_edge_types(values: Sequence[str] | None) -> tuple[str, ...] | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    return tuple(dict.fromkeys(check_edge_type(v) for v in values))


def check_label(value: str) -> str:
    if value not in NODE_LABELS:
        raise UnknownLabel(f"unknown node label {value!r}; allowed: {', '.join(NODE_LABELS)}")
    return value


def _check_doc_ids(values: list[str]) -> list[str]:
    return list(dict.fromkeys(check_id(v, "doc_id") for v in values))


class _Record(BaseModel):
    """Shared by nodes and edges: JSON properties and document provenance."""

    model_config = ConfigDict(extra="forbid")

    props: dict[str, Any] = Field(default_factory=dict)
    doc_ids: list[str] = Field(default_factory=list)

    @field_validator("props")
    @classmethod
    def _props(cls, v: dict[str, Any]) -> dict[str, Any]:
        return check_props(v)

    @field_validator("doc_ids")
    @classmethod
    def _docs(cls, v: list[str]) -> list[str]:
        return _check_doc_ids(v)


class Node(_Record):
    """A graph node. ``namespace`` is filled in on reads; on writes it may be omitted."""

    id: str
    label: NodeLabel
    namespace: str | None = None

    @field_validator("label", mode="before")
    @classmethod
    def _label(cls, v: Any) -> Any:
        return check_label(v)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        return check_id(v, "node id")

    @property
    def name(self) -> str | None:
        return self.props.get("name")


class Edge(_Record):
    """A directed, typed edge; identity is ``(src, type, dst)``."""

    src: str
    dst: str
    type: EdgeType
    inferred: bool = False

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Any:
        return check_edge_type(v)

    @field_validator("src", "dst")
    @classmethod
    def _ends(cls, v: str) -> str:
        return check_id(v, "edge end")

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.src, self.type, self.dst)


class ExpandedNode(BaseModel):
    """A node reached by ``expand``/``neighbors``: shortest hop count from a seed and one such path.

    ``path`` lists node ids from the seed to this node; ``path_edges[i]`` is the edge between
    ``path[i]`` and ``path[i+1]`` written ``"TYPE>"`` (traversed along its direction) or ``"<TYPE"``
    (traversed against it)."""

    node: Node
    hop: int
    seed: str
    path: list[str]
    path_edges: list[str] = Field(default_factory=list)


class Expansion(BaseModel):
    """Result of ``expand``: reached nodes (seeds at hop 0 first, then by hop) and the edges on their paths."""

    nodes: list[ExpandedNode] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)

    def ids(self) -> list[str]:
        return [n.node.id for n in self.nodes]


class DeleteResult(BaseModel):
    nodes_deleted: int = 0
    nodes_updated: int = 0
    edges_deleted: int = 0
    edges_updated: int = 0


class GraphStats(BaseModel):
    namespace: str
    nodes: int
    edges: int
    nodes_by_label: dict[str, int] = Field(default_factory=dict)
    edges_by_type: dict[str, int] = Field(default_factory=dict)
    documents: int = 0


@runtime_checkable
class GraphStore(Protocol):
    """A property graph of events, entities, chunks and documents, scoped to one namespace."""

    namespace: str

    def upsert_nodes(self, nodes: Sequence[Node]) -> int:
        """Insert or merge nodes in one transaction; returns the batch size. Empty batch: no-op, 0."""
        ...

    def upsert_edges(self, edges: Sequence[Edge]) -> int:
        """Insert or merge edges (identity ``(src, type, dst)``) in one transaction; both ends must exist."""
        ...

    def delete_edges(self, keys: Sequence[tuple[str, str, str]]) -> int:
        """Delete the edges with these identities ``(src, type, dst)`` in one transaction (their nodes
        stay); returns how many existed. Keys of missing edges are ignored."""
        ...

    def get_nodes(self, ids: Sequence[str]) -> list[Node]:
        """The nodes that exist among ``ids``, in the order of ``ids`` (missing ids skipped)."""
        ...

    def get_edges(self, ids: Sequence[str], edge_types: Sequence[str] | None = None) -> list[Edge]:
        """All edges with ``src`` or ``dst`` in ``ids`` (optionally of the given types)."""
        ...

    def find_nodes(
        self,
        label: str | None = None,
        *,
        name: str | None = None,
        name_contains: str | None = None,
        doc_id: str | None = None,
        limit: int = 100,
    ) -> list[Node]:
        """Lexical lookup: exact ``name`` (case-insensitive) or substring ``name_contains``
        (case-insensitive), optionally by label and provenance document; ordered by id."""
        ...

    def neighbors(
        self,
        ids: Sequence[str],
        edge_types: Sequence[str] | None = None,
        direction: Direction = "both",
        limit: int | None = None,
    ) -> Expansion:
        """One-hop neighbourhood: ``expand(ids, hops=1, ...)`` without the seeds themselves."""
        ...

    def expand(
        self,
        seed_ids: Sequence[str],
        hops: int = 2,
        edge_types: Sequence[str] | None = None,
        direction: Direction = "both",
        time_from: str | None = None,
        time_to: str | None = None,
        limit: int | None = None,
    ) -> Expansion:
        """k-hop expansion in the database. A node is reachable only if its ``[time_start, time_end]``
        overlaps ``[time_from, time_to]`` (nodes without times always pass; seeds always included).
        Each node appears once, at its shortest hop; ``limit`` caps the nodes returned (seeds count),
        nearest hops first."""
        ...

    def delete_document(self, doc_id: str) -> DeleteResult: ...

    def count(self) -> tuple[int, int]:
        """``(nodes, edges)`` in this namespace."""
        ...

    def stats(self) -> GraphStats: ...

    def clear(self) -> None:
        """Remove every node and edge of this namespace (other namespaces untouched)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


class VectorHit(BaseModel):
    id: str
    score: float
    metadata: dict[str, Any] = Field(default_factory=dict)


class VectorRecord(BaseModel):
    id: str
    vector: list[float]
    metadata: dict[str, Any] = Field(default_factory=dict)


def check_filter(flt: MetadataFilter | None) -> MetadataFilter:
    """Validate a metadata filter dict (keys identifiers, values scalars or non-empty lists of scalars)."""
    if not flt:
        return {}
    if not isinstance(flt, dict):
        raise InvalidInput(f"filter must be a dict of key -> value, got {type(flt).__name__}")
    for key, value in flt.items():
        if not isinstance(key, str) or not _FILTER_KEY.match(key):
            raise InvalidInput(f"filter key {key!r} must be an identifier ([A-Za-z_][A-Za-z0-9_]*)")
        values = value if isinstance(value, list) else [value]
        if not values:
            raise InvalidInput(f"filter {key!r}: empty list matches nothing; drop the key or give values")
        for v in values:
            if not isinstance(v, (str, int, float, bool)) or (isinstance(v, float) and not math.isfinite(v)):
                raise InvalidInput(f"filter {key!r}: value {v!r} must be a str, int, finite float or bool")
    return flt


@runtime_checkable
class VectorStore(Protocol):
    """Named collections of vectors with JSON metadata."""

    def create_collection(self, name: str, dim: int, metric: Metric = "COSINE") -> None:
        """Create if absent; if present with another dim/metric, raise ``DimensionMismatch``/``InvalidInput``."""
        ...

    def has_collection(self, name: str) -> bool: ...

    def drop_collection(self, name: str) -> None: ...

    def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: Any,
        metadata: Sequence[dict[str, Any]] | None = None,
    ) -> int:
        """Insert or replace records (``vectors``: sequence of sequences or a 2-D numpy array)."""
        ...

    def search(
        self,
        name: str,
        vectors: Any,
        top_k: int = 10,
        filter: MetadataFilter | None = None,
    ) -> list[list[VectorHit]]:
        """Top-k per query vector, best first."""
        ...

    def get(self, name: str, ids: Sequence[str]) -> list[VectorRecord]: ...

    def delete(
        self, name: str, ids: Sequence[str] | None = None, filter: MetadataFilter | None = None
    ) -> int:
        """Delete by ids and/or filter (at least one); returns how many records were removed."""
        ...

    def count(self, name: str, filter: MetadataFilter | None = None) -> int: ...

    def flush(self, name: str) -> None:
        """Make writes durable and searchable at full speed (call after a bulk insert)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...
