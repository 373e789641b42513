"""Personalised PageRank over the passage graph, the exact in-memory vector matrix, the query-vector cache."""

from __future__ import annotations

import numpy as np
import pytest

from eventrag.query.cache import VectorMatrix
from eventrag.query.ppr import PassageGraph, PPRConfig
from eventrag.query.retrieve import QueryVectors
from eventrag.storage.base import Edge


def _mention(entity: str, chunk: str, topic: bool = False) -> Edge:
    return Edge(src=entity, type="MENTIONED_IN", dst=chunk, props={"topic": topic})


def _graph() -> PassageGraph:
    """film's passage names its director; the director's own passage is the second hop. A hub entity
    (a country) is named by every passage, including eight distractors."""
    edges = [_mention("film", "c_film", topic=True), _mention("director", "c_film"),
             _mention("director", "c_dir", topic=True), _mention("country", "c_film"), _mention("country", "c_dir")]
    for i in range(8):
        edges += [_mention("country", f"c_x{i}"), _mention(f"other{i}", f"c_x{i}", topic=True)]
    edges.append(_mention("ev_1", "c_x0"))  # an event's mention: not part of the passage graph
    chunks = ["c_film", "c_dir"] + [f"c_x{i}" for i in range(8)]
    entities = {"film", "director", "country"} | {f"other{i}" for i in range(8)}
    return PassageGraph.build(chunks, edges, entities)


def test_walk_from_the_question_entity_reaches_the_bridge_passage_not_the_hub_neighbours() -> None:
    g = _graph()
    assert "ev_1" not in g.row and g.degree("country") == 10 and g.degree("film") == 1
    assert g.topic["director"] == ["c_dir"] and set(g.named_in["c_film"]) == {"film", "director", "country"}
    top = g.top_passages(g.run({"film": 1.0}, {}), 10)
    ranked = [c for c, _ in top]
    assert ranked[:2] == ["c_film", "c_dir"] and top[0][1] == 1.0
    x_scores = [s for c, s in top if c.startswith("c_x")]
    assert max(x_scores) < dict(top)["c_dir"] / 3  # the hub spreads its share over ten passages


def test_specificity_rare_entity_outweighs_hub_and_passage_seeds_alone_work() -> None:
    g = _graph()
    both = dict(g.top_passages(g.run({"director": 1.0, "country": 1.0}, {}), 10))
    assert both["c_dir"] > both["c_x3"] * 3  # seed weight 1/degree: the hub's seed is 10x weaker
    only_dense = g.top_passages(g.run({}, {"c_x3": 1.0}), 3)
    assert only_dense[0][0] == "c_x3"
    assert g.top_passages(g.run({}, {}), 5) == []  # no seed, no walk
    assert g.top_passages(g.run({"unknown": 1.0}, {"nope": 1.0}), 5) == []


def test_damping_zero_keeps_all_mass_on_the_seeds() -> None:
    g = PassageGraph.build(["a", "b"], [_mention("e", "a", True), _mention("e", "b")], {"e"},
                           PPRConfig(damping=0.0))
    r = g.run({}, {"a": 1.0})
    assert r[g.row["a"]] == pytest.approx(1.0) and r[g.row["b"]] == 0.0


def test_vector_matrix_is_exact() -> None:
    rng = np.random.default_rng(0)
    mat = rng.normal(size=(200, 16)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    ids = [f"v{i}" for i in range(200)]
    vm = VectorMatrix(ids=ids, row={i: k for k, i in enumerate(ids)}, mat=mat)
    q = rng.normal(size=(3, 16)).astype(np.float32)
    got = vm.search(q, 7)
    for row, hits in zip(q, got, strict=True):
        want = np.argsort(-(mat @ row))[:7]
        assert [h for h, _ in hits] == [ids[i] for i in want]
        assert hits[0][1] == pytest.approx(float(mat[want[0]] @ row), rel=1e-5)
    sims = vm.sims(["v3", "missing"], q[0])
    assert set(sims) == {"v3"} and sims["v3"] == pytest.approx(float(mat[3] @ q[0]), rel=1e-5)
    assert VectorMatrix(ids=[], row={}, mat=np.zeros((0, 16), np.float32)).search(q, 3) == [[], [], []]


class _CountingEmbedder:
    dim = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray([[len(t), 1, 0, 0] for t in texts], dtype=np.float32)


def test_query_vectors_embed_each_text_once_in_one_batch_and_stay_bounded() -> None:
    emb = _CountingEmbedder()
    qv = QueryVectors(emb, size=2)
    first = qv.get(["a", "bb", "a"])
    assert first.shape == (3, 4) and emb.calls == [["a", "bb"]]
    assert np.array_equal(qv.get(["bb"])[0], first[1]) and len(emb.calls) == 1  # cached
    qv.get(["ccc"])  # evicts the least recently used ("a")
    qv.get(["a"])
    assert emb.calls[-1] == ["a"] and len(emb.calls) == 3
    qv.clear()
    qv.get(["bb"])
    assert emb.calls[-1] == ["bb"]


def test_title_key_matches_names_to_titles_up_to_article_and_disambiguation() -> None:
    from eventrag.query.cache import title_key

    assert title_key("The Rank Organisation") == title_key("Rank Organisation") == "rank organisation"
    assert title_key("Brand (play)") == "brand" and title_key("Siege of Cassel (1761)") == "siege of cassel"
    assert title_key("The Who") == "the who"  # too short to lose its article
    assert title_key("") == ""


def test_a_span_written_only_in_lower_case_is_not_a_name() -> None:
    from eventrag.query.retrieve import _lowercase_in

    q = "What is the usual average snowfall in the city where the performers of Brother were formed?"
    assert _lowercase_in(q, "average") and _lowercase_in(q, "the city")
    assert not _lowercase_in(q, "brother") and not _lowercase_in(q, "missing")
    assert not _lowercase_in("Hank Snow lived in Nashville", "hank snow")
