"""Hostile text (quotes, backticks, Cypher/SQL/Milvus-expression fragments, Unicode) is data: it
round-trips unchanged and cannot alter any query."""

from __future__ import annotations

import numpy as np
import pytest

from eventrag.storage.base import Edge, GraphStore, Node
from eventrag.storage.vector_milvus import MilvusVectorStore, milvus_filter

NASTY = [
    'O\'Brien "the" `great`',
    "x'}) MATCH (n) DETACH DELETE n //",
    "})-[:X]->(",
    "a'); DROP TABLE nodes; --",
    '" || true || "',
    'back\\slash \\" \\u0041',
    "Zürich 東京 😀 \u200b\u202e tab\tnew\nline\x01",
    "$ns {ns} ?1 %s",
]


def test_graph_roundtrip_of_hostile_text(graph: GraphStore, open_graph) -> None:
    bystander = open_graph(graph.namespace + "_bystander")
    bystander.upsert_nodes([Node(id="keep", label="Event", doc_ids=["d"])])
    nodes = [
        Node(id=s, label="Entity", props={"name": s, s: [s, {s: s}]}, doc_ids=[s, "plain"]) for s in NASTY
    ]
    graph.upsert_nodes(nodes)
    edges = [
        Edge(src=a, dst=b, type="RELATED_TO", props={"why": a + b}, doc_ids=[a])
        for a, b in zip(NASTY, NASTY[1:], strict=False)
    ]
    graph.upsert_edges(edges)
    assert graph.count() == (len(NASTY), len(NASTY) - 1)
    for sent, got in zip(nodes, graph.get_nodes(NASTY), strict=True):
        assert got.id == sent.id and got.props == sent.props and sorted(got.doc_ids) == sorted(sent.doc_ids)
    for s in NASTY:
        assert [n.id for n in graph.find_nodes(name=s)] == [s]
        assert [n.id for n in graph.find_nodes(doc_id=s)] == [s]
    got_edges = {(e.src, e.dst): e for e in graph.get_edges(NASTY)}
    for e in edges:
        assert got_edges[(e.src, e.dst)].props == e.props and got_edges[(e.src, e.dst)].doc_ids == e.doc_ids
    reach = graph.expand([NASTY[3]], hops=4)
    assert sorted(reach.ids()) == sorted(NASTY)
    assert graph.delete_document(NASTY[1]).nodes_deleted == 0  # every node also has "plain"
    assert graph.count() == (len(NASTY), len(NASTY) - 2)
    assert bystander.count() == (1, 0)


@pytest.mark.parametrize("value", NASTY)
def test_milvus_filter_values_cannot_escape(
    milvus_lite: MilvusVectorStore, collection: str, value: str
) -> None:
    milvus_lite.create_collection(collection, dim=4)
    vecs = np.eye(4, dtype=np.float32)
    milvus_lite.upsert(
        collection,
        [value, "b", "c", "d"],
        vecs,
        [{"doc": value, "tag": value}, {"doc": "x"}, {"doc": "y"}, {}],
    )
    hits = milvus_lite.search(collection, vecs[1:2], top_k=4, filter={"doc": value})[0]
    assert [h.id for h in hits] == [value]
    assert hits[0].metadata == {"doc": value, "tag": value}
    assert milvus_lite.count(collection, {"doc": value}) == 1
    assert milvus_lite.get(collection, [value])[0].metadata["tag"] == value
    assert milvus_lite.delete(collection, filter={"doc": value}) == 1
    assert milvus_lite.count(collection) == 3


def test_milvus_filter_keys_must_be_identifiers() -> None:
    from eventrag.storage.errors import InvalidInput

    for key in ['doc"] == 1 or meta["x', "a b", "", "1x", "é"]:
        with pytest.raises(InvalidInput):
            milvus_filter({key: "v"})
    with pytest.raises(InvalidInput):
        milvus_filter({"k": {"nested": 1}})
    assert (
        milvus_filter({"a": 1, "b": [True, 2.5]})
        == 'meta["a"] == 1 and (meta["b"] == true or meta["b"] == 2.5)'
    )
