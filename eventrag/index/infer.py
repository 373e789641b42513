"""Knowledge expansion: rule-based links between events that share a participant and are close in time.

Every edge made here is `inferred=True` (stored with the flag): retrieval may follow it to reach
evidence, but an inferred edge alone never makes a chunk count as evidence.

The inferred edges of an index are a function of its documents, whatever the order they came in:
the union over all events of the links each event picks (its nearest `max_links_per_event` events
sharing a non-hub participant). An event's pick depends on every event of its participants, so when
a change adds or removes events, `refresh_inferred` recomputes the picks of every event that shares a
(non-hub) participant with the change, and of the other ends of their old inferred links.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eventrag.dates import days_between
from eventrag.schema import EventTime
from eventrag.storage.base import Edge, GraphStore, Node


@dataclass(frozen=True)
class ExpansionConfig:
    max_days: float = 365.0  # "close in time": at most this many days apart
    max_events_per_entity: int = 40  # hub entities ("United States") link nothing
    max_links_per_event: int = 8


def _time(node: Node) -> EventTime:
    p = node.props
    return EventTime(start=p.get("time_start"), end=p.get("time_end") or p.get("time_start"))


def expand_shared_participants(graph: GraphStore, new_event_ids: Sequence[str],
                               config: ExpansionConfig | None = None, hubs: set[str] | None = None) -> list[Edge]:
    """Inferred BEFORE (disjoint times) or RELATED_TO (overlapping) edges from each new event to events sharing a participant within max_days.

    `hubs`: entities known to take part in more than `max_events_per_entity` events (their events are
    not loaded again); the hubs found are added to it."""
    cfg = config or ExpansionConfig()
    if not new_event_ids:
        return []
    new_set = set(new_event_ids)
    # event -> its participant entities
    part_edges = graph.get_edges(list(new_event_ids), edge_types=["PARTICIPATES_IN"])
    entities_of: dict[str, set[str]] = {}
    for e in part_edges:
        if e.dst in new_set:
            entities_of.setdefault(e.dst, set()).add(e.src)
    all_entities = sorted({x for s in entities_of.values() for x in s})
    if not all_entities:
        return []
    # entity -> all events it participates in (old and new)
    events_of: dict[str, set[str]] = {}
    for e in graph.get_edges([x for x in all_entities if x not in (hubs or ())], edge_types=["PARTICIPATES_IN"]):
        if e.src in entities_of.get(e.dst, ()) or e.src in all_entities:
            events_of.setdefault(e.src, set()).add(e.dst)
    if hubs is not None:
        hubs.update(k for k, v in events_of.items() if len(v) > cfg.max_events_per_entity)
    events_of = {k: v for k, v in events_of.items() if len(v) <= cfg.max_events_per_entity}
    wanted = sorted({ev for v in events_of.values() for ev in v} | new_set)
    nodes = {n.id: n for n in graph.get_nodes(wanted)}
    times = {i: _time(n) for i, n in nodes.items()}  # each node's time and chunks read once, not per pair
    chunks = {i: set(n.props.get("chunk_ids", [])) for i, n in nodes.items()}
    edges: dict[tuple[str, str], Edge] = {}
    for ev in new_event_ids:
        if ev not in nodes or times[ev].start is None:
            continue
        links: list[tuple[float, str, str]] = []
        for ent in entities_of.get(ev, ()):
            for other in events_of.get(ent, ()):
                if other == ev or other not in nodes or chunks[other] & chunks[ev]:
                    continue  # same chunk: the extractor already relates them
                gap = days_between(times[ev], times[other])
                if gap is not None and gap <= cfg.max_days:
                    links.append((gap, other, ent))
        for gap, other, ent in sorted(links)[: cfg.max_links_per_event]:
            a, b = sorted((ev, other))
            if (a, b) not in edges:
                docs = list(dict.fromkeys(nodes[a].doc_ids + nodes[b].doc_ids))
                ta, tb = times[a], times[b]
                # disjoint times give a temporal order; overlapping ones only a generic link
                if gap > 0:
                    first, second = (a, b) if (ta.end or ta.start or "") < (tb.start or "") else (b, a)
                    edge = Edge(src=first, dst=second, type="BEFORE", inferred=True, doc_ids=docs,
                                props={"rule": "shared_participant_close_in_time", "via": ent, "days": gap})
                else:
                    edge = Edge(src=a, dst=b, type="RELATED_TO", inferred=True, doc_ids=docs,
                                props={"rule": "shared_participant_close_in_time", "via": ent, "days": gap})
                edges[(a, b)] = edge
    return list(edges.values())


INFERRED_TYPES = ("BEFORE", "RELATED_TO")


def refresh_inferred(graph: GraphStore, new_event_ids: Sequence[str], touched_entities: Sequence[str] = (),
                     config: ExpansionConfig | None = None, hubs: set[str] | None = None) -> int:
    """Bring the inferred edges around a change to what a clean index of the same documents holds.

    `new_event_ids`: events just written; `touched_entities`: entities of documents just removed (their
    events are gone). `hubs`: entities known to be hubs since the last removal (events only added since,
    so they still are: their events are never loaded again, which keeps a long document's slices from
    re-reading every event of its title); the caller empties it when it removes documents. Returns the
    net change in the number of inferred edges."""
    cfg = config or ExpansionConfig()
    new = set(new_event_ids)
    added: dict[str, int] = {}  # entity -> how many of the new events it takes part in
    for e in graph.get_edges(sorted(new), edge_types=["PARTICIPATES_IN"]) if new else []:
        if e.dst in new:
            added[e.src] = added.get(e.src, 0) + 1
    entities = set(added) | set(touched_entities)
    load = sorted(entities - (hubs or set()) if not touched_entities else entities)
    events_of: dict[str, set[str]] = {}
    for e in graph.get_edges(load, edge_types=["PARTICIPATES_IN"]) if load else []:
        if e.src in entities:
            events_of.setdefault(e.src, set()).add(e.dst)
    affected = set(new)
    for ent, events in events_of.items():
        # a hub before and after the change (more events than the cap) links nothing either way
        if len(events) - added.get(ent, 0) <= cfg.max_events_per_entity:
            affected |= events
    if not affected:
        return 0
    old = {e.key for e in _inferred_touching(graph, affected)}
    pickers = affected | {x for src, _, dst in old for x in (src, dst)}
    neighbours = pickers - affected  # only their other inferred edges are still unknown
    before = old | ({e.key for e in _inferred_touching(graph, neighbours)} if neighbours else set())
    if old:
        graph.delete_edges(sorted(old))
    edges = expand_shared_participants(graph, sorted(pickers), cfg, hubs)
    if edges:
        graph.upsert_edges(edges)
    return len((before - old) | {e.key for e in edges}) - len(before)


def _inferred_touching(graph: GraphStore, ids: set[str]) -> list[Edge]:
    return [e for e in graph.get_edges(sorted(ids), edge_types=list(INFERRED_TYPES)) if e.inferred]
