"""Training questions and the indexed corpus the agent searches during training.

Questions come from either
- a dataset folder or official question file the evaluation loaders know (HotpotQA / MuSiQue /
  2Wiki / MultiHopRAG, e.g. the repository's ``data/multihop/hotpotqa_train100`` or
  ``hotpot_train_v1.1.json``): the corpus is the questions' own passages, indexed
  into an EventRAG index of their own (``eval.multihop.corpus_index``, rule extraction: no LLM); or
- a JSONL file of ``{id?, question, answer | answers, answer_aliases? | aliases?}`` with
  ``corpus.documents`` naming the documents to index (a folder or file of .md/.txt), as the story sets
  of ``data/stories/`` and ``examples/`` are written.

The backend is the EventRAG retriever (``eventrag.stack.open_stack``), which is the agent's
``SearchBackend``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agent.search_backend import ModeBackend
from eventfold.settings import Settings
from training.config import CorpusSection, QuestionsSection
from training.sft.data import TrainingQuestion


class QuestionsError(ValueError):
    """Training questions that cannot be read."""


def _jsonl_questions(path: Path) -> list[TrainingQuestion]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QuestionsError(f"{path}:{n}: not JSON ({exc})") from exc
        answers = row.get("answers") or ([row["answer"]] if isinstance(row.get("answer"), str) else row.get("answer"))
        golds = [*(answers or []), *(row.get("answer_aliases") or row.get("aliases") or [])]
        if not row.get("question") or not golds:
            raise QuestionsError(f"{path}:{n}: needs 'question' and 'answer' (or 'answers')")
        out.append(TrainingQuestion(id=str(row.get("id", n)), question=row["question"], golds=golds))
    return out


def load_questions(section: QuestionsSection) -> tuple[list[TrainingQuestion], Any]:
    """The selected questions, and the eval `QADataset` when they came from a dataset folder or file."""
    from eval.multihop.loaders import is_dataset_file, load_path

    path = section.path
    dataset = None
    if path.is_dir() or is_dataset_file(path):
        dataset = load_path(path)
        qs = [TrainingQuestion(id=e.qid, question=e.question, golds=e.answers) for e in dataset.examples if e.answers]
    elif path.is_file():
        qs = _jsonl_questions(path)
    else:
        raise QuestionsError(f"questions path {str(path)!r} does not exist")
    end = None if section.limit is None else section.offset + section.limit
    qs = qs[section.offset : end]
    if not qs:
        raise QuestionsError(f"{path}: no questions with answers in the selected range")
    if dataset is not None:
        keep = {q.id for q in qs}
        dataset = dataset.model_copy(update={"examples": [e for e in dataset.examples if e.qid in keep]})
    return qs, dataset


def corpus_settings(corpus: CorpusSection) -> Settings:
    settings = Settings.from_toml(corpus.settings_toml) if corpus.settings_toml else Settings()
    if corpus.home is not None:
        settings = settings.model_copy(update={"home": corpus.home})
    if corpus.index:
        settings = settings.model_copy(update={"index": corpus.index})
    return settings


@contextmanager
def open_backend(corpus: CorpusSection, dataset: Any = None) -> Iterator[Any]:
    """An indexed EventRAG retriever for the training questions (closed on exit)."""
    settings = corpus_settings(corpus)
    if dataset is not None:
        from eval.multihop.corpus_index import open_indexed_stack, select_passages

        passages = select_passages(dataset, dataset.examples, "questions", corpus.distractors)
        if corpus.index:  # an index of our own (never shared with a concurrent evaluation run)
            from eventrag.stack import open_stack

            stack = open_stack(settings, extract="rules")
            try:
                stack.indexer.index_documents([p.to_document() for p in passages])
            except BaseException:
                stack.close()
                raise
        else:
            stack, _ = open_indexed_stack(settings, dataset, passages, extract="rules", chat_model=None)
    else:
        if corpus.documents is None:
            raise QuestionsError("JSONL questions need corpus.documents (the files to index)")
        from eventrag.stack import open_stack

        stack = open_stack(settings, extract="rules")
        try:
            stack.indexer.index_paths([corpus.documents])
        except BaseException:
            stack.close()
            raise
    try:
        yield ModeBackend(stack.retriever, corpus.mode) if corpus.mode else stack.retriever
    finally:
        stack.close()
