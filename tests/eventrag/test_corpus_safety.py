"""Nothing lost, nothing crashes: document identity across folders, prune, failed extraction
retried, unreadable / over-long / NUL / linked-out files, half-written documents never retrieved, and
index names that must not share a Neo4j namespace. Real stores (SQLite or Neo4j graph, Milvus Lite)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest
from conftest import BACKENDS, stack_settings

from eventrag.index.rules_extract import RuleExtractor
from eventrag.schema import Document
from tests.eventrag.corpus_files import doc_ids, write_file

MODES = ("naive", "graph", "event", "agentic")


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: connections are refused


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_file_name_in_two_folders_and_two_corpora_all_kept(make_stack: Any, tmp_path: Path, backend: str) -> None:
    a, b = tmp_path / "one" / "corpus", tmp_path / "two" / "corpus"  # same folder name, different roots
    write_file(a / "x" / "notes.md", "Alba Reed founded the Kestrel Mill in 1881.")
    write_file(a / "y" / "notes.md", "Bram Holt repaired the Kestrel Mill in 1902.")
    write_file(b / "x" / "notes.md", "Cora Wynn sold the Kestrel Mill in 1950.")
    st = make_stack(backend, extract="rules")
    s = st.indexer.index_paths([a])
    assert (s.docs_seen, s.docs_indexed) == (2, 2)  # was "2 seen, 1 indexed"
    s2 = st.indexer.index_paths([b])
    assert s2.docs_indexed == 1 and s2.docs_pruned == 0
    assert doc_ids(st) == {"corpus/x/notes.md", "corpus/y/notes.md", "corpus~2/x/notes.md"}
    # the first corpus keeps its tag on a re-run (the root is recorded in the index) and nothing is replaced
    again = st.indexer.index_paths([a])
    assert (again.docs_unchanged, again.docs_indexed, again.docs_pruned) == (2, 0, 0)
    texts = {c.text for d in doc_ids(st) for c in st.retriever.get_document_chunks(d)}
    assert any("Alba" in t for t in texts) and any("Bram" in t for t in texts) and any("Cora" in t for t in texts)
    # one file given alone gets the id it has inside its folder
    one = st.indexer.index_paths([a / "x" / "notes.md"])
    assert (one.docs_unchanged, one.docs_pruned) == (1, 0)


def test_prune_removes_deleted_files_and_no_prune_keeps_them(make_stack: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    write_file(corpus / "keep.md", "The Varna lighthouse was rebuilt in 1867.")
    gone = write_file(corpus / "gone.md", "Zephyrine Quorble painted the Varna lighthouse in 1901.")
    st = make_stack("embedded", extract="rules")
    st.indexer.index_paths([corpus])
    gone.unlink()
    kept = st.indexer.index_paths([corpus], prune=False)
    assert kept.docs_pruned == 0 and "docs/gone.md" in doc_ids(st)
    s = st.indexer.index_paths([corpus])
    assert s.docs_pruned == 1 and s.pruned == ["docs/gone.md"] and doc_ids(st) == {"docs/keep.md"}
    for mode in MODES:  # was: still the top hit
        res = st.retriever.retrieve("Zephyrine Quorble painted", mode=mode, top_k=3)
        assert all(c.doc_id == "docs/keep.md" for c in res.chunks), mode
    assert st.vectors.count(st.indexer.collections["chunks"]) == 1


def test_a_file_unreadable_this_time_is_skipped_not_pruned(make_stack: Any, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "docs"
    write_file(corpus / "a.md", "Ada Lind opened the ferry in 1920.")
    locked = write_file(corpus / "b.md", "Bo Lind closed the ferry in 1930.")
    write_file(corpus / "sub" / "d.md", "Dag Lind rebuilt the ferry in 1935.")
    emptied = write_file(corpus / "e.md", "Eva Lind painted the ferry in 1936.")
    st = make_stack("embedded", extract="rules")
    st.indexer.index_paths([corpus])
    real_read, real_scandir = Path.read_bytes, os.scandir

    def read_bytes(self: Path) -> bytes:
        if self.name == "b.md":
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    def scandir(path: Any = ".") -> Any:
        if Path(path).name == "sub":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)  # root ignores chmod 000: make the OS say no
    monkeypatch.setattr(os, "scandir", scandir)
    write_file(corpus / "c.md", "Cy Lind sold the ferry in 1940.")
    emptied.write_text("")
    s = st.indexer.index_paths([corpus])  # was: PermissionError traceback, whole run aborted
    reasons = {Path(x.source).name: x.reason for x in s.skipped}
    assert set(reasons) == {"b.md", "sub", "e.md"} and "Permission denied" in reasons["b.md"]
    assert "folder cannot be read" in reasons["sub"] and "empty" in reasons["e.md"]
    # unreadable file and folder kept; a file that is now empty is no document any more
    assert s.docs_indexed == 1 and s.pruned == ["docs/e.md"]
    assert doc_ids(st) == {"docs/a.md", "docs/b.md", "docs/c.md", "docs/sub/d.md"}
    if os.getuid() != 0:  # a real permission error where the OS enforces it
        monkeypatch.undo()
        locked.chmod(0)
        try:
            assert "cannot be read" in st.indexer.index_paths([corpus]).skipped[0].reason
        finally:
            locked.chmod(0o644)


def test_over_long_ids_nul_bytes_and_links_out_of_the_corpus(make_stack: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    deep = corpus / ("d" * 200) / ("e" * 200) / ("f" * 150) / "long.md"  # id > 512 characters
    write_file(deep, "Dmitri Oss built the long bridge in 1911.")
    write_file(corpus / "ok.md", "Olga Oss built the short bridge in 1912.")
    (corpus / "nul.txt").write_bytes(b"Nils Oss built the stone bridge in 1913. " * 250 + b"\x00tail\x00 words.")
    write_file(corpus / "rec.jsonl", '{"id": "r1", "title": "T\\u0000", "text": "Rita Oss built a \\u0000ferry in 1914."}\n')
    secret = write_file(tmp_path / "outside" / "secret.md", "The vault code is 4242.")
    (corpus / "link.md").symlink_to(secret)
    (corpus / "linkdir").symlink_to(secret.parent, target_is_directory=True)
    (corpus / "inside.md").symlink_to(corpus / "ok.md")
    st = make_stack("embedded", extract="rules")
    s = st.indexer.index_paths([corpus])  # was: InvalidInput traceback for the long id; /etc-style links followed
    reasons = {Path(x.source).name: x.reason for x in s.skipped}
    assert "outside the corpus root" in reasons["link.md"] and "outside the corpus root" in reasons["linkdir"]
    assert any("cannot be stored" in r and "512" in r for r in reasons.values())
    ids = doc_ids(st)
    assert ids == {"docs/ok.md", "docs/nul.txt", "docs/rec.jsonl#r1", "docs/inside.md"}
    texts = [n.props["text"] for n in st.graph.find_nodes("Chunk", limit=100)]
    assert texts and not any("\x00" in t for t in texts) and any("tail words" in t for t in texts)
    assert not any("4242" in t for t in texts)
    assert all("\x00" not in (n.props.get("name") or "") for n in st.graph.find_nodes("Document", limit=100))


@pytest.mark.parametrize("backend", BACKENDS)
def test_failed_extraction_stays_pending_and_is_retried(make_stack: Any, backend: str) -> None:
    from eventfold.llm.openai_backend import OpenAIChatModel
    from eventrag.index.extract import LLMExtractor

    st = make_stack(backend, extract="rules")
    dead = OpenAIChatModel(f"http://127.0.0.1:{_dead_port()}/v1", "m", max_retries=0, timeout_s=2)
    st.indexer.extractor = LLMExtractor(dead, concurrency=1)
    docs = [Document(doc_id=f"d{i}", title=f"Doc {i}", text=f"Person {i} met Anna Berg in Oslo on {i + 1} May 2001.")
            for i in range(3)]
    s = st.indexer.index_documents(docs)
    assert (s.chunks_failed, s.docs_failed, s.docs_indexed) == (3, 3, 0)
    assert "left pending" in s.brief() and sorted(s.failed_docs) == ["d0", "d1", "d2"]
    assert {n.props["status"] for n in st.graph.find_nodes("Document", limit=10)} == {"failed"}
    # still searchable by its text meanwhile
    assert st.retriever.retrieve("Person 1 met Anna Berg", mode="naive", top_k=3).chunks
    again = st.indexer.index_documents(docs)  # the server is still down: not "unchanged", tried again
    assert (again.docs_unchanged, again.docs_retried, again.docs_failed) == (0, 3, 3)
    st.indexer.extractor = RuleExtractor()
    fixed = st.indexer.index_documents(docs)
    assert (fixed.docs_retried, fixed.docs_indexed, fixed.docs_failed) == (3, 3, 0)
    assert {n.props["status"] for n in st.graph.find_nodes("Document", limit=10)} == {"done"}
    assert st.graph.find_nodes("Event", limit=100)
    assert st.indexer.index_documents(docs).docs_unchanged == 3


class _Crash(RuntimeError):
    pass


class _CrashAfter:
    name = "rules"

    def __init__(self, after: int) -> None:
        self.after, self.inner = after, RuleExtractor()

    def extract_many(self, items: Any) -> Any:
        for i, (chunk, date) in enumerate(items):
            if i == self.after:
                raise _Crash("simulated crash")
            yield self.inner.extract(chunk, date)


@pytest.mark.parametrize("backend", BACKENDS)
def test_half_written_documents_are_never_retrieved(make_stack: Any, tmp_path: Path, backend: str,
                                                    request: pytest.FixtureRequest) -> None:
    from eventrag.stack import open_stack

    st = make_stack(backend, extract="rules")
    good = [Document(doc_id="good", title="Harbour", text="Ivo Mark rebuilt the harbour wall in Split in 1990.")]
    st.indexer.index_documents(good)
    half = [Document(doc_id="half", title="Quaggle", text="Quaggle Vondermarch flooded the harbour in Split in 1991.")]
    st.indexer.extractor = _CrashAfter(0)
    with pytest.raises(_Crash):  # chunks and vectors written, extraction never finished
        st.indexer.index_documents(half)
    st.close()
    # a new process opens the index after the crash
    settings = st.settings
    embedder = st.embedder
    fresh = open_stack(settings, embedder=embedder, extract="rules")
    try:
        assert {n.id: n.props["status"] for n in fresh.graph.find_nodes("Document", limit=10)} == {
            "good": "done", "half": "pending"}
        assert fresh.retriever.cache.get().lexical.search("Quaggle Vondermarch", 5) == []  # BM25: was the half doc
        for mode in MODES:
            res = fresh.retriever.retrieve("Quaggle Vondermarch flooded the harbour", mode=mode, top_k=5)
            assert [c.doc_id for c in res.chunks] == ["good"], mode
    finally:
        if backend == "neo4j":
            fresh.graph.clear()
        fresh.close()


@pytest.mark.neo4j
def test_index_names_that_differ_only_by_punctuation_keep_their_own_neo4j_namespace(
        make_stack: Any, tmp_path: Path, neo4j_uri: str) -> None:
    import uuid

    base = "p" + uuid.uuid4().hex[:8]
    dotted = stack_settings(tmp_path / "h1", "neo4j", neo4j_uri).model_copy(update={"index": f"{base}.col"})
    under = stack_settings(tmp_path / "h2", "neo4j", neo4j_uri).model_copy(update={"index": f"{base}_col"})
    first = make_stack("neo4j", settings=dotted, extract="rules")
    second = make_stack("neo4j", settings=under, extract="rules")
    assert first.namespace != second.namespace
    first.indexer.index_documents([Document(doc_id="a", text="Ana Vell met Tom Roe in Graz in 1999.")])
    second.indexer.index_documents([Document(doc_id="b", text="Bea Vell met Tim Roe in Linz in 2001.")])
    # was: one namespace, the second index purged the first
    assert doc_ids(first) == {"a"} and doc_ids(second) == {"b"}
    assert first.graph.count()[0] > 0 and second.graph.count()[0] > 0
