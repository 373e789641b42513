"""Argument checks both graph backends share: batches of nodes/edges (merged per key), id lists,
expansion arguments, limits, and the folded name key of lexical lookup."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventrag.storage.base import (
    Direction,
    Edge,
    Node,
    check_edge_type,
    check_edge_types,
    check_id,
    check_label,
)
from eventrag.storage.codec import merge_props
from eventrag.storage.errors import InvalidInput, NamespaceMismatch

MAX_HOPS = 6


def fold_name(name: Any) -> str | None:
    """Case-insensitive key for lexical lookup (Unicode casefold, surrounding space stripped)."""
    return name.strip().casefold() if isinstance(name, str) else None


def check_nodes(nodes: Sequence[Node], namespace: str) -> list[Node]:
    """Check a batch of (already validated) nodes; duplicates of one id are merged in order.

    Labels are re-checked against the whitelist because backends splice them into queries."""
    out: dict[str, Node] = {}
    for node in nodes:
        if not isinstance(node, Node):
            raise InvalidInput(f"upsert_nodes expects Node objects, got {type(node).__name__}")
        check_label(node.label)
        if node.namespace not in (None, namespace):
            raise NamespaceMismatch(
                f"node {node.id!r} names namespace {node.namespace!r}; this store is {namespace!r}"
            )
        if node.id in out:
            prev = out[node.id]
            node = node.model_copy(
                update={
                    "props": merge_props(prev.props, node.props),
                    "doc_ids": list(dict.fromkeys(prev.doc_ids + node.doc_ids)),
                }
            )
        out[node.id] = node
    return list(out.values())


def check_edges(edges: Sequence[Edge]) -> list[Edge]:
    """Check a batch of (already validated) edges; duplicates of one ``(src, type, dst)`` are merged.

    Types are re-checked against the whitelist because backends splice them into queries."""
    out: dict[tuple[str, str, str], Edge] = {}
    for edge in edges:
        if not isinstance(edge, Edge):
            raise InvalidInput(f"upsert_edges expects Edge objects, got {type(edge).__name__}")
        check_edge_type(edge.type)
        prev = out.get(edge.key)
        if prev is not None:
            edge = edge.model_copy(
                update={
                    "props": merge_props(prev.props, edge.props),
                    "doc_ids": list(dict.fromkeys(prev.doc_ids + edge.doc_ids)),
                    "inferred": prev.inferred and edge.inferred,
                }
            )
        out[edge.key] = edge
    return list(out.values())


def check_ids(ids: Sequence[str], what: str = "id") -> list[str]:
    if isinstance(ids, str):
        raise InvalidInput(f"expected a list of {what}s, got the single string {ids!r}")
    return list(dict.fromkeys(check_id(i, what) for i in ids))


def check_expand_args(
    hops: int,
    edge_types: Sequence[str] | None,
    direction: Direction,
    time_from: str | None,
    time_to: str | None,
    limit: int | None,
) -> tuple[str, ...] | None:
    if not isinstance(hops, int) or not 0 <= hops <= MAX_HOPS:
        raise InvalidInput(f"hops must be an integer in [0, {MAX_HOPS}], got {hops!r}")
    if direction not in ("out", "in", "both"):
        raise InvalidInput(f"direction must be 'out', 'in' or 'both', got {direction!r}")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise InvalidInput(f"limit must be a positive integer or None, got {limit!r}")
    for key, value in (("time_from", time_from), ("time_to", time_to)):
        if value is not None and not isinstance(value, str):
            raise InvalidInput(f"{key} must be an ISO-8601 string, got {value!r}")
    types = check_edge_types(edge_types)
    if types is not None and not types:
        raise InvalidInput("edge_types is empty: pass None for all types")
    return types


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or limit < 1:
        raise InvalidInput(f"limit must be a positive integer, got {limit!r}")
    return limit
