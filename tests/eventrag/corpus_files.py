"""Helpers of the corpus tests: write a corpus file, read the document ids an index holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def doc_ids(st: Any) -> set[str]:
    return {n.id for n in st.graph.find_nodes("Document", limit=1000)}
