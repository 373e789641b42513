"""The public query methods both graph backends share (``find_nodes``, ``expand``, ``neighbors``):
arguments are checked here once, then handed to the backend as one `Walk` or criteria dict.

A backend subclasses `ExpandingStore` and supplies ``_walk``, ``_find_nodes`` and ``close``; the
signatures users see are the `GraphStore` protocol's (``eventrag.storage.base``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

from eventrag.storage.base import Direction, Expansion, Node, check_id, check_label
from eventrag.storage.checks import check_expand_args, check_ids, check_limit, fold_name
from eventrag.storage.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class Walk:
    """One checked expansion: seeds (deduplicated ids), hops, edge types (None = all), direction,
    time window, row limit, and whether the seeds themselves are part of the result."""

    seeds: list[str]
    hops: int
    types: tuple[str, ...] | None
    direction: Direction
    time_from: str | None = None
    time_to: str | None = None
    limit: int | None = None
    include_seeds: bool = True

    @property
    def timed(self) -> bool:
        return self.time_from is not None or self.time_to is not None


class ExpandingStore:
    """The argument handling both graph backends share; a backend supplies ``_walk``,
    ``_find_nodes`` and ``close``."""

    def _walk(self, walk: Walk) -> Expansion:
        raise NotImplementedError

    def _find_nodes(self, criteria: dict[str, str], limit: int) -> list[Node]:
        """``criteria``: checked ``label``, folded ``name``/``contains``, ``doc_id`` (only those given)."""
        raise NotImplementedError

    def close(self) -> None:
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
        seeds = check_ids(seed_ids, "seed id")
        return self._walk(Walk(seeds, hops, types, direction, time_from, time_to, limit, include_seeds=True))

    def neighbors(
        self,
        ids: Sequence[str],
        edge_types: Sequence[str] | None = None,
        direction: Direction = "both",
        limit: int | None = None,
    ) -> Expansion:
        types = check_expand_args(1, edge_types, direction, None, None, limit)
        return self._walk(Walk(check_ids(ids, "node id"), 1, types, direction, limit=limit, include_seeds=False))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
