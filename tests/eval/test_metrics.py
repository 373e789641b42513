"""Multi-hop metrics on hand-computed cases (MultiHopRAG definitions, SQuAD EM/F1, Recall@k)."""

from __future__ import annotations

import pytest

from eval.multihop.metrics import (
    aggregate,
    answer_metrics,
    exact_match,
    extract_multihoprag_answer,
    f1_score,
    multihoprag_accuracy,
    multihoprag_retrieval,
    normalize_answer,
    recall_at_k,
)

GOLD = ["Alpha beta", "gamma\ndelta"]


def test_hits_map_mrr_two_hits_at_ranks_2_and_4():
    retrieved = ["nothing", "xx Alpha  beta yy", "noise", "gam ma delta!", "more"]
    m = multihoprag_retrieval(retrieved, GOLD)
    # spaces/newlines removed: "Alphabeta" found at rank 2, "gammadelta" at rank 4
    assert m == {"hits@4": 1.0, "hits@10": 1.0, "map@10": pytest.approx((1 / 2 + 1 / 4) / 2), "mrr@10": 0.5}


def test_first_hit_at_rank_5_misses_hits_at_4():
    retrieved = ["a", "b", "c", "d", "Alpha beta", "e"]
    m = multihoprag_retrieval(retrieved, GOLD)
    assert m["hits@4"] == 0.0 and m["hits@10"] == 1.0
    assert m["mrr@10"] == pytest.approx(0.2)
    assert m["map@10"] == pytest.approx((1 / 5) / 2)


def test_one_chunk_holding_both_facts_counts_both():
    m = multihoprag_retrieval(["Alpha beta and gamma delta"], GOLD)
    assert m["map@10"] == pytest.approx((2 / 1) / 2) == 1.0


def test_a_fact_found_again_adds_nothing_to_map_but_still_hits():
    m = multihoprag_retrieval(["Alpha beta", "Alpha beta again"], GOLD)
    assert m["map@10"] == pytest.approx(0.5)
    assert m["mrr@10"] == 1.0


def test_only_first_ten_items_count():
    retrieved = [f"junk {i}" for i in range(10)] + ["Alpha beta"]
    assert multihoprag_retrieval(retrieved, GOLD) == {
        "hits@4": 0.0,
        "hits@10": 0.0,
        "map@10": 0.0,
        "mrr@10": 0.0,
    }


def test_map_is_divided_by_min_of_gold_count_and_10():
    gold = [f"fact number {i}" for i in range(12)]
    m = multihoprag_retrieval(["fact number 3 is here"], gold)
    assert m["map@10"] == pytest.approx(1 / 10)  # not 1/12
    m3 = multihoprag_retrieval(["fact number 3 is here"], gold[2:5])
    assert m3["map@10"] == pytest.approx(1 / 3)


def test_retrieval_metrics_refuse_empty_gold():
    with pytest.raises(ValueError, match="null queries"):
        multihoprag_retrieval(["x"], [])


def test_recall_at_k_over_distinct_titles():
    titles = ["A", "A", "B", "C", "D"]
    r = recall_at_k(titles, ["B", "D"], ks=(1, 2, 4, 5))
    assert r == {"recall@1": 0.0, "recall@2": 0.5, "recall@4": 1.0, "recall@5": 1.0}


def test_squad_normalisation_em_f1():
    assert normalize_answer("  The Eiffel-Tower!  ") == "eiffeltower"
    assert exact_match("The Eiffel Tower.", ["Eiffel Tower"]) == 1.0
    assert exact_match("Tower", ["Eiffel Tower"]) == 0.0
    assert f1_score("Paris France", ["Paris"]) == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert f1_score("Lyon", ["Paris", "city of Lyon"]) == pytest.approx(0.5)  # best alias: p=1, r=1/3
    assert f1_score("the", ["a"]) == 0.0


def test_multihoprag_accuracy_word_overlap_and_extraction():
    assert extract_multihoprag_answer('The answer to the question is "Northwind Co".') == "Northwind Co"
    assert multihoprag_accuracy('The answer to the question is "Northwind Co"', "Northwind Robotics") == 1.0
    assert multihoprag_accuracy("Yes", "yes") == 1.0
    assert multihoprag_accuracy("No", "Yes") == 0.0
    # no normalisation beyond lower-casing: punctuation stays part of the token
    assert multihoprag_accuracy("Yes.", "Yes") == 0.0


def test_answer_metrics_bundle():
    assert answer_metrics("Northwind Robotics", ["Northwind Robotics"]) == {"em": 1.0, "f1": 1.0, "acc": 1.0}
    with pytest.raises(ValueError):
        answer_metrics("x", [])


def test_aggregate_skips_missing_metrics_per_key_and_groups_by_type():
    records = [
        {"question_type": "inference_query", "metrics": {"hits@4": 1.0, "em": 1.0}},
        {"question_type": "inference_query", "metrics": {"hits@4": 0.0, "em": 0.0}},
        {"question_type": "null_query", "metrics": {"em": 1.0}},  # no retrieval metrics for null queries
    ]
    agg = aggregate(records)
    assert agg["n"] == 3
    assert agg["overall"]["hits@4"] == 0.5 and agg["overall"]["n_hits@4"] == 2
    assert agg["overall"]["em"] == pytest.approx(2 / 3) and agg["overall"]["n_em"] == 3
    assert agg["by_type"]["null_query"] == {"n": 1, "em": 1.0, "n_em": 1}
