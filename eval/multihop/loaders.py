"""Which multi-hop loader reads a folder, a question file or a set named by its name
(`eval.multihop.formats` holds one loader per format)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eval.bundled_data import DATA_DIR
from eval.multihop.formats import (
    DatasetFormatError,
    hotpotqa_dataset,
    load_multihoprag,
    multihoprag_dataset,
    musique_dataset,
    read_rows,
    two_wiki_dataset,
    two_wiki_retrieval_dataset,
)
from eval.multihop.schema import QADataset

KNOWN_SETS = ("multihoprag", "hotpotqa", "musique", "2wiki")
# question types only 2WikiMultihopQA has (HotpotQA's are bridge and comparison)
_2WIKI_TYPES = frozenset({"compositional", "inference", "bridge_comparison"})
# files in the official releases that hold no questions
_NOT_QUESTIONS = frozenset({"id_aliases.json", "corpus.json"})


def record_format(row: Any) -> str | None:
    """The format of one question record: multihoprag, hotpotqa, musique, 2wiki (the official
    release) or 2wiki-retrieval; None when it is in none of them."""
    if not isinstance(row, dict):
        return None
    if "query" in row and "evidence_list" in row:
        return "multihoprag"
    if "paragraphs" in row:
        return "musique"
    if "context" in row:
        return "2wiki" if "evidences" in row or row.get("type") in _2WIKI_TYPES else "hotpotqa"
    if "gold_titles" in row:
        return "2wiki-retrieval"
    return None


def is_dataset_file(path: str | Path) -> bool:
    """Whether `path` is a question file of one of these sets: any .json file, or a .jsonl file whose
    first record is in one of the formats (a JSONL of plain {question, answer} records is not)."""
    path = Path(path)
    if not path.is_file() or path.suffix not in (".json", ".jsonl"):
        return False
    if path.suffix == ".json":
        return True
    with path.open(encoding="utf-8") as fh:
        first = next((line for line in fh if line.strip()), "")
    try:
        return record_format(json.loads(first)) is not None
    except json.JSONDecodeError:
        return False


def _corpus_beside(questions: Path) -> Path | None:
    """The folder's one `*corpus*.json`, if it has one."""
    corpora = sorted(questions.parent.glob("*corpus*.json"))
    if len(corpora) > 1:
        names = ", ".join(p.name for p in corpora)
        raise DatasetFormatError(f"{questions.parent}: several corpus files ({names}); keep one beside {questions.name}")
    return corpora[0] if corpora else None


def load_file(path: str | Path, corpus_path: str | Path | None = None) -> QADataset:
    """One question file in any of the formats, told by its first record; the corpus is `corpus_path`,
    else the `*corpus*.json` beside the file (MultiHopRAG: its `corpus.json`), else the questions' own
    contexts."""
    path = Path(path)
    rows = read_rows(path, "multi-hop")
    if not rows:
        raise DatasetFormatError(f"{path}: holds no questions")
    kind = record_format(rows[0])
    corpus = Path(corpus_path) if corpus_path is not None else _corpus_beside(path)
    if kind == "multihoprag":
        return multihoprag_dataset(rows, path, corpus or path.parent / "corpus.json")
    if kind == "hotpotqa":
        return hotpotqa_dataset(rows, path, corpus)
    if kind == "musique":
        return musique_dataset(rows, path, corpus)
    if kind == "2wiki":
        return two_wiki_dataset(rows, path)
    if kind == "2wiki-retrieval":
        if corpus is None:
            raise DatasetFormatError(f"{path}: 2Wiki retrieval questions need a *corpus*.json beside them")
        return two_wiki_retrieval_dataset(rows, path, corpus)
    fields = sorted(rows[0]) if isinstance(rows[0], dict) else type(rows[0]).__name__
    raise DatasetFormatError(f"{path}: cannot tell the dataset format of its records (fields {fields})")


def load_folder(folder: str | Path) -> QADataset:
    """The set in `folder`: MultiHopRAG's two files, or its one question file (and corpus)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetFormatError(f"{folder} is not a directory")
    if (folder / "MultiHopRAG.json").is_file():
        return load_multihoprag(folder / "corpus.json", folder / "MultiHopRAG.json")
    questions = sorted(
        p for p in folder.iterdir()
        if p.is_file() and p.suffix in (".json", ".jsonl") and not p.name.startswith(".")
        and "corpus" not in p.name and p.name not in _NOT_QUESTIONS
    )
    if not questions:
        raise DatasetFormatError(f"{folder}: no question file found")
    if len(questions) > 1:
        names = ", ".join(p.name for p in questions)
        raise DatasetFormatError(f"{folder}: several question files ({names}); pass the one to load")
    return load_file(questions[0])


def load_path(path: str | Path) -> QADataset:
    """A set's folder or one of its question files."""
    path = Path(path).expanduser()
    return load_folder(path) if path.is_dir() else load_file(path)


def resolve_dataset(name_or_path: str, data_dir: str | Path | None = None) -> QADataset:
    """A folder or question file, or a known name (`hotpotqa`, `musique`, `2wiki`, `multihoprag`)
    looked up as `<data_dir>/<name>*` or `<data_dir>/multihop/<name>*`; `data_dir` defaults to the
    repository's data folder."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        return load_path(path)
    key = name_or_path.lower()
    if key not in KNOWN_SETS:
        raise DatasetFormatError(
            f"{name_or_path!r} is neither a folder, a question file nor one of {', '.join(KNOWN_SETS)}"
        )
    root = Path(data_dir).expanduser() if data_dir is not None else DATA_DIR
    for base in (root, root / "multihop"):
        if base.is_dir():
            for cand in sorted(base.glob(f"{key}*")):
                if cand.is_dir():
                    return load_folder(cand)
    hint = " (it is not shipped: see data/README.md)" if data_dir is None else ""
    raise DatasetFormatError(f"no folder named {key}* under {root} (or {root / 'multihop'}){hint}")
