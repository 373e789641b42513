"""The GraphStore contract, run against every backend (embedded SQLite, real Neo4j)."""

from __future__ import annotations

import uuid

import pytest

from eventrag.storage.base import Edge, GraphStore, Node
from eventrag.storage.errors import MissingNode, NamespaceMismatch, StoreClosed, UnknownEdgeType, UnknownLabel


def ev(i: str, t: str | None = None, doc: str = "d1", **props) -> Node:
    if t:
        props["time_start"] = t
    return Node(id=i, label="Event", props={"name": f"Event {i}", **props}, doc_ids=[doc])


def chain(store: GraphStore) -> None:
    """a -BEFORE-> b -CAUSES-> c -BEFORE-> d, and x -PARTICIPATES_IN-> b."""
    store.upsert_nodes(
        [ev("a", "2020-01-01"), ev("b", "2020-02-01"), ev("c", "2020-03-01"), ev("d", "2020-04-01")]
    )
    store.upsert_nodes([Node(id="x", label="Entity", props={"name": "Ada Lovelace"}, doc_ids=["d2"])])
    store.upsert_edges(
        [
            Edge(src="a", dst="b", type="BEFORE", doc_ids=["d1"]),
            Edge(src="b", dst="c", type="CAUSES", doc_ids=["d1"], props={"confidence": 0.9}),
            Edge(src="c", dst="d", type="BEFORE", doc_ids=["d1"]),
            Edge(src="x", dst="b", type="PARTICIPATES_IN", doc_ids=["d2"]),
        ]
    )


def assert_paths_valid(store: GraphStore, result) -> None:
    edges = {(e.src, e.type, e.dst) for e in store.get_edges(result.ids())}
    for item in result.nodes:
        assert len(item.path) == item.hop + 1 and len(item.path_edges) == item.hop
        assert item.path[0] == item.seed and item.path[-1] == item.node.id
        for (u, v), step in zip(zip(item.path, item.path[1:], strict=False), item.path_edges, strict=True):
            key = (u, step[:-1], v) if step.endswith(">") else (v, step[1:], u)
            assert key in edges, (item.node.id, key)


def test_roundtrip_and_order(graph: GraphStore) -> None:
    nested = {"name": "Zürich 東京 😀", "tags": ["a", "b"], "nested": {"k": [1, 2.5, None, True]}, "n": 3}
    assert (
        graph.upsert_nodes([Node(id="n1", label="Entity", props=nested, doc_ids=["d1", "d2"]), ev("n2")]) == 2
    )
    got = graph.get_nodes(["n2", "missing", "n1"])
    assert [n.id for n in got] == ["n2", "n1"]
    assert got[1].props == nested and got[1].label == "Entity"
    assert sorted(got[1].doc_ids) == ["d1", "d2"] and got[1].namespace == graph.namespace
    assert graph.count() == (2, 0)


def test_upsert_twice_is_idempotent(graph: GraphStore) -> None:
    chain(graph)
    before = graph.count()
    chain(graph)
    assert graph.count() == before == (5, 4)
    assert graph.get_nodes(["a"])[0].doc_ids == ["d1"]
    assert [e.doc_ids for e in graph.get_edges(["a"])] == [["d1"]]


def test_merge_semantics(graph: GraphStore) -> None:
    graph.upsert_nodes([Node(id="e", label="Entity", props={"name": "E", "k": 1, "gone": 2}, doc_ids=["d1"])])
    graph.upsert_nodes(
        [Node(id="e", label="Event", props={"k": 5, "gone": None, "new": "x"}, doc_ids=["d2"])]
    )
    node = graph.get_nodes(["e"])[0]
    assert node.label == "Event"
    assert node.props == {"name": "E", "k": 5, "new": "x"}
    assert sorted(node.doc_ids) == ["d1", "d2"]
    graph.upsert_nodes([ev("f")])
    graph.upsert_edges([Edge(src="e", dst="f", type="ENABLES", inferred=True, props={"w": 1})])
    graph.upsert_edges(
        [Edge(src="e", dst="f", type="ENABLES", inferred=True, props={"v": 2}, doc_ids=["d3"])]
    )
    (edge,) = graph.get_edges(["e"])
    assert edge.inferred and edge.props == {"w": 1, "v": 2} and edge.doc_ids == ["d3"]
    graph.upsert_edges([Edge(src="e", dst="f", type="ENABLES", inferred=False)])
    assert graph.get_edges(["e"])[0].inferred is False
    assert graph.count() == (2, 1)
    assert graph.find_nodes(name="e")[0].id == "e"  # name kept through the merge


def test_edges_need_their_nodes_and_nothing_is_written(graph: GraphStore) -> None:
    graph.upsert_nodes([ev("a"), ev("b")])
    with pytest.raises(MissingNode, match="ghost"):
        graph.upsert_edges([Edge(src="a", dst="b", type="BEFORE"), Edge(src="a", dst="ghost", type="CAUSES")])
    assert graph.count() == (2, 0)


def test_empty_batches_and_lookups(graph: GraphStore) -> None:
    assert graph.upsert_nodes([]) == 0
    assert graph.upsert_edges([]) == 0
    assert graph.get_nodes([]) == [] and graph.get_edges([]) == []
    assert graph.expand([]).nodes == [] and graph.neighbors(["nope"]).nodes == []
    assert graph.count() == (0, 0)


def test_unknown_types_and_labels_are_rejected(graph: GraphStore) -> None:
    graph.upsert_nodes([ev("a"), ev("b")])
    with pytest.raises(UnknownEdgeType, match="FOO"):
        Edge(src="a", dst="b", type="FOO")
    smuggled = Edge.model_construct(
        src="a", dst="b", type="BEFORE]->(x) DETACH DELETE x //", props={}, doc_ids=[]
    )
    with pytest.raises(UnknownEdgeType):
        graph.upsert_edges([Edge(src="a", dst="b", type="BEFORE"), smuggled])
    with pytest.raises(UnknownEdgeType):
        graph.expand(["a"], edge_types=["CAUSES", "NOPE"])
    with pytest.raises(UnknownLabel):
        Node(id="z", label="Person")
    with pytest.raises(UnknownLabel):
        graph.upsert_nodes([Node.model_construct(id="z", label="X:Y", props={}, doc_ids=[], namespace=None)])
    with pytest.raises(NamespaceMismatch):
        graph.upsert_nodes([Node(id="z", label="Event", namespace="someone-else")])
    assert graph.count() == (2, 0)


def test_expand_hops_paths_and_edges(graph: GraphStore) -> None:
    chain(graph)
    res = graph.expand(["a"], hops=2)
    assert {(n.node.id, n.hop) for n in res.nodes} == {("a", 0), ("b", 1), ("c", 2), ("x", 2)}
    assert [n.hop for n in res.nodes] == sorted(n.hop for n in res.nodes)
    assert_paths_valid(graph, res)
    assert {(e.src, e.type, e.dst) for e in res.edges} == {
        ("a", "BEFORE", "b"),
        ("b", "CAUSES", "c"),
        ("x", "PARTICIPATES_IN", "b"),
    }
    assert next(e for e in res.edges if e.type == "CAUSES").props == {"confidence": 0.9}
    assert {n.node.id for n in graph.expand(["a"], hops=0).nodes} == {"a"}
    full = graph.expand(["a", "d"], hops=3)
    assert {n.node.id: n.hop for n in full.nodes} == {"a": 0, "d": 0, "b": 1, "c": 1, "x": 2}
    assert_paths_valid(graph, full)


def test_expand_direction_and_edge_types(graph: GraphStore) -> None:
    chain(graph)
    out = graph.expand(["b"], hops=3, direction="out")
    assert {n.node.id for n in out.nodes} == {"b", "c", "d"}
    inward = graph.expand(["b"], hops=3, direction="in")
    assert {n.node.id for n in inward.nodes} == {"b", "a", "x"}
    assert all(s.startswith("<") for n in inward.nodes for s in n.path_edges)
    before_only = graph.expand(["a"], hops=3, edge_types=["BEFORE"])
    assert {n.node.id for n in before_only.nodes} == {"a", "b"}
    causal = graph.expand(["b"], hops=2, edge_types=["CAUSES", "BEFORE"], direction="out")
    assert {n.node.id for n in causal.nodes} == {"b", "c", "d"}


def test_expand_time_window(graph: GraphStore) -> None:
    chain(graph)
    # c (March) is outside the window: d behind it is unreachable; x has no time, so it passes
    res = graph.expand(["a"], hops=3, time_from="2020-01-15", time_to="2020-02-28")
    assert {n.node.id for n in res.nodes} == {"a", "b", "x"}
    late = graph.expand(["d"], hops=3, time_from="2020-03-01")
    assert {n.node.id for n in late.nodes} == {"d", "c"}


def test_expand_limit_keeps_nearest(graph: GraphStore) -> None:
    chain(graph)
    res = graph.expand(["a"], hops=3, limit=3)
    assert [(n.node.id, n.hop) for n in res.nodes] == [("a", 0), ("b", 1), ("c", 2)]


def test_expand_paths_do_not_depend_on_write_order(graph: GraphStore) -> None:
    """A node reached by two shortest paths keeps the one through the parent with the smallest id,
    however the store was filled (an incremental index and a clean one write rows in other orders)."""
    nodes = [ev(i, "2020-01-01") for i in ("s", "a", "b", "t")]
    edges = [Edge(src="s", dst="a", type="BEFORE"), Edge(src="s", dst="b", type="BEFORE"),
             Edge(src="a", dst="t", type="BEFORE"), Edge(src="b", dst="t", type="CAUSES")]  # fmt: skip
    seen = []
    for order in (slice(None), slice(None, None, -1)):
        graph.clear()
        graph.upsert_nodes(nodes[order])
        for e in edges[order]:
            graph.upsert_edges([e])
        res = graph.expand(["s"], hops=2, limit=4)
        seen.append([(n.node.id, n.path, n.path_edges) for n in res.nodes])
    assert seen[0] == seen[1]
    assert ("t", ["s", "a", "t"], ["BEFORE>", "BEFORE>"]) in seen[0]


def test_neighbors(graph: GraphStore) -> None:
    chain(graph)
    res = graph.neighbors(["b"])
    assert sorted(n.node.id for n in res.nodes) == ["a", "c", "x"]
    assert all(n.hop == 1 and n.seed == "b" for n in res.nodes)
    assert [n.node.id for n in graph.neighbors(["b"], edge_types=["CAUSES"]).nodes] == ["c"]
    assert [n.node.id for n in graph.neighbors(["b"], direction="in", limit=1).nodes] == ["a"]


def test_find_nodes(graph: GraphStore) -> None:
    chain(graph)
    graph.upsert_nodes([Node(id="z", label="Entity", props={"name": "Zürich"}, doc_ids=["d3"])])
    assert [n.id for n in graph.find_nodes(name="ada lovelace")] == ["x"]
    assert [n.id for n in graph.find_nodes(name="ZÜRICH")] == ["z"]
    assert [n.id for n in graph.find_nodes(label="Entity", name_contains="LOVE")] == ["x"]
    assert [n.id for n in graph.find_nodes(label="Event", limit=2)] == ["a", "b"]
    assert [n.id for n in graph.find_nodes(doc_id="d2")] == ["x"]
    assert graph.find_nodes(label="Chunk") == []
    assert graph.find_nodes(name="Event a", label="Entity") == []


def test_delete_document(graph: GraphStore) -> None:
    chain(graph)
    graph.upsert_nodes([Node(id="b", label="Event", doc_ids=["d2"])])  # b now shared by d1 and d2
    graph.upsert_edges([Edge(src="a", dst="b", type="BEFORE", doc_ids=["d2"])])  # so is a->b
    res = graph.delete_document("d1")
    assert res.nodes_deleted == 3 and res.nodes_updated == 1  # a, c, d gone; b stripped
    assert sorted(n.id for n in graph.get_nodes(["a", "b", "c", "d", "x"])) == ["b", "x"]
    assert graph.get_nodes(["b"])[0].doc_ids == ["d2"]
    assert {(e.src, e.dst) for e in graph.get_edges(["b"])} == {("x", "b")}
    assert graph.count() == (2, 1)
    assert graph.delete_document("d1").nodes_deleted == 0
    graph.delete_document("d2")
    assert graph.count() == (0, 0)


def test_delete_edges_by_identity(graph: GraphStore) -> None:
    chain(graph)
    graph.upsert_edges([Edge(src="a", dst="b", type="CAUSES", doc_ids=["d1"])])  # a second a->b, other type
    deleted = graph.delete_edges([("a", "BEFORE", "b"), ("a", "BEFORE", "b"), ("b", "BEFORE", "a"),
                                  ("c", "BEFORE", "zzz")])  # fmt: skip
    assert deleted == 1  # the repeated key counts once; reversed and missing keys are not edges
    assert {(e.src, e.type, e.dst) for e in graph.get_edges(["a"])} == {("a", "CAUSES", "b")}
    assert len(graph.get_nodes(["a", "b"])) == 2  # the nodes stay
    assert graph.count() == (5, 4)
    assert graph.delete_edges([]) == 0
    with pytest.raises(UnknownEdgeType):
        graph.delete_edges([("a", "NOT_A_TYPE", "b")])


def test_namespaces_isolate(open_graph) -> None:
    tag = uuid.uuid4().hex[:8]
    one, two = open_graph(f"one_{tag}"), open_graph(f"two_{tag}")
    chain(one)
    two.upsert_nodes([ev("a", doc="d1"), ev("q", doc="d1")])
    two.upsert_edges([Edge(src="a", dst="q", type="RELATED_TO")])
    assert one.count() == (5, 4) and two.count() == (2, 1)
    assert {n.node.id for n in two.expand(["a"], hops=3).nodes} == {"a", "q"}
    assert [n.id for n in two.find_nodes(name_contains="event")] == ["a", "q"]
    two.delete_document("d1")
    assert two.count() == (0, 0) and one.count() == (5, 4)
    one.clear()
    assert one.count() == (0, 0)


def test_stats(graph: GraphStore) -> None:
    chain(graph)
    st = graph.stats()
    assert (st.nodes, st.edges, st.documents) == (5, 4, 2)
    assert st.nodes_by_label == {"Event": 4, "Entity": 1}
    assert st.edges_by_type == {"BEFORE": 2, "CAUSES": 1, "PARTICIPATES_IN": 1}


def test_closed_store_raises(open_graph) -> None:
    store = open_graph()
    store.close()
    with pytest.raises(StoreClosed):
        store.get_nodes(["a"])
