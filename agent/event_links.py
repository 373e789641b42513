"""The event graph's links around the chunks a tool has in hand: the CAUSES edges between the events
those chunks state, as texts (`agent.causal.GraphLink`).

The graph store sits behind the search backend (`Retriever.graph`, also through a `ModeBackend`); a
backend without one (a web search, a test double) has no event graph, and the tools then read causal
links from the sentences alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.causal import GraphLink
from eventrag.storage.base import GraphStore, Node

MAX_EVENTS = 400  # events read per call: a few chunks state a few dozen


def backend_graph(backend: object) -> GraphStore | None:
    """The graph store of the retriever behind a search backend, or None."""
    for obj in (backend, getattr(backend, "inner", None)):
        graph = getattr(obj, "graph", None)
        if graph is not None and callable(getattr(graph, "get_edges", None)):
            return graph  # type: ignore[no-any-return]
    return None


def _text(node: Node) -> str:
    return str(node.props.get("description") or node.props.get("name") or "")


def causal_edges(graph: GraphStore, chunk_ids: Sequence[str]) -> list[GraphLink]:
    """The CAUSES edges that touch an event stated in `chunk_ids` (extracted edges only: an inferred
    edge is never evidence), each with the chunk of its effect event."""
    if not chunk_ids:
        return []
    mentions = graph.get_edges(list(chunk_ids), edge_types=["MENTIONED_IN"])
    event_ids = sorted({e.src for e in mentions if e.dst in set(chunk_ids)})[:MAX_EVENTS]
    if not event_ids:
        return []
    edges = [e for e in graph.get_edges(event_ids, edge_types=["CAUSES"]) if not e.inferred]
    ends = {n.id: n for n in graph.get_nodes(sorted({e.src for e in edges} | {e.dst for e in edges}))}
    out: list[GraphLink] = []
    for e in edges:
        cause, effect = ends.get(e.src), ends.get(e.dst)
        if cause is None or effect is None or cause.label != "Event" or effect.label != "Event":
            continue
        chunks = list(effect.props.get("chunk_ids") or []) or list(cause.props.get("chunk_ids") or [])
        out.append(GraphLink(_text(cause), _text(effect), str(chunks[0]) if chunks else ""))
    return out
