"""A document keeps one id however its folder is reached (sub-folder, another index, a moved root), a
repeated record id loses no record, hidden files and symlink loops are listed as skipped. Real stores
(SQLite graph, Milvus Lite) sharing one home."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from conftest import stack_settings

from cli.ask import index_name_for
from eventfold.settings import Settings
from tests.eventrag.corpus_files import doc_ids, write_file


def test_a_file_has_one_id_through_its_folder_a_sub_folder_and_another_index(make_stack: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write_file(corpus / "x" / "notes.md", "Alba Reed founded the Kestrel Mill in 1881.")
    write_file(corpus / "top.md", "Bram Holt repaired the Kestrel Mill in 1902.")
    first = make_stack("embedded", extract="rules")
    first.indexer.index_paths([corpus])
    assert doc_ids(first) == {"corpus/x/notes.md", "corpus/top.md"}
    other = make_stack("embedded", settings=stack_settings(tmp_path, "embedded", None), extract="rules")
    s = other.indexer.index_paths([corpus / "x"])  # was: "x/notes.md", a second document for one file
    assert s.docs_indexed == 1 and doc_ids(other) == {"corpus/x/notes.md"}
    one = other.indexer.index_paths([corpus / "x" / "notes.md"])
    assert one.docs_unchanged == 1 and doc_ids(other) == {"corpus/x/notes.md"}
    again = first.indexer.index_paths([corpus / "x"])  # a sub-folder of a root prunes only inside itself
    assert (again.docs_unchanged, again.docs_pruned) == (1, 0) and len(doc_ids(first)) == 2
    both = first.indexer.index_paths([corpus, corpus / "x"])  # one file reached twice in one run: one document
    assert (both.docs_unchanged, both.docs_indexed, both.skipped) == (2, 0, [])


def test_a_moved_corpus_keeps_its_documents_and_is_pruned_where_it_went(make_stack: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    for i in range(10):
        write_file(corpus / f"d{i // 5}" / f"n{i}.md", f"Person{i} Lind rebuilt the Varna lighthouse in {1900 + i}.")
    st = make_stack("embedded", extract="rules")
    st.indexer.index_paths([corpus])
    ids = doc_ids(st)
    moved = tmp_path / "moved" / "corpus"
    moved.parent.mkdir()
    shutil.move(str(corpus), str(moved))
    write_file(tmp_path / "other" / "o.md", "Olga Oss built the bridge in 1912.")
    aside = st.indexer.index_paths([tmp_path / "other"])  # the root is gone: kept, and said so
    assert any("is gone" in n and "10 document(s) are kept" in n for n in aside.notes), aside.notes
    s = st.indexer.index_paths([moved])  # was: 19 documents, all re-indexed as corpus~2/...
    assert (s.docs_seen, s.docs_unchanged, s.docs_indexed, s.docs_pruned) == (10, 10, 0, 0)
    assert doc_ids(st) == ids | {"other/o.md"}
    (moved / "d0" / "n0.md").unlink()
    later = st.indexer.index_paths([moved])  # the moved root is the recorded one now
    assert later.pruned == ["corpus/d0/n0.md"] and not later.notes
    hits = st.retriever.retrieve("Person3 Lind rebuilt the lighthouse", mode="naive", top_k=1)
    assert hits.chunks[0].doc_id == "corpus/d0/n3.md"


def test_ask_gives_two_folders_of_one_name_two_indexes(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "docs", tmp_path / "b" / "docs"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    (tmp_path / "link").symlink_to(a, target_is_directory=True)
    names = {index_name_for(a), index_name_for(b)}
    assert len(names) == 2 and all(n.startswith("docs-") for n in names)  # was: both "docs"
    assert index_name_for(tmp_path / "link") == index_name_for(a) == index_name_for(a / ".." / "docs")
    long = tmp_path / ("x" * 200)
    long.mkdir()
    for d in (a, b, long):
        assert Settings(home=tmp_path, index=index_name_for(d)).index == index_name_for(d)  # a valid name


def test_repeated_record_ids_lose_no_record(make_stack: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "recs"
    write_file(corpus / "records.jsonl", '{"id": "r1", "text": "Ada Lind opened the ferry in 1920."}\n\n'
                                     '{"id": "r1", "text": "Bo Lind closed the ferry in 1930."}\n'
                                     '{"id": "r1", "text": "Cy Lind sold the ferry in 1940."}\n')
    st = make_stack("embedded", extract="rules")
    s = st.indexer.index_paths([corpus])  # was: one document, the other records silently absent
    assert s.docs_indexed == 3
    assert doc_ids(st) == {"recs/records.jsonl#r1", "recs/records.jsonl#r1~2", "recs/records.jsonl#r1~3"}
    assert any("line 3 repeats the record id 'r1' of line 1" in n for n in s.notes), s.notes
    texts = {c.text for c in st.retriever.get_document_chunks("recs/records.jsonl#r1~2")}
    assert texts == {"Bo Lind closed the ferry in 1930."}
    assert st.indexer.index_paths([corpus]).docs_unchanged == 3  # the ids are stable across runs


def test_hidden_files_and_folders_are_listed_as_skipped(make_stack: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    write_file(corpus / "ok.md", "Olga Oss built the short bridge in 1912.")
    write_file(corpus / ".hidden.md", "Hedda Oss built the hidden bridge in 1913.")
    write_file(corpus / ".git" / "HEAD", "ref: refs/heads/main")
    st = make_stack("embedded", extract="rules")
    s = st.indexer.index_paths([corpus])
    reasons = {Path(x.source).name: x.reason for x in s.skipped}
    assert set(reasons) == {".hidden.md", ".git"}  # was: neither indexed nor listed
    assert "hidden file" in reasons[".hidden.md"] and "hidden folder" in reasons[".git"]
    assert doc_ids(st) == {"docs/ok.md"}


def test_symlink_loops_are_skipped_with_a_reason_and_the_rest_indexed(make_stack: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    write_file(corpus / "ok.md", "Olga Oss built the short bridge in 1912.")
    (corpus / "a.md").symlink_to(corpus / "b.md")
    (corpus / "b.md").symlink_to(corpus / "a.md")
    (corpus / "loop").symlink_to(corpus / "loop", target_is_directory=True)
    st = make_stack("embedded", extract="rules")
    s = st.indexer.index_paths([corpus])  # was: RuntimeError: Symlink loop, nothing indexed
    reasons = {Path(x.source).name: x.reason for x in s.skipped}
    assert set(reasons) == {"a.md", "b.md", "loop"}
    assert all("symlink loop" in r for r in reasons.values()), reasons
    assert doc_ids(st) == {"docs/ok.md"}
