"""Chunking, date normalisation and document loading (no model, no store)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventrag.dates import days_between, find_dates, normalise_time, overlaps
from eventrag.index.chunking import ChunkingConfig, chunk_document, count_tokens, split_sentences
from eventrag.index.documents import (
    BinaryDocument,
    DocumentTooLarge,
    EmptyDocument,
    UnsupportedDocument,
    iter_files,
    load_file,
)
from eventrag.schema import Document


def test_chunks_respect_sentences_overlap_and_stable_ids() -> None:
    text = " ".join(f"Sentence {i} tells that Dr. Smith visited Paris in {1900 + i}." for i in range(60))
    doc = Document(doc_id="d1", title="T", text=text)
    cfg = ChunkingConfig(max_tokens=50, overlap_tokens=12)
    chunks = chunk_document(doc, cfg)
    assert len(chunks) > 5
    for c in chunks:
        assert count_tokens(c.text) <= 50
        assert c.text.startswith("Sentence") and c.text.endswith(".")  # whole sentences ("Dr." is no boundary)
        assert doc.text[c.start_char:c.end_char] == c.text
    # consecutive windows share their boundary sentence (overlap)
    assert chunks[1].text.split(".")[0] in chunks[0].text
    again = chunk_document(doc, cfg)
    assert [c.chunk_id for c in again] == [c.chunk_id for c in chunks]
    other = chunk_document(Document(doc_id="d2", title="T", text=text), cfg)
    assert other[0].chunk_id != chunks[0].chunk_id


def test_overlong_sentence_is_cut_and_empty_text_gives_no_chunks() -> None:
    doc = Document(doc_id="d", text="word " * 500)
    chunks = chunk_document(doc, ChunkingConfig(max_tokens=100, overlap_tokens=10))
    assert len(chunks) == 5 and all(count_tokens(c.text) <= 100 for c in chunks)
    assert chunk_document(Document(doc_id="e", text="   \n "), ChunkingConfig()) == []
    assert split_sentences("One. Two!  Three?") == [(0, 4), (5, 9), (11, 17)]
    with pytest.raises(ValueError):
        ChunkingConfig(max_tokens=10, overlap_tokens=10)


@pytest.mark.parametrize(
    ("raw", "start", "end", "gran"),
    [
        ("11 November 875", "0875-11-11", "0875-11-11", "day"),
        ("March 3, 1999", "1999-03-03", "1999-03-03", "day"),
        ("May 2020", "2020-05-01", "2020-05-31", "month"),
        ("1939–1945", "1939-01-01", "1945-12-31", "year"),
        ("the 1990s", "1990-01-01", "1999-12-31", "decade"),
        ("in 2004", "2004-01-01", "2004-12-31", "year"),
        ("yesterday", "2024-06-09", "2024-06-09", "day"),
        ("two days later", "2024-06-12", "2024-06-12", "day"),
    ],
)
def test_normalise_time_relative_to_document_date(raw: str, start: str, end: str, gran: str) -> None:
    t = normalise_time(raw, "2024-06-10")
    assert (t.start, t.end, t.granularity, t.raw) == (start, end, gran, raw)


def test_relative_time_without_document_date_stays_raw_and_garbage_is_unknown() -> None:
    assert normalise_time("yesterday").start is None
    assert normalise_time("when the cows come home", "2024-01-01").start is None
    assert normalise_time("").raw == ""


def test_find_dates_and_interval_helpers() -> None:
    found = find_dates("Teutberga (died 11 November 875) married in 855; the war of 1939-1945 ended.")
    assert [t.start for _, _, t in found] == ["0875-11-11", "1939-01-01"]  # 855 alone is not a year (no AD)
    a, b = normalise_time("10 January 2020"), normalise_time("24 January 2020")
    assert days_between(a, b) == 14.0 and days_between(a, a) == 0.0
    assert overlaps(a, "2020-01-01", "2020-01-31") and not overlaps(a, "2020-02-01", None)


def test_load_markdown_title_and_date(tmp_path: Path) -> None:
    p = tmp_path / "a.md"
    p.write_text("# Storm Hits Town\nDate: 2020-01-10\n\nOn 10 January a storm hit.", encoding="utf-8")
    [doc] = load_file(p)
    assert (doc.doc_id, doc.title, doc.date) == ("a.md", "Storm Hits Town", "2020-01-10")


def test_bad_inputs_fail_clearly(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blank.txt").write_text("  \n\n ")
    (tmp_path / "bin.txt").write_bytes(bytes(range(256)) * 10)
    (tmp_path / "img.png").write_bytes(b"\x89PNG")
    (tmp_path / "big.txt").write_bytes(b"a" * 2048)
    with pytest.raises(EmptyDocument, match="empty"):
        load_file(tmp_path / "empty.txt")
    with pytest.raises(EmptyDocument, match="whitespace"):
        load_file(tmp_path / "blank.txt")
    with pytest.raises(BinaryDocument, match="binary"):
        load_file(tmp_path / "bin.txt")
    with pytest.raises(UnsupportedDocument, match=r"\.png"):
        load_file(tmp_path / "img.png")
    with pytest.raises(DocumentTooLarge, match="limit"):
        load_file(tmp_path / "big.txt", max_bytes=1024)


def test_non_utf8_text_is_decoded_without_loss(tmp_path: Path) -> None:
    p = tmp_path / "latin.txt"
    p.write_bytes("Café in Zürich opened in 1999 — señor Müller.".encode("cp1252"))
    [doc] = load_file(p)
    assert "Café" in doc.text and "Müller" in doc.text and doc.meta["encoding"] == "cp1252"


def test_json_records_and_title_sentence_maps(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text('{"id": 7, "title": "A", "text": "Alpha."}\n{"title": "B", "text": "Beta."}\n')
    (tmp_path / "h.json").write_text('{"Gallu": ["Gallu is a demon.", " It is old."]}')
    docs = load_file(tmp_path / "r.jsonl")
    assert [(d.doc_id, d.title) for d in docs] == [("r.jsonl#7", "A"), ("r.jsonl#1", "B")]
    [h] = load_file(tmp_path / "h.json")
    assert h.title == "Gallu" and h.text == "Gallu is a demon. It is old."
    assert [rel for _, rel in iter_files(tmp_path)] == ["h.json", "r.jsonl"]
