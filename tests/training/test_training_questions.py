"""Training questions from every source a config may name: a set's folder, an official question file,
a plain JSONL; `offset` and `limit` pick them in file order."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.config import QuestionsSection
from training.corpus import QuestionsError, load_questions

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_an_official_file_gives_questions_and_their_dataset() -> None:
    path = FIXTURES / "multihop" / "2wiki_official" / "dev.json"
    qs, dataset = load_questions(QuestionsSection(path=path, offset=1))
    assert [q.golds for q in qs] == [["Ivo Marek"]]
    assert dataset is not None and [e.qid for e in dataset.examples] == [qs[0].id]  # the oracle's gold plans


def test_an_official_jsonl_skips_unanswerable_questions() -> None:
    path = FIXTURES / "multihop" / "musique_official" / "musique_full_v1.0_dev.jsonl"
    qs, dataset = load_questions(QuestionsSection(path=path))
    assert [q.golds for q in qs] == [["Harriet Vance", "H. Vance"]] and dataset is not None


def test_plain_jsonl_and_the_shipped_sets() -> None:
    plain, dataset = load_questions(QuestionsSection(path=FIXTURES / "tiny_corpus" / "questions.jsonl"))
    assert dataset is None and plain and all(q.golds for q in plain)
    from eval.bundled_data import MULTIHOP_DIR

    qs, dataset = load_questions(QuestionsSection(path=MULTIHOP_DIR / "hotpotqa_train100", offset=20, limit=24))
    assert len(qs) == 24 and dataset is not None and len(dataset.examples) == 24
    rest, _ = load_questions(QuestionsSection(path=MULTIHOP_DIR / "hotpotqa_train100", offset=20))
    assert [q.id for q in qs] == [q.id for q in rest[:24]] and len(rest) > 24
    with pytest.raises(QuestionsError, match="does not exist"):
        load_questions(QuestionsSection(path=FIXTURES / "none.jsonl"))
