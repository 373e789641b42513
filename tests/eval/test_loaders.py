"""Loaders: fixtures in the official formats, and real shared files (read-only)."""

from __future__ import annotations

import json

import pytest

from eval.multihop.loaders import (
    DatasetFormatError,
    load_folder,
    load_multihoprag,
    resolve_dataset,
)


def test_multihoprag_fixture(fixtures_dir):
    ds = load_folder(fixtures_dir / "multihoprag")
    assert ds.name == "multihoprag" and len(ds.examples) == 4 and len(ds.passages) == 4
    first = ds.examples[0]
    assert first.question_type == "inference_query" and first.answers == ["Northwind Robotics"]
    assert len(first.gold_facts) == 2 and first.gold_titles[0] == "Northwind Robotics unveils warehouse arm"
    null = ds.examples[3]
    assert null.is_null and null.gold_facts == [] and null.answers == ["Insufficient information."]
    doc = ds.passages[0].to_document()
    assert doc.date == "2023-10-02" and doc.source.startswith("https://") and "Gripper-7" in doc.text


def test_multihoprag_rejects_wrong_shape(tmp_path, fixtures_dir):
    bad = tmp_path / "MultiHopRAG.json"
    bad.write_text(json.dumps([{"query": "q?", "answer": "a"}]))
    with pytest.raises(DatasetFormatError, match="question_type"):
        load_multihoprag(fixtures_dir / "multihoprag" / "corpus.json", bad)
    with pytest.raises(DatasetFormatError, match="does not exist"):
        load_multihoprag(tmp_path / "nope.json", bad)


def test_hotpotqa_fixture(fixtures_dir):
    ds = load_folder(fixtures_dir / "multihop" / "hotpotqa_mini")
    ex = ds.examples[0]
    assert ds.name == "hotpotqa" and ex.question_type == "bridge"
    assert ex.gold_titles == ["Velora Bridge", "Marnis"] and ex.answers == ["Pia Kessel"]
    assert len(ds.passages) == 3  # context and corpus hold the same passages: no duplicates
    by_id = {p.passage_id: p for p in ds.passages}
    assert (
        by_id[ex.passage_ids[0]].text == "Velora Bridge is a suspension bridge in Marnis. It opened in 1931."
    )
    assert [by_id[pid].title for pid in ex.gold_passage_ids] == ["Velora Bridge", "Marnis"]


def test_musique_fixture_keeps_same_title_passages_apart(fixtures_dir):
    ds = load_folder(fixtures_dir / "multihop" / "musique_mini")
    ex = ds.examples[0]
    assert ex.question_type == "2hop" and ex.answers == ["Harriet Vance", "H. Vance"]
    assert ex.gold_titles == ["Quillon Press", "Harriet Vance"]
    assert len(ds.passages) == 3  # two "Harriet Vance" paragraphs, the duplicate corpus row collapsed
    assert len({p.passage_id for p in ds.passages}) == 3
    by_id = {p.passage_id: p for p in ds.passages}
    supporting = [by_id[pid] for pid in ex.gold_passage_ids]  # the supporting paragraph, not its namesake
    assert [p.title for p in supporting] == ["Quillon Press", "Harriet Vance"]
    assert "founded" in supporting[1].text and "painter" not in supporting[1].text


def test_2wiki_fixture_is_retrieval_only(fixtures_dir):
    ds = load_folder(fixtures_dir / "multihop" / "2wiki_mini")
    assert ds.name == "2wiki" and ds.retrieval_only
    assert ds.examples[0].gold_titles == ["Velora Bridge", "Ivo Marek"] and not ds.examples[0].has_answer


def test_resolve_by_name_and_errors(fixtures_dir, tmp_path):
    assert resolve_dataset("hotpotqa", fixtures_dir).name == "hotpotqa"  # found under <dir>/multihop/
    assert resolve_dataset(str(fixtures_dir / "multihoprag")).name == "multihoprag"
    with pytest.raises(DatasetFormatError, match="--data-dir"):
        resolve_dataset("musique")
    with pytest.raises(DatasetFormatError, match="neither a folder"):
        resolve_dataset("squad", fixtures_dir)
    with pytest.raises(DatasetFormatError, match="no folder"):
        resolve_dataset("musique", tmp_path)


def test_select_and_corpus_subset(fixtures_dir):
    ds = load_folder(fixtures_dir / "multihoprag")
    small = ds.select(1)
    assert len(small.examples) == 1
    sub = ds.corpus_for(small.examples)
    assert {p.title for p in sub} == set(small.examples[0].gold_titles)
    assert len(ds.corpus_for(small.examples, extra=1)) == len(sub) + 1
    with pytest.raises(ValueError):
        ds.select(0)


def test_real_shared_sets_load(shared_data):
    hotpot = resolve_dataset("hotpotqa", shared_data)
    assert len(hotpot.examples) == 100 and len(hotpot.passages) == 994
    assert all(ex.gold_titles and ex.answers for ex in hotpot.examples)
    titles = {p.title for p in hotpot.passages}
    assert all(t in titles for ex in hotpot.examples for t in ex.gold_titles)
    wiki = resolve_dataset("2wiki", shared_data)
    assert len(wiki.examples) == 101 and wiki.retrieval_only and len(wiki.passages) == 6119
    musique = resolve_dataset("musique", shared_data)
    assert len(musique.examples) == 100 and musique.examples[0].question_type == "2hop"
    assert all(len(ex.passage_ids) == 20 for ex in musique.examples)
