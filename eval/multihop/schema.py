"""One normalised model for every multi-hop QA set: `QAExample` questions over a `Passage` corpus."""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, Field

from eventrag.schema import Document

NULL_QUERY = "null_query"


class Passage(BaseModel):
    """One corpus entry (a news article, a Wikipedia paragraph)."""

    passage_id: str
    title: str = ""
    text: str
    source: str = ""
    url: str = ""
    published_at: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    def to_document(self) -> Document:
        date = self.published_at[:10] if self.published_at else None
        return Document(
            doc_id=self.passage_id,
            title=self.title,
            text=self.text,
            source=self.url or self.source,
            date=date,
            meta={"source": self.source, **self.meta} if self.source else dict(self.meta),
        )


class QAExample(BaseModel):
    """One question with whatever gold the source set provides.

    - `answers`: the gold answer first, then aliases (empty for retrieval-only sets such as 2Wiki here).
    - `gold_titles`: titles of the supporting passages (Recall@k).
    - `gold_passage_ids`: ids of the supporting passages themselves, when the set marks them (HotpotQA's
      supporting facts, MuSiQue's `is_supporting`); titles repeat in MuSiQue, ids do not.
    - `gold_facts`: MultiHopRAG `evidence_list[].fact` strings (Hits/MAP/MRR by substring match).
    - `passage_ids`: the question's own context passages, when the set ships them (distractor setting).
    """

    qid: str
    question: str
    answers: list[str] = Field(default_factory=list)
    question_type: str = "unknown"
    gold_titles: list[str] = Field(default_factory=list)
    gold_passage_ids: list[str] = Field(default_factory=list)
    gold_facts: list[str] = Field(default_factory=list)
    passage_ids: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def is_null(self) -> bool:
        """MultiHopRAG's unanswerable queries: skipped by the retrieval metrics."""
        return self.question_type == NULL_QUERY

    @property
    def has_answer(self) -> bool:
        return bool(self.answers)


class QADataset(BaseModel):
    """A named set of questions and the corpus they are asked over."""

    name: str
    examples: list[QAExample]
    passages: list[Passage]
    retrieval_only: bool = False  # no gold answers (answer metrics are not computed)

    def select(self, limit: int | None = None) -> QADataset:
        """The first `limit` questions (file order, nulls included, as the official scripts do)."""
        if limit is None:
            return self
        if limit <= 0:
            raise ValueError(f"limit must be positive (got {limit})")
        return self.model_copy(update={"examples": self.examples[:limit]})

    def corpus_for(self, examples: list[QAExample], extra: int = 0) -> list[Passage]:
        """The passages a smaller run needs: the questions' own contexts and gold passages, plus the
        first `extra` other passages in corpus order as distractors (keeps indexing affordable)."""
        wanted_ids = {pid for ex in examples for pid in ex.passage_ids}
        wanted_titles = {t for ex in examples for t in ex.gold_titles}
        chosen: list[Passage] = []
        others = 0
        for p in self.passages:
            if p.passage_id in wanted_ids or p.title in wanted_titles:
                chosen.append(p)
            elif others < extra:
                chosen.append(p)
                others += 1
        return chosen


def passage_id(prefix: str, title: str, text: str) -> str:
    """Stable id from content (titles repeat in MuSiQue's corpus, so the text is part of the key)."""
    digest = hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:16]
    return f"{prefix}-{digest}"
