"""One loader per published multi-hop QA format, into `QADataset` (`eval.multihop.loaders` picks the
loader for a folder, a file or a set's name).

Formats (as published; each accepts the official full file and the subsets in the repository's data/):
- MultiHopRAG (yixuantt/MultiHop-RAG): `corpus.json` = [{title, author, source, published_at, category,
  url, body}], `MultiHopRAG.json` = [{query, answer, question_type, evidence_list: [{title, source,
  published_at, url, fact, ...}]}]; `null_query` entries have answer "Insufficient information.".
- HotpotQA (official `hotpot_{train_v1.1,dev_distractor_v1,dev_fullwiki_v1}.json`, and the HippoRAG
  subset): [{_id, question, answer, type, level, supporting_facts: [[title, sent_idx]],
  context: [[title, [sentences]]]}]; an optional corpus `{title: [sentences]}`.
- MuSiQue (official `musique_{ans,full}_v1.0_{train,dev}.jsonl`, one record a line, or the HippoRAG
  subset as a JSON list): {id, question, answer, answer_aliases, answerable, paragraphs: [{idx, title,
  paragraph_text, is_supporting}]}; an optional corpus [{title, text}].
- 2WikiMultihopQA (official `train.json` / `dev.json`): [{_id, type, question, answer, context:
  [[title, [sentences]]], supporting_facts: [[title, sent_idx]], evidences: [[subject, relation, object]]}].
- 2Wiki retrieval (fast-graphrag file): `2wiki_retrieval101.jsonl` lines {question, gold_titles} over a
  corpus [{title, text}]; no answers, so the set is retrieval-only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval.multihop.schema import Passage, QADataset, QAExample, passage_id


class DatasetFormatError(ValueError):
    """A dataset file is missing or not in the format its loader expects."""


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise DatasetFormatError(f"{path} does not exist")
    try:
        with path.open(encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(f"{path} is not valid JSON: {exc}") from exc


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise DatasetFormatError(f"{path} does not exist")
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DatasetFormatError(f"{path}:{n} is not valid JSON: {exc}") from exc
    return rows


def read_rows(path: Path, what: str) -> list[Any]:
    """A question file's records: one a line (.jsonl) or a JSON list."""
    rows = _read_jsonl(path) if path.suffix == ".jsonl" else _read_json(path)
    if not isinstance(rows, list):
        raise DatasetFormatError(f"{path}: expected a list of {what} questions")
    return rows


def _require(row: Any, keys: tuple[str, ...], where: str) -> None:
    if not isinstance(row, dict):
        raise DatasetFormatError(f"{where}: expected an object, got {type(row).__name__}")
    missing = [k for k in keys if k not in row]
    if missing:
        raise DatasetFormatError(f"{where}: missing field(s) {missing}")


def _simple_corpus(prefix: str, rows: Any, path: Path) -> list[Passage]:
    """[{title, text}] (MuSiQue, 2Wiki); duplicate (title, text) pairs collapse to one passage."""
    if not isinstance(rows, list):
        raise DatasetFormatError(f"{path}: expected a list of {{title, text}}")
    seen: set[str] = set()
    out: list[Passage] = []
    for i, row in enumerate(rows):
        _require(row, ("title", "text"), f"{path}[{i}]")
        pid = passage_id(prefix, row["title"], row["text"])
        if pid not in seen:
            seen.add(pid)
            out.append(Passage(passage_id=pid, title=row["title"], text=row["text"]))
    return out


# --- MultiHopRAG -------------------------------------------------------------------------------


def load_multihoprag(corpus_path: str | Path, queries_path: str | Path) -> QADataset:
    queries_path = Path(queries_path)
    return multihoprag_dataset(read_rows(queries_path, "MultiHopRAG"), queries_path, Path(corpus_path))


def multihoprag_dataset(queries: list[Any], queries_path: Path, corpus_path: Path) -> QADataset:
    articles = _read_json(corpus_path)
    if not isinstance(articles, list):
        raise DatasetFormatError(f"{corpus_path}: expected MultiHopRAG's list of articles")
    passages: list[Passage] = []
    for i, art in enumerate(articles):
        _require(art, ("title", "body"), f"{corpus_path}[{i}]")
        passages.append(
            Passage(
                passage_id=passage_id("mhr", art["title"], art["body"]),
                title=art["title"],
                text=art["body"],
                source=art.get("source") or "",
                url=art.get("url") or "",
                published_at=art.get("published_at"),
                meta={k: art[k] for k in ("author", "category") if art.get(k)},
            )
        )
    examples: list[QAExample] = []
    for i, q in enumerate(queries):
        _require(q, ("query", "answer", "question_type", "evidence_list"), f"{queries_path}[{i}]")
        evidence = q["evidence_list"] or []
        examples.append(
            QAExample(
                qid=f"mhr-{i}",
                question=q["query"],
                answers=[q["answer"]] if q["answer"] else [],
                question_type=q["question_type"],
                gold_facts=[e["fact"] for e in evidence if e.get("fact")],
                gold_titles=list(dict.fromkeys(e["title"] for e in evidence if e.get("title"))),
            )
        )
    return QADataset(name="multihoprag", examples=examples, passages=passages)


# --- HotpotQA and 2WikiMultihopQA: questions with their own [[title, [sentences]]] context --------


class _Passages:
    """The corpus of a context-style set, each (title, text) once, in first-seen order."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.by_id: dict[str, Passage] = {}

    def add(self, title: str, text: str) -> str:
        pid = passage_id(self.prefix, title, text)
        self.by_id.setdefault(pid, Passage(passage_id=pid, title=title, text=text))
        return pid


def _join_own_spacing(sentences: list[str]) -> str:
    """HotpotQA: every sentence after the first carries its own leading space."""
    return "".join(sentences).strip()


def _join_with_spaces(sentences: list[str]) -> str:
    """2WikiMultihopQA: bare sentences, joined as the 2Wiki retrieval corpus joins them."""
    return " ".join(s.strip() for s in sentences if s.strip())


def _context_examples(rows: list[Any], path: Path, corpus: _Passages, *, set_name: str,
                      join: Callable[[list[str]], str]) -> list[QAExample]:
    """Questions whose `context` lists their passages as [title, [sentences]] and whose
    `supporting_facts` name the gold ones."""
    examples: list[QAExample] = []
    for i, row in enumerate(rows):
        _require(row, ("question", "answer", "supporting_facts", "context"), f"{path}[{i}]")
        titled = [title for title, _ in row["context"]]
        pids = [corpus.add(title, join(sentences)) for title, sentences in row["context"]]
        gold_titles = list(dict.fromkeys(t for t, _ in row["supporting_facts"]))
        meta = {"level": row["level"]} if "level" in row else {}
        if row.get("evidences"):
            meta["evidences"] = row["evidences"]
        examples.append(
            QAExample(
                qid=str(row.get("_id", f"{set_name}-{i}")),
                question=row["question"],
                answers=[row["answer"]],
                question_type=row.get("type", "unknown"),
                gold_titles=gold_titles,
                gold_passage_ids=[pid for pid, t in zip(pids, titled, strict=True) if t in gold_titles],
                passage_ids=pids,
                meta=meta,
            )
        )
    return examples


def load_hotpotqa(questions_path: str | Path, corpus_path: str | Path | None = None) -> QADataset:
    questions_path = Path(questions_path)
    return hotpotqa_dataset(read_rows(questions_path, "HotpotQA"), questions_path, corpus_path)


def hotpotqa_dataset(rows: list[Any], questions_path: Path, corpus_path: str | Path | None) -> QADataset:
    corpus = _Passages("hotpot")
    if corpus_path is not None:
        titled = _read_json(Path(corpus_path))
        if not isinstance(titled, dict):
            raise DatasetFormatError(f"{corpus_path}: expected {{title: [sentences]}}")
        for title, sentences in titled.items():
            corpus.add(title, _join_own_spacing(sentences))
    examples = _context_examples(rows, questions_path, corpus, set_name="hotpot", join=_join_own_spacing)
    return QADataset(name="hotpotqa", examples=examples, passages=list(corpus.by_id.values()))


def load_2wiki_official(questions_path: str | Path) -> QADataset:
    """2WikiMultihopQA's own `train.json` / `dev.json` (answers, supporting facts, evidence triples).
    Passage text is the sentences joined by spaces, as in the 2Wiki corpus of the retrieval set, so
    the same passage has the same id in both."""
    questions_path = Path(questions_path)
    return two_wiki_dataset(read_rows(questions_path, "2WikiMultihopQA"), questions_path)


def two_wiki_dataset(rows: list[Any], questions_path: Path) -> QADataset:
    corpus = _Passages("2wiki")
    examples = _context_examples(rows, questions_path, corpus, set_name="2wiki", join=_join_with_spaces)
    return QADataset(name="2wiki", examples=examples, passages=list(corpus.by_id.values()))


# --- MuSiQue -----------------------------------------------------------------------------------


def load_musique(questions_path: str | Path, corpus_path: str | Path | None = None) -> QADataset:
    """The official JSONL (one question a line) or a JSON list of the same records."""
    questions_path = Path(questions_path)
    return musique_dataset(read_rows(questions_path, "MuSiQue"), questions_path, corpus_path)


def musique_dataset(rows: list[Any], questions_path: Path, corpus_path: str | Path | None) -> QADataset:
    passages: dict[str, Passage] = {}
    if corpus_path is not None:
        for p in _simple_corpus("musique", _read_json(Path(corpus_path)), Path(corpus_path)):
            passages[p.passage_id] = p
    examples: list[QAExample] = []
    for i, row in enumerate(rows):
        _require(row, ("question", "answer", "paragraphs"), f"{questions_path}[{i}]")
        pids: list[str] = []
        gold: list[str] = []
        gold_pids: list[str] = []
        for para in row["paragraphs"]:
            pid = passage_id("musique", para["title"], para["paragraph_text"])
            passages.setdefault(
                pid, Passage(passage_id=pid, title=para["title"], text=para["paragraph_text"])
            )
            pids.append(pid)
            if para.get("is_supporting"):
                gold.append(para["title"])
                gold_pids.append(pid)
        qid = str(row.get("id", f"musique-{i}"))
        examples.append(
            QAExample(
                qid=qid,
                question=row["question"],
                answers=[row["answer"], *row.get("answer_aliases", [])]
                if row.get("answerable", True)
                else [],
                question_type=qid.split("__")[0] if "__" in qid else "unknown",
                gold_titles=list(dict.fromkeys(gold)),
                gold_passage_ids=list(dict.fromkeys(gold_pids)),
                passage_ids=pids,
            )
        )
    return QADataset(name="musique", examples=examples, passages=list(passages.values()))


# --- 2Wiki retrieval set -----------------------------------------------------------------------


def load_2wiki(questions_path: str | Path, corpus_path: str | Path) -> QADataset:
    questions_path = Path(questions_path)
    return two_wiki_retrieval_dataset(read_rows(questions_path, "2Wiki retrieval"), questions_path, corpus_path)


def two_wiki_retrieval_dataset(rows: list[Any], questions_path: Path, corpus_path: str | Path) -> QADataset:
    passages = _simple_corpus("2wiki", _read_json(Path(corpus_path)), Path(corpus_path))
    examples: list[QAExample] = []
    for i, row in enumerate(rows):
        _require(row, ("question", "gold_titles"), f"{questions_path}[{i}]")
        answers = [row["answer"]] if row.get("answer") else []
        examples.append(
            QAExample(
                qid=str(row.get("_id", f"2wiki-{i}")),
                question=row["question"],
                answers=answers,
                question_type=row.get("type", "retrieval"),
                gold_titles=list(dict.fromkeys(row["gold_titles"])),
            )
        )
    retrieval_only = not any(ex.answers for ex in examples)
    return QADataset(name="2wiki", examples=examples, passages=passages, retrieval_only=retrieval_only)
