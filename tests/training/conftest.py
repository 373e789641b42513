"""Fixtures of the training tests: the tiny offline model, and a lexical test backend over the tiny corpus.

`LexicalBackend` is a unit-test double of `eventrag.schema.SearchBackend` (word-overlap ranking of the
fixture documents, one chunk per document); the real EventRAG stack is exercised by the `train rl`
CLI and the experiment scripts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eventrag.schema import Chunk, RetrievalResult, RetrievedChunk

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_corpus"
_WORD = re.compile(r"\w+")


class LexicalBackend:
    def __init__(self, corpus_dir: Path = CORPUS) -> None:
        self.chunks: dict[str, Chunk] = {}
        for path in sorted(corpus_dir.glob("*.md")):
            text = path.read_text(encoding="utf-8")
            title = text.splitlines()[0].lstrip("# ").strip()
            doc_id = path.stem
            cid = f"{doc_id}#0"
            self.chunks[cid] = Chunk(chunk_id=cid, doc_id=doc_id, title=title, text=text)

    def retrieve(self, query: str, *, mode=None, top_k: int = 5) -> RetrievalResult:
        q = set(_WORD.findall(query.lower()))
        scored = []
        for ch in self.chunks.values():
            score = len(q & set(_WORD.findall(ch.text.lower())))
            if score:
                scored.append((score, ch))
        scored.sort(key=lambda x: (-x[0], x[1].chunk_id))
        hits = [
            RetrievedChunk(chunk_id=c.chunk_id, doc_id=c.doc_id, title=c.title, text=c.text, score=float(s))
            for s, c in scored[:top_k]
        ]
        return RetrievalResult(query=query, mode="naive", chunks=hits)

    def get_chunk(self, chunk_id: str) -> Chunk | None:
        return self.chunks.get(chunk_id)

    def get_document_chunks(self, doc_id: str) -> list[Chunk]:
        return [c for c in self.chunks.values() if c.doc_id == doc_id]


@pytest.fixture
def lexical_backend() -> LexicalBackend:
    return LexicalBackend()


@pytest.fixture(scope="session")
def tiny_questions() -> list[dict]:
    return [
        json.loads(line) for line in (CORPUS / "questions.jsonl").read_text().splitlines() if line.strip()
    ]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from training.common.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny_model"))


@pytest.fixture
def counter(tiny_model_dir: Path):
    """A chat model of the tiny tokenizer that only counts tokens (for scripted teachers and policies)."""
    from eventfold.llm.transformers_backend import HFChatModel
    from training.common.loading import load_tokenizer

    return HFChatModel(load_tokenizer(tiny_model_dir))
