"""Loaders for MultiHopRAG (official files), HotpotQA, MuSiQue and 2WikiMultihopQA into `QADataset`.

Formats (as published):
- MultiHopRAG (yixuantt/MultiHop-RAG): `corpus.json` = [{title, author, source, published_at, category,
  url, body}], `MultiHopRAG.json` = [{query, answer, question_type, evidence_list: [{title, source,
  published_at, url, fact, ...}]}]; `null_query` entries have answer "Insufficient information.".
- HotpotQA (distractor, HippoRAG release): `*_train.json` = [{_id, question, answer, type, level,
  supporting_facts: [[title, sent_idx]], context: [[title, [sentences]]]}], corpus `{title: [sentences]}`.
- MuSiQue (HippoRAG release): [{id, question, answer, answer_aliases, paragraphs: [{title,
  paragraph_text, is_supporting}]}], corpus [{title, text}].
- 2Wiki (fast-graphrag file): `2wiki_retrieval101.jsonl` lines {question, gold_titles}; corpus
  [{title, text}]; no answers, so the set is retrieval-only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eval.multihop.schema import Passage, QADataset, QAExample, passage_id

KNOWN_SETS = ("multihoprag", "hotpotqa", "musique", "2wiki")


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
    corpus_path, queries_path = Path(corpus_path), Path(queries_path)
    articles = _read_json(corpus_path)
    queries = _read_json(queries_path)
    if not isinstance(articles, list) or not isinstance(queries, list):
        raise DatasetFormatError("MultiHopRAG corpus.json and MultiHopRAG.json must both be JSON lists")
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


# --- HotpotQA ----------------------------------------------------------------------------------


def load_hotpotqa(questions_path: str | Path, corpus_path: str | Path | None = None) -> QADataset:
    questions_path = Path(questions_path)
    rows = _read_json(questions_path)
    if not isinstance(rows, list):
        raise DatasetFormatError(f"{questions_path}: expected a list of HotpotQA questions")
    passages: dict[str, Passage] = {}

    def add(title: str, sentences: list[str]) -> str:
        text = "".join(sentences).strip()
        pid = passage_id("hotpot", title, text)
        passages.setdefault(pid, Passage(passage_id=pid, title=title, text=text))
        return pid

    if corpus_path is not None:
        corpus = _read_json(Path(corpus_path))
        if not isinstance(corpus, dict):
            raise DatasetFormatError(f"{corpus_path}: expected {{title: [sentences]}}")
        for title, sentences in corpus.items():
            add(title, sentences)
    examples: list[QAExample] = []
    for i, row in enumerate(rows):
        _require(row, ("question", "answer", "supporting_facts", "context"), f"{questions_path}[{i}]")
        pids = [add(title, sentences) for title, sentences in row["context"]]
        gold_titles = list(dict.fromkeys(t for t, _ in row["supporting_facts"]))
        titled = [title for title, _ in row["context"]]
        examples.append(
            QAExample(
                qid=str(row.get("_id", f"hotpot-{i}")),
                question=row["question"],
                answers=[row["answer"]],
                question_type=row.get("type", "unknown"),
                gold_titles=gold_titles,
                gold_passage_ids=[pid for pid, t in zip(pids, titled, strict=True) if t in gold_titles],
                passage_ids=pids,
                meta={"level": row.get("level")},
            )
        )
    return QADataset(name="hotpotqa", examples=examples, passages=list(passages.values()))


# --- MuSiQue -----------------------------------------------------------------------------------


def load_musique(questions_path: str | Path, corpus_path: str | Path | None = None) -> QADataset:
    questions_path = Path(questions_path)
    rows = _read_json(questions_path)
    if not isinstance(rows, list):
        raise DatasetFormatError(f"{questions_path}: expected a list of MuSiQue questions")
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


# --- 2WikiMultihopQA (retrieval only) -----------------------------------------------------------


def load_2wiki(questions_path: str | Path, corpus_path: str | Path) -> QADataset:
    questions_path = Path(questions_path)
    rows = _read_jsonl(questions_path) if questions_path.suffix == ".jsonl" else _read_json(questions_path)
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


# --- resolution by name or path ----------------------------------------------------------------


def _one(folder: Path, pattern: str, exclude: str | None = None) -> Path | None:
    hits = sorted(p for p in folder.glob(pattern) if not (exclude and exclude in p.name))
    return hits[0] if hits else None


def load_folder(folder: str | Path) -> QADataset:
    """Detect the set's format from the files in `folder` and load it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetFormatError(f"{folder} is not a directory")
    if (folder / "MultiHopRAG.json").is_file():
        return load_multihoprag(folder / "corpus.json", folder / "MultiHopRAG.json")
    corpus = _one(folder, "*corpus*.json")
    questions = _one(folder, "*.json", exclude="corpus") or _one(folder, "*.jsonl")
    if questions is None:
        raise DatasetFormatError(f"{folder}: no question file found")
    if questions.suffix == ".jsonl":
        if corpus is None:
            raise DatasetFormatError(f"{folder}: 2Wiki questions need a *corpus*.json beside them")
        return load_2wiki(questions, corpus)
    rows = _read_json(questions)
    first = rows[0] if isinstance(rows, list) and rows else {}
    if "supporting_facts" in first:
        return load_hotpotqa(questions, corpus)
    if "paragraphs" in first:
        return load_musique(questions, corpus)
    if "gold_titles" in first and corpus is not None:
        return load_2wiki(questions, corpus)
    raise DatasetFormatError(f"{folder}: cannot tell the dataset format of {questions.name}")


def resolve_dataset(name_or_path: str, data_dir: str | Path | None = None) -> QADataset:
    """A folder path, or a known name (`hotpotqa`, `musique`, `2wiki`, `multihoprag`) looked up as
    `<data_dir>/<name>*` or `<data_dir>/multihop/<name>*`."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return load_folder(path)
    key = name_or_path.lower()
    if key not in KNOWN_SETS:
        raise DatasetFormatError(f"{name_or_path!r} is neither a folder nor one of {', '.join(KNOWN_SETS)}")
    if data_dir is None:
        raise DatasetFormatError(f"dataset {key!r} given by name: pass --data-dir (the folder holding it)")
    root = Path(data_dir).expanduser()
    for base in (root, root / "multihop"):
        if base.is_dir():
            for cand in sorted(base.glob(f"{key}*")):
                if cand.is_dir():
                    ds = load_folder(cand)
                    return ds
    raise DatasetFormatError(f"no folder named {key}* under {root} (or {root / 'multihop'})")
