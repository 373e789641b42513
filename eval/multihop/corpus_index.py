"""Index a dataset's corpus into its own EventRAG index (reused across modes and reruns).

The index name is derived from the dataset, the passage set and the extraction mode, so a run over a
question subset (`corpus="questions"`) or with rule extraction never mixes with a full LLM-extracted
index; the indexer itself skips documents already indexed, so a rerun costs only the new ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Literal

from eval.multihop.schema import Passage, QADataset, QAExample
from eventfold.llm.types import ChatModel
from eventfold.settings import Settings

CorpusScope = Literal["full", "questions"]


def select_passages(
    dataset: QADataset, examples: list[QAExample], scope: CorpusScope, distractors: int
) -> list[Passage]:
    """The whole corpus, or the questions' own contexts and gold passages plus `distractors` others."""
    if scope == "full":
        return dataset.passages
    chosen = dataset.corpus_for(examples, extra=distractors)
    if not chosen:
        raise ValueError(f"{dataset.name}: the selected questions name no passages; use --corpus full")
    return chosen


def index_name(dataset: str, passages: list[Passage], extract: str) -> str:
    digest = hashlib.sha1("\n".join(sorted(p.passage_id for p in passages)).encode()).hexdigest()[:8]
    return f"eval-{dataset}-{extract}-{len(passages)}-{digest}"


def open_indexed_stack(
    settings: Settings,
    dataset: QADataset,
    passages: list[Passage],
    *,
    extract: Literal["llm", "rules"],
    chat_model: ChatModel | None,
    progress: Callable[[Any], None] | None = None,
) -> tuple[Any, Any]:
    """Open (creating if needed) the dataset's index and bring it up to date; (stack, IndexSummary).
    `progress` gets an `IndexProgress` after every batch of documents."""
    from eventrag.stack import open_stack

    scoped = settings.model_copy(update={"index": index_name(dataset.name, passages, extract)})
    stack = open_stack(scoped, chat_model=chat_model, extract=extract)
    try:
        summary = stack.indexer.index_documents([p.to_document() for p in passages], progress=progress)
    except BaseException:
        stack.close()
        raise
    return stack, summary
