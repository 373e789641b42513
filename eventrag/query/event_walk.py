"""The event graph held in memory for query time: the same k-hop walk as `GraphStore.expand`, without
a database round trip.

Event mode walks three hops over event relations and participation (event -CAUSES- event
<-PARTICIPATES_IN- entity -> event) from about a dozen seed events. In the store that is one recursive
SQL (or Cypher) query, but hub entities ("United States" takes part in thousands of events) make the
frontier large: on 2Wiki's full corpus (6,119 passages, 15k events) the walk was 60-70 ms of SQLite
per query, most of event mode's time. Here the edges are CSR arrays in both directions and each hop
is a few numpy operations over the frontier's edges.

Same result as the embedded store's walk (`tests/storage/test_event_walk_contract.py`; against Neo4j
the same nodes, hops and paths — where two edges of different types join a node to its best parent,
Neo4j may report the other one): every node at its shortest hop, reached from the parent with the smallest public id
(then the edge step: backward steps `-1 - type` before forward steps `type`), the time window checked
on the node reached (nodes without times pass, seeds always kept), results ordered by (hop, id) and
cut at `limit`. The store's walk also caps its intermediate rows at 2 million; this one has no cap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from eventrag.storage.base import EDGE_TYPES, Edge, GraphStore, Node

# what event mode walks: relations between events, and participation (entity -> event)
EVENT_EDGES = ("BEFORE", "AFTER", "CAUSES", "ENABLES", "RELATED_TO", "PART_OF", "PARTICIPATES_IN")


@dataclass(frozen=True)
class WalkedNode:
    """A node the walk reached: its id, label and chunk ids, shortest hop, seed, and one path from the
    seed (node ids, and the edges between them written "TYPE>" or "<TYPE")."""

    id: str
    label: str
    chunk_ids: tuple[str, ...]
    hop: int
    seed: str
    path: tuple[str, ...]
    path_edges: tuple[str, ...]


@dataclass
class WalkResult:
    nodes: list[WalkedNode] = field(default_factory=list)
    inferred: set[tuple[str, str, str]] = field(default_factory=set)  # keys of inferred edges on the paths


def _csr(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Edge order grouped by `keys` and the row pointer: edges of node u are order[ptr[u]:ptr[u+1]]."""
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, keys + 1, 1)
    return order, np.cumsum(ptr)


def _gather(frontier: np.ndarray, order: np.ndarray, ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(edge indices of every frontier node, the frontier node each came from)."""
    starts, ends = ptr[frontier], ptr[frontier + 1]
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    owner = np.repeat(frontier, lengths)
    offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return order[np.repeat(starts, lengths) + offsets], owner


@dataclass
class EventGraph:
    """Nodes (events, entities) and their event-relation edges as arrays; built once per snapshot."""

    ids: list[str]  # sorted: a node's index orders like its public id (the walk's tie-break)
    index: dict[str, int]
    labels: list[str]
    chunk_ids: list[tuple[str, ...]]
    time_start: list[str | None]
    time_end: list[str | None]
    src: np.ndarray
    dst: np.ndarray
    etype: np.ndarray  # index into EDGE_TYPES
    inferred: np.ndarray  # bool
    out: tuple[np.ndarray, np.ndarray] = field(init=False)
    inc: tuple[np.ndarray, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.ids)
        self.out, self.inc = _csr(self.src, n), _csr(self.dst, n)

    @classmethod
    def from_records(cls, nodes: Sequence[Node], edges: Sequence[Edge]) -> EventGraph:
        """Edges whose two ends are among `nodes` are kept; the others cannot be walked from here."""
        ids = sorted({n.id for n in nodes})
        index = {i: k for k, i in enumerate(ids)}
        by_id = {n.id: n for n in nodes}
        keep = list({e.key: e for e in edges if e.src in index and e.dst in index}.values())
        return cls(
            ids=ids, index=index,
            labels=[by_id[i].label for i in ids],
            chunk_ids=[tuple(by_id[i].props.get("chunk_ids") or ()) for i in ids],
            time_start=[_time(by_id[i], "time_start") for i in ids],
            time_end=[_time(by_id[i], "time_end") for i in ids],
            src=np.asarray([index[e.src] for e in keep], dtype=np.int64),
            dst=np.asarray([index[e.dst] for e in keep], dtype=np.int64),
            etype=np.asarray([EDGE_TYPES.index(e.type) for e in keep], dtype=np.int64),
            inferred=np.asarray([bool(e.inferred) for e in keep], dtype=bool),
        )

    @classmethod
    def load(cls, graph: GraphStore, edge_types: Sequence[str] = EVENT_EDGES,
             entities: Sequence[Node] | None = None) -> EventGraph:
        """Every Event and Entity node of the store (`entities`: already read) and the edges of
        `edge_types` between them."""
        if entities is None:
            entities = graph.find_nodes("Entity", limit=10_000_000)
        nodes = [*graph.find_nodes("Event", limit=10_000_000), *entities]
        edges = graph.get_edges([n.id for n in nodes], edge_types=list(edge_types)) if nodes else []
        return cls.from_records(nodes, edges)

    def _in_window(self, cand: np.ndarray, time_from: str | None, time_to: str | None) -> np.ndarray:
        ok = np.ones(len(cand), dtype=bool)
        for k, c in enumerate(cand.tolist()):
            start, end = self.time_start[c], self.time_end[c]
            if time_from is not None and (end if end is not None else start if start is not None else time_from) < time_from:
                ok[k] = False
            elif time_to is not None and (start if start is not None else end if end is not None else time_to) > time_to:
                ok[k] = False
        return ok

    def _step(self, frontier: np.ndarray, seen: np.ndarray, types: np.ndarray | None, window: tuple[str | None, str | None]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One hop: (new nodes, their parent, step code, edge index), the best parent per new node."""
        parts = []
        for forward, (order, ptr) in ((True, self.out), (False, self.inc)):
            eidx, owner = _gather(frontier, order, ptr)
            child = self.dst[eidx] if forward else self.src[eidx]
            step = self.etype[eidx] if forward else -1 - self.etype[eidx]
            parts.append((child, owner, step, eidx))
        child, parent, step, eidx = (np.concatenate([p[i] for p in parts]) for i in range(4))
        keep = ~seen[child]
        if types is not None:
            keep &= np.isin(self.etype[eidx], types)
        child, parent, step, eidx = child[keep], parent[keep], step[keep], eidx[keep]
        if window != (None, None) and len(child):
            ok = self._in_window(child, *window)
            child, parent, step, eidx = child[ok], parent[ok], step[ok], eidx[ok]
        if not len(child):
            return child, parent, step, eidx
        order = np.lexsort((step, parent, child))  # parent index = parent id order
        child, parent, step, eidx = child[order], parent[order], step[order], eidx[order]
        first = np.ones(len(child), dtype=bool)
        first[1:] = child[1:] != child[:-1]
        return child[first], parent[first], step[first], eidx[first]

    def walk(self, seeds: Sequence[str], *, hops: int, edge_types: Sequence[str] | None = None,
             time_from: str | None = None, time_to: str | None = None, limit: int | None = None) -> WalkResult:
        """`GraphStore.expand(seeds, hops, edge_types, direction="both", time_from, time_to, limit)`."""
        start = sorted({self.index[s] for s in seeds if s in self.index})
        if not start:
            return WalkResult()
        n = len(self.ids)
        hop = np.full(n, -1, dtype=np.int64)
        parent = np.full(n, -1, dtype=np.int64)
        step = np.zeros(n, dtype=np.int64)
        edge = np.full(n, -1, dtype=np.int64)
        seen = np.zeros(n, dtype=bool)
        frontier = np.asarray(start, dtype=np.int64)
        seen[frontier], hop[frontier] = True, 0
        types = np.asarray([EDGE_TYPES.index(t) for t in edge_types], dtype=np.int64) if edge_types else None
        for h in range(1, hops + 1):
            child, par, stp, eidx = self._step(frontier, seen, types, (time_from, time_to))
            if not len(child):
                break
            seen[child], hop[child], parent[child], step[child], edge[child] = True, h, par, stp, eidx
            frontier = child
        reached = np.flatnonzero(seen)
        reached = reached[np.lexsort((reached, hop[reached]))]
        if limit:
            reached = reached[:limit]
        return self._result(reached, hop, parent, step, edge)

    def _result(self, reached: np.ndarray, hop: np.ndarray, parent: np.ndarray, step: np.ndarray,
                edge: np.ndarray) -> WalkResult:
        out = WalkResult()
        for u in reached.tolist():
            path, labels, cur = [self.ids[u]], [], u
            while hop[cur] > 0:
                code, e = int(step[cur]), int(edge[cur])
                kind = EDGE_TYPES[code] if code >= 0 else EDGE_TYPES[-1 - code]
                labels.append(f"{kind}>" if code >= 0 else f"<{kind}")
                if self.inferred[e]:
                    out.inferred.add((self.ids[int(self.src[e])], kind, self.ids[int(self.dst[e])]))
                cur = int(parent[cur])
                path.append(self.ids[cur])
            path.reverse()
            labels.reverse()
            out.nodes.append(WalkedNode(id=self.ids[u], label=self.labels[u], chunk_ids=self.chunk_ids[u],
                                        hop=int(hop[u]), seed=path[0], path=tuple(path), path_edges=tuple(labels)))
        return out


def _time(node: Node, key: str) -> str | None:
    value = node.props.get(key)
    return None if value is None else str(value)
