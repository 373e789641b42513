"""Question sets shipped with the project, read as QA sets: a folder of Markdown/text documents and a
questions.jsonl beside it (`{"id", "question", "answer", "type", "supporting_docs": [file names]}`).

`sample` is examples/questions.jsonl over examples/corpus; every folder `examples/<name>/` holding a
questions.jsonl is a set over its corpus/ folder (else its own documents); `origin` is
bench/data/origin_questions.jsonl over examples/corpus. Any other pair is given as
`name=corpus_dir,questions_file` (`parse_set`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eval.multihop.loaders import resolve_dataset
from eval.multihop.schema import Passage, QADataset, QAExample
from eventrag.index.documents import load_file

SHARED_SETS = ("hotpotqa", "musique")  # by name from the data folder: <data_dir>/multihop/<name>_train100


class SetError(ValueError):
    """A set cannot be read: unknown name, missing corpus or questions, a supporting doc not in the corpus."""


def corpus_of(folder: Path) -> Path:
    """A set folder's documents: its corpus/ folder when it has one, else the folder itself."""
    return folder / "corpus" if (folder / "corpus").is_dir() else folder


def local_sets(root: Path) -> dict[str, tuple[Path, Path]]:
    """The question sets shipped with the project: name -> (corpus folder, questions file)."""
    examples = root / "examples"
    sets = {"sample": (examples / "corpus", examples / "questions.jsonl")}
    sets["origin"] = (examples / "corpus", root / "bench" / "data" / "origin_questions.jsonl")
    for questions in sorted(examples.glob("*/questions.jsonl")):
        sets[questions.parent.name] = (corpus_of(questions.parent), questions)
    return sets


def parse_set(spec: str) -> tuple[str, tuple[Path, Path]]:
    """`name=corpus_dir,questions_file` -> (name, (corpus, questions))."""
    name, sep, paths = spec.partition("=")
    corpus, comma, questions = paths.partition(",")
    if not (sep and comma and name.strip() and corpus.strip() and questions.strip()):
        raise SetError(f"--set {spec!r}: expected name=corpus_dir,questions_file")
    return name.strip(), (Path(corpus.strip()).expanduser(), Path(questions.strip()).expanduser())


def _example(row: dict[str, Any], titles: dict[str, str], where: str) -> QAExample:
    missing = [d for d in row.get("supporting_docs", []) if Path(d).name not in titles]
    if missing:
        raise SetError(f"{where}: supporting docs {missing} are not in the corpus")
    answers = row["answer"] if isinstance(row["answer"], list) else [row["answer"]]
    return QAExample(
        qid=str(row["id"]), question=row["question"], answers=[*answers, *row.get("aliases", [])],
        question_type=row.get("type", "unknown"),
        gold_titles=[titles[Path(d).name] for d in row.get("supporting_docs", [])],
        gold_passage_ids=[Path(d).name for d in row.get("supporting_docs", [])],
    )  # fmt: skip


def local_set(name: str, corpus: Path, questions: Path) -> QADataset:
    """A corpus of Markdown/text files and its questions as a QA set (one passage per file), each titled
    as `ask --corpus` titles it (its Markdown heading, `load_file`), so the readers see the titles a
    user's run shows."""
    files = sorted(f for f in corpus.glob("*") if f.suffix in (".md", ".txt")) if corpus.is_dir() else []
    if not files:
        raise SetError(f"set {name!r}: no .md or .txt documents in {corpus}")
    if not questions.is_file():
        raise SetError(f"set {name!r}: {questions} does not exist")
    docs = {f.name: load_file(f)[0] for f in files}  # each file read once
    titles = {fname: doc.title for fname, doc in docs.items()}
    passages = [Passage(passage_id=fname, title=doc.title, text=doc.text) for fname, doc in docs.items()]
    examples = []
    for n, line in enumerate(questions.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                examples.append(_example(json.loads(line), titles, f"{questions}:{n}"))
            except (json.JSONDecodeError, KeyError) as exc:
                raise SetError(f"{questions}:{n}: not a question row ({type(exc).__name__}: {exc})") from exc
    return QADataset(name=name, examples=examples, passages=passages)


def load_set(
    name: str, root: Path, data_dir: Path | None = None, extra: dict[str, tuple[Path, Path]] | None = None
) -> QADataset:
    """A set by name: one of the project's (`local_sets(root)`), one given in `extra`, a shared set in
    `data_dir`, or a folder the multi-hop loaders read."""
    known = {**local_sets(root), **(extra or {})}
    if name in known:
        return local_set(name, *known[name])
    if name in SHARED_SETS or Path(name).expanduser().is_dir():
        return resolve_dataset(name, data_dir)
    raise SetError(f"unknown set {name!r}; choose from {', '.join([*known, *SHARED_SETS])}, or give a folder")
