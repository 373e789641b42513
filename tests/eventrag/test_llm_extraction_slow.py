"""LLM extraction with the REAL local model (qwen2.5-coder-0.5b GGUF, grammar-constrained JSON) on the
tiny corpus, against the embedded store and Neo4j. Slow on a CPU (one structured call per chunk); the
second backend reuses the content-hash cache, so it makes no new model calls."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import BACKENDS, TINY, stack_settings

from eventfold.settings import default_home

MODEL = default_home() / "models" / "qwen2.5-coder-0.5b.gguf"
DATES = {"2020-01-10", "2020-01-24", "2020-03-03", "2020-02-05"}


@pytest.fixture(scope="module")
def llm_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not MODEL.is_file():
        msg = f"{MODEL} missing: run `eventfold model pull qwen2.5-coder-0.5b`"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return tmp_path_factory.mktemp("llm-home")  # shared: the LLM cache lives here


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_real_model_extracts_events_dates_relations_and_retrieves_two_hops(
        make_stack: Any, llm_home: Path, backend: str, request: pytest.FixtureRequest) -> None:
    uri = request.getfixturevalue("neo4j_uri") if backend == "neo4j" else None
    settings = stack_settings(llm_home, backend, uri, llm={
        "model_path": str(MODEL), "n_ctx": 4096, "concurrency": 1, "n_threads": 1 if not os.environ.get("CI") else None})
    st = make_stack(backend, settings=settings, extract="llm")
    s = st.indexer.index_paths([TINY])
    assert s.extractor == "llm:qwen2.5-coder-0.5b" and s.docs_indexed + s.docs_failed == 4 and s.chunks == 4
    assert s.docs_failed == s.chunks_failed  # a document whose chunk failed is left for the next run
    assert s.llm_calls <= 2 * s.chunks and s.chunks_failed <= 1  # one call per chunk, one repair at most
    events = st.graph.find_nodes("Event", limit=200)
    assert len(events) >= 4
    assert len(DATES & {e.props.get("time_start") for e in events}) >= 3  # dates normalised to ISO
    edges = st.graph.get_edges([e.id for e in events], edge_types=["BEFORE", "CAUSES"])
    assert any(e.src != e.dst for e in edges)  # extracted, or inferred by expansion (flagged)
    assert all(e.props.get("rule") for e in edges if e.inferred)  # every inferred edge says which rule
    for q in (json.loads(x) for x in (TINY / "questions.jsonl").read_text().splitlines() if x.strip()):
        res = st.retriever.retrieve(q["question"], mode="event", top_k=3)
        assert {f"tiny_corpus/{d}" for d in q["supporting_docs"]} <= {c.doc_id for c in res.chunks}, q["id"]
