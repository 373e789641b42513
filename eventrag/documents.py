"""Reading documents from disk: txt, md, json/jsonl records (title/text), PDF when pypdf is installed.

Bad input fails with a `DocumentError` subclass that says what is wrong with which file; directory
indexing records such files as skipped and goes on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eventrag.schema import Document

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".rst"}
RECORD_SUFFIXES = {".json", ".jsonl"}
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | RECORD_SUFFIXES | {".pdf"}
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
_TEXT_KEYS = ("text", "contents", "content", "body", "paragraph_text", "passage")
_DATE_LINE = re.compile(r"^\s*(?:date|published|dated)\s*:\s*(.+?)\s*$", re.I | re.M)


class DocumentError(ValueError):
    """A file cannot be read as a document."""


class EmptyDocument(DocumentError):
    pass


class BinaryDocument(DocumentError):
    pass


class DocumentTooLarge(DocumentError):
    pass


class UnsupportedDocument(DocumentError):
    pass


def decode_text(data: bytes, path: Path) -> tuple[str, str]:
    """(text, encoding): UTF-8 first, then cp1252, then latin-1 (never loses bytes); NUL-rich data is binary."""
    sample = data[:8192]
    if b"\x00" in sample or (sample and sum(b < 9 or 13 < b < 32 for b in sample) / len(sample) > 0.05):
        raise BinaryDocument(f"{path}: looks like a binary file, not text (control bytes found)")
    for enc in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            return data.decode(enc), enc
        except UnicodeDecodeError:
            continue
    raise BinaryDocument(f"{path}: cannot be decoded as text")  # unreachable: latin-1 decodes anything


def _title_and_date(text: str, fallback_title: str) -> tuple[str, str | None]:
    head = text[:2000]
    title = fallback_title
    m = re.search(r"^\s*#\s+(.+?)\s*$", head, re.M)
    if m:
        title = m.group(1).strip()
    d = _DATE_LINE.search(head)
    date = None
    if d:
        from eventrag.dates import parse_absolute

        t = parse_absolute(d.group(1))
        date = t.start if t is not None and t.granularity == "day" else None
    return title, date


def _join(sentences: list[str]) -> str:
    """HotpotQA-style sentence lists carry their own leading spaces; others are joined with one."""
    parts = [str(x) for x in sentences]
    return ("".join(parts) if any(p[:1].isspace() for p in parts[1:]) else " ".join(parts)).strip()


def _record_docs(obj: Any, rel: str) -> Iterator[Document]:
    if isinstance(obj, dict) and not any(k in obj for k in _TEXT_KEYS) and obj and \
            all(isinstance(v, (list, str)) for v in obj.values()):
        obj = [{"title": k, "text": _join(v) if isinstance(v, list) else v} for k, v in obj.items()]  # {title: sentences}
    records = obj if isinstance(obj, list) else [obj]
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            continue
        text = next((rec[k] for k in _TEXT_KEYS if isinstance(rec.get(k), str) and rec[k].strip()), None)
        if text is None:
            continue
        rid = rec.get("doc_id") or rec.get("id") or rec.get("idx")
        doc_id = f"{rel}#{rid}" if rid is not None else f"{rel}#{i}"
        date = rec.get("date") or rec.get("published_at")
        yield Document(doc_id=doc_id, title=str(rec.get("title") or ""), text=text, source=rel,
                       date=str(date)[:10] if date else None,
                       meta={k: v for k, v in rec.items() if k in ("url", "author", "source")})


def load_file(path: Path, rel: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Document]:
    """The documents in one file (a JSON/JSONL file may hold many records)."""
    rel = rel or path.name
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise UnsupportedDocument(f"{path}: unsupported file type {suffix or '(none)'}; "
                                  f"supported: {', '.join(sorted(SUPPORTED_SUFFIXES))}")
    size = path.stat().st_size
    if size > max_bytes:
        raise DocumentTooLarge(f"{path}: {size / 1e6:.1f} MB is over the {max_bytes / 1e6:.1f} MB limit per file")
    if size == 0:
        raise EmptyDocument(f"{path}: the file is empty")
    if suffix == ".pdf":
        return [_load_pdf(path, rel)]
    text, encoding = decode_text(path.read_bytes(), path)
    if not text.strip():
        raise EmptyDocument(f"{path}: the file holds only whitespace")
    if suffix in RECORD_SUFFIXES:
        try:
            if suffix == ".jsonl":
                objs = [json.loads(line) for line in text.splitlines() if line.strip()]
            else:
                objs = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DocumentError(f"{path}: invalid JSON ({exc})") from exc
        docs = list(_record_docs(objs, rel))
        if not docs:
            raise EmptyDocument(f"{path}: no records with a text field ({', '.join(_TEXT_KEYS)})")
        return docs
    title, date = _title_and_date(text, path.stem)
    return [Document(doc_id=rel, title=title, text=text, source=str(path), date=date,
                     meta={"encoding": encoding} if encoding not in ("utf-8-sig", "utf-8") else {})]


def _load_pdf(path: Path, rel: str) -> Document:
    try:
        from pypdf import PdfReader  # optional dependency
    except ImportError as exc:
        raise UnsupportedDocument(f"{path}: reading PDF needs the optional package pypdf") from exc
    try:
        text = "\n\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)
    except Exception as exc:  # pypdf raises many types on damaged files
        raise DocumentError(f"{path}: unreadable PDF ({exc})") from exc
    if not text.strip():
        raise EmptyDocument(f"{path}: the PDF has no extractable text")
    return Document(doc_id=rel, title=path.stem, text=text, source=str(path))


def iter_files(root: Path) -> Iterator[tuple[Path, str]]:
    """(path, id relative to the root) of every supported file under `root` (or `root` itself), sorted."""
    if root.is_file():
        yield root, root.name
        return
    if not root.is_dir():
        raise FileNotFoundError(f"{root} does not exist")
    for p in sorted(root.rglob("*")):
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts):
            yield p, p.relative_to(root).as_posix()
