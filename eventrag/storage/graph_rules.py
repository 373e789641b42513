"""Semantics both graph backends share: property merging, name folding, argument checks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Self, TypeVar

from pydantic import BaseModel

from eventrag.storage.base import (
    Direction,
    Edge,
    Expansion,
    Node,
    check_edge_type,
    check_edge_types,
    check_id,
    check_label,
)
from eventrag.storage.errors import InvalidInput, NamespaceMismatch

MAX_HOPS = 6
M = TypeVar("M", bound=BaseModel)

try:  # 5-10x faster JSON decoding of stored props when available
    from orjson import loads
except ImportError:  # pragma: no cover
    from json import loads  # type: ignore[assignment]


def _fast_build(cls: type[M], values: dict[str, Any]) -> M:
    """``model_construct`` without its per-field bookkeeping (3x faster): for trusted rows read back
    from a store, which were validated on the way in. Every field must be given."""
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


def _slow_build(cls: type[M], values: dict[str, Any]) -> M:
    return cls.model_construct(**values)


def _pick_builder() -> Any:
    from eventrag.storage.base import Node

    probe = {"id": "a", "label": "Event", "namespace": "n", "props": {"k": 1}, "doc_ids": ["d"]}
    try:
        same = (
            _fast_build(Node, dict(probe)) == Node(**probe)
            and _fast_build(Node, dict(probe)).model_dump() == probe
        )
    except Exception:  # a pydantic release changed its internals
        same = False
    return _fast_build if same else _slow_build


build = _pick_builder()


def merge_props(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Shallow merge: new values win, a ``None`` value removes the key."""
    out = dict(old)
    for key, value in new.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def merge_props_json(old: str | None, new: str) -> str:
    return dumps(merge_props(loads(old) if old else {}, loads(new)))


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


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


class ExpandingStore:
    """The argument handling both graph backends share; a backend supplies ``_walk`` and ``close``."""

    def _walk(
        self,
        seeds: list[str],
        hops: int,
        types: tuple[str, ...] | None,
        direction: Direction,
        window: tuple[str | None, str | None],
        limit: int | None,
        include_seeds: bool,
    ) -> Expansion:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def _find_nodes(self, criteria: dict[str, str], limit: int) -> list[Node]:
        """``criteria``: checked ``label``, folded ``name``/``contains``, ``doc_id`` (only those given)."""
        raise NotImplementedError

    def find_nodes(
        self,
        label: str | None = None,
        *,
        name: str | None = None,
        name_contains: str | None = None,
        doc_id: str | None = None,
        limit: int = 100,
    ) -> list[Node]:
        check_limit(limit)
        criteria = {
            "label": check_label(label) if label is not None else None,
            "name": fold_name(name) if name is not None else None,
            "contains": fold_name(name_contains) if name_contains is not None else None,
            "doc_id": check_id(doc_id, "doc_id") if doc_id is not None else None,
        }
        for key in ("name", "contains"):
            if criteria[key] is None and (name if key == "name" else name_contains) is not None:
                raise InvalidInput(f"{key} must be a string")
        return self._find_nodes({k: v for k, v in criteria.items() if v is not None}, limit)

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
        types = check_expand_args(hops, edge_types, direction, time_from, time_to, limit)
        return self._walk(
            check_ids(seed_ids, "seed id"), hops, types, direction, (time_from, time_to), limit, True
        )

    def neighbors(
        self,
        ids: Sequence[str],
        edge_types: Sequence[str] | None = None,
        direction: Direction = "both",
        limit: int | None = None,
    ) -> Expansion:
        types = check_expand_args(1, edge_types, direction, None, None, limit)
        return self._walk(check_ids(ids, "node id"), 1, types, direction, (None, None), limit, False)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
