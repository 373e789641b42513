"""Loaders: fixtures in the official formats, and the real sets shipped in data/."""

from __future__ import annotations

import json

import pytest

from eval.multihop.formats import (
    DatasetFormatError,
    load_2wiki,
    load_2wiki_official,
    load_multihoprag,
    load_musique,
)
from eval.multihop.loaders import is_dataset_file, load_file, load_folder, load_path, resolve_dataset


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
    assert len(resolve_dataset("musique").examples) == 100  # by name, without a folder: the one in data/
    with pytest.raises(DatasetFormatError, match="not shipped"):
        resolve_dataset("multihoprag")
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


def test_bundled_sets_load(bundled_data):
    hotpot = resolve_dataset("hotpotqa", bundled_data)
    assert len(hotpot.examples) == 100 and len(hotpot.passages) == 994
    assert all(ex.gold_titles and ex.answers for ex in hotpot.examples)
    titles = {p.title for p in hotpot.passages}
    assert all(t in titles for ex in hotpot.examples for t in ex.gold_titles)
    wiki = resolve_dataset("2wiki", bundled_data)
    assert len(wiki.examples) == 101 and wiki.retrieval_only and len(wiki.passages) == 6119
    musique = resolve_dataset("musique", bundled_data)
    assert len(musique.examples) == 100 and musique.examples[0].question_type == "2hop"
    assert all(len(ex.passage_ids) == 20 for ex in musique.examples)


def test_official_hotpotqa_file(fixtures_dir):
    path = fixtures_dir / "multihop" / "hotpotqa_official" / "hotpot_dev_distractor_v1.json"
    ds = load_file(path)
    assert ds.name == "hotpotqa" and [ex.question_type for ex in ds.examples] == ["bridge", "comparison"]
    assert ds.examples[0].qid == "5a8b57f25542995d1e6f1371" and ds.examples[0].meta == {"level": "medium"}
    assert len(ds.passages) == 4  # Velora Bridge's paragraph appears in both questions' contexts: kept once
    by_id = {p.passage_id: p for p in ds.passages}
    second = ds.examples[1]
    assert [by_id[pid].title for pid in second.gold_passage_ids] == ["Ostra Canal", "Velora Bridge"]
    assert by_id[second.passage_ids[0]].text == "The Ostra Canal links Marnis to the sea. It opened in 1954."


def test_official_musique_jsonl_keeps_unanswerable_questions_without_answers(fixtures_dir):
    ds = load_musique(fixtures_dir / "multihop" / "musique_official" / "musique_full_v1.0_dev.jsonl")
    answerable, unanswerable = ds.examples
    assert answerable.answers == ["Harriet Vance", "H. Vance"] and answerable.question_type == "2hop"
    assert unanswerable.answers == [] and unanswerable.question_type == "3hop1"
    by_id = {p.passage_id: p for p in ds.passages}
    assert [by_id[pid].text for pid in answerable.gold_passage_ids] == [
        "Quillon Press publishes the Journal of Tidal Studies.", "Harriet Vance founded Quillon Press in 1902."]


def test_official_2wiki_file_is_answerable_and_matches_the_retrieval_corpus(fixtures_dir, tmp_path):
    ds = load_2wiki_official(fixtures_dir / "multihop" / "2wiki_official" / "dev.json")
    assert ds.name == "2wiki" and not ds.retrieval_only
    first = ds.examples[0]
    assert first.answers == ["1950"] and first.question_type == "compositional"
    assert first.gold_titles == ["Velora Bridge", "Ivo Marek"]
    assert first.meta["evidences"][0] == ["Velora Bridge", "designer", "Ivo Marek"]
    by_id = {p.passage_id: p for p in ds.passages}
    assert by_id[first.passage_ids[0]].text == "Velora Bridge is a suspension bridge in Marnis. It was designed by Ivo Marek."
    assert len(ds.passages) == 4  # Ivo Marek's paragraph is shared by both questions
    # sentences are joined as the 2Wiki corpus joins them, so a paragraph has one id in both files
    corpus = tmp_path / "2wiki_corpus.json"
    corpus.write_text(json.dumps([{"title": "Ivo Marek", "text": by_id[first.passage_ids[1]].text}]))
    retrieval = load_2wiki(fixtures_dir / "multihop" / "2wiki_mini" / "2wiki_retrieval_mini.jsonl", corpus)
    assert retrieval.passages[0].passage_id == first.passage_ids[1]
    assert retrieval.passages[0].text == "Ivo Marek (1880 - 1950) was an engineer. He died in Marnis in 1950."


def test_formats_are_told_by_their_records_not_their_names(fixtures_dir, tmp_path):
    official = fixtures_dir / "multihop"
    assert load_path(official / "2wiki_official").name == "2wiki"  # id_aliases.json is not a question file
    assert load_path(official / "musique_official").name == "musique"
    renamed = tmp_path / "questions.json"  # 2Wiki's official records under any name: not HotpotQA
    renamed.write_text((official / "2wiki_official" / "dev.json").read_text())
    assert load_file(renamed).examples[1].answers == ["Ivo Marek"]
    assert resolve_dataset(str(renamed)).name == "2wiki"  # a file path resolves as well as a folder
    assert load_file(fixtures_dir / "multihoprag" / "MultiHopRAG.json").name == "multihoprag"  # corpus.json beside it
    unknown = tmp_path / "other.json"
    unknown.write_text('[{"prompt": "p"}]')
    with pytest.raises(DatasetFormatError, match="cannot tell"):
        load_file(unknown)
    unknown.write_text("[]")
    with pytest.raises(DatasetFormatError, match="no questions"):
        load_file(unknown)


def test_a_folder_with_several_question_files_names_them(fixtures_dir, tmp_path):
    for name in ("dev.json", "train.json"):
        (tmp_path / name).write_text((fixtures_dir / "multihop" / "2wiki_official" / "dev.json").read_text())
    with pytest.raises(DatasetFormatError, match=r"several question files \(dev.json, train.json\)"):
        load_folder(tmp_path)
    assert len(load_path(tmp_path / "train.json").examples) == 2


def test_is_dataset_file_tells_official_files_from_plain_questions(fixtures_dir, tmp_path):
    multihop = fixtures_dir / "multihop"
    assert is_dataset_file(multihop / "musique_official" / "musique_full_v1.0_dev.jsonl")
    assert is_dataset_file(multihop / "2wiki_mini" / "2wiki_retrieval_mini.jsonl")
    assert is_dataset_file(multihop / "hotpotqa_official" / "hotpot_dev_distractor_v1.json")
    assert not is_dataset_file(fixtures_dir / "tiny_corpus" / "questions.jsonl")  # {question, answer} lines
    assert not is_dataset_file(multihop / "musique_official")  # a folder
    assert not is_dataset_file(tmp_path / "missing.json")
