"""Reading documents from disk: txt, md, json/jsonl records (title/text), PDF with the `pdf` extra (pypdf).

Bad input fails with a `DocumentError` subclass that says what is wrong with which file (unreadable,
binary, empty, too large, unsupported); directory indexing records such files as skipped and goes on.
`scan_corpus` walks a folder without following links out of it: a symlink whose target lies outside
the corpus root, a symlink loop and a hidden file or folder are listed as skipped with the reason, a
linked folder is not descended into. A record id repeated in one JSON/JSONL file gets a distinct id. NUL characters never
reach a document (text with NULs in its first 8 KB is binary; later ones are removed).
"""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eventfold.text_safety import strip_nul
from eventrag.schema import Document
from eventrag.storage.base import Node
from eventrag.storage.errors import InvalidInput

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


class UnreadableDocument(DocumentError):
    """The file exists but cannot be read (permissions, I/O error)."""


class OutsideCorpus(DocumentError):
    """A symlink in the corpus points outside the corpus root."""


def decode_text(data: bytes, path: Path) -> tuple[str, str]:
    """(text, encoding): UTF-8 first, then cp1252, then latin-1 (never loses bytes); NUL-rich data is binary."""
    sample = data[:8192]
    if b"\x00" in sample or (sample and sum(b < 9 or 13 < b < 32 for b in sample) / len(sample) > 0.05):
        raise BinaryDocument(f"{path}: looks like a binary file, not text (control bytes found)")
    if b"\x00" in data:  # NULs past the sample: text with stray NULs, kept without them
        data = data.replace(b"\x00", b"")
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


def _record_docs(records: list[tuple[str, Any]], rel: str, notes: list[str] | None) -> Iterator[Document]:
    """Documents of (where, parsed JSON) records; a record id used twice in one file gets a distinct id
    (``rel#id~2``) and a note naming both places, so no record is lost."""
    used: dict[str, str] = {}
    for i, (where, rec) in enumerate(records):
        if not isinstance(rec, dict):
            continue
        text = next((rec[k] for k in _TEXT_KEYS if isinstance(rec.get(k), str) and rec[k].strip()), None)
        if text is None:
            continue
        rid = rec.get("doc_id") or rec.get("id") or rec.get("idx")
        doc_id = f"{rel}#{rid}" if rid is not None else f"{rel}#{i}"
        if doc_id in used:
            n = 2
            while f"{doc_id}~{n}" in used:
                n += 1
            if notes is not None:
                notes.append(f"{rel}: {where} repeats the record id {str(rid)!r} of {used[doc_id]}; "
                             f"indexed with an id ending in {f'{doc_id}~{n}'[len(rel):]}")
            doc_id = f"{doc_id}~{n}"
        used[doc_id] = where
        date = rec.get("date") or rec.get("published_at")
        yield Document(doc_id=doc_id, title=str(rec.get("title") or ""), text=text, source=rel,
                       date=str(date)[:10] if date else None,
                       meta={k: v for k, v in rec.items() if k in ("url", "author", "source")})


def _json_records(obj: Any) -> list[tuple[str, Any]]:
    """A JSON file's records: a list's items, a ``{title: sentences}`` mapping's entries, or the object."""
    if isinstance(obj, dict) and not any(k in obj for k in _TEXT_KEYS) and obj and \
            all(isinstance(v, (list, str)) for v in obj.values()):
        obj = [{"title": k, "text": _join(v) if isinstance(v, list) else v} for k, v in obj.items()]
    return [(f"record {i}", rec) for i, rec in enumerate(obj if isinstance(obj, list) else [obj], 1)]


def load_file(path: Path, rel: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES,
              notes: list[str] | None = None) -> list[Document]:
    """The documents in one file (a JSON/JSONL file may hold many records); `rel` is the document id
    (records get ``rel#record-id``). An unreadable file raises `UnreadableDocument`, not OSError.
    What was read but changed on the way (a repeated record id) is told in `notes`."""
    try:
        return [_clean(d) for d in _load(path, rel or path.name, max_bytes, notes)]
    except OSError as exc:
        raise UnreadableDocument(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None


def _clean(doc: Document) -> Document:
    """NUL characters removed from every text field (JSON escapes can carry them past the binary check)."""
    if "\x00" in doc.text or "\x00" in doc.title or "\x00" in doc.doc_id:
        return doc.model_copy(update={"text": strip_nul(doc.text), "title": strip_nul(doc.title),
                                      "doc_id": strip_nul(doc.doc_id)})
    return doc


def _load(path: Path, rel: str, max_bytes: int, notes: list[str] | None) -> list[Document]:
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
                records = [(f"line {i}", json.loads(line)) for i, line in enumerate(text.splitlines(), 1)
                           if line.strip()]
            else:
                records = _json_records(json.loads(text))
        except json.JSONDecodeError as exc:
            raise DocumentError(f"{path}: invalid JSON ({exc})") from exc
        docs = list(_record_docs(records, rel, notes))
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
        raise UnsupportedDocument(f"{path}: reading PDF needs the pdf extra: pip install 'eventfold[pdf]'") from exc
    try:
        text = "\n\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)
    except Exception as exc:  # pypdf raises many types on damaged files
        raise DocumentError(f"{path}: unreadable PDF ({exc})") from exc
    if not text.strip():
        raise EmptyDocument(f"{path}: the PDF has no extractable text")
    return Document(doc_id=rel, title=path.stem, text=text, source=str(path))


@dataclass
class CorpusScan:
    """The files of one corpus root: `root` is the resolved folder that ids are relative to; `single`
    is set when one file was given (its folder is the root, and nothing else of it is looked at)."""

    root: Path
    files: list[tuple[Path, str]] = field(default_factory=list)  # (path, id relative to the root)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    single: bool = False
    unreadable: list[str] = field(default_factory=list)  # folders (relative to the root) that could not be listed


def scan_corpus(path: Path) -> CorpusScan:
    """Every supported-looking file under `path` (or `path` itself), sorted; hidden files and folders
    are listed as skipped; symlinks are followed only to targets inside the root, a symlink loop is skipped."""
    given = Path(path).expanduser()
    if not given.exists() and not given.is_symlink():
        raise FileNotFoundError(f"{given} does not exist")
    if given.is_file():
        root = given.resolve().parent
        scan = CorpusScan(root=root, single=True)
        _add(scan, given.absolute(), given.name)
        return scan
    if not given.is_dir():
        raise FileNotFoundError(f"{given} is neither a file nor a folder")
    scan = CorpusScan(root=given.resolve())
    found: list[tuple[Path, str]] = []

    def unreadable(err: OSError) -> None:
        scan.skipped.append((str(err.filename), f"{err.filename}: folder cannot be read ({err.strerror})"))
        if err.filename:
            rel = Path(err.filename).relative_to(scan.root).as_posix() if Path(err.filename) != scan.root else ""
            scan.unreadable.append(rel)

    for folder, dirs, names in os.walk(scan.root, onerror=unreadable, followlinks=False):
        base = Path(folder)
        for d in sorted(dirs):
            if d.startswith("."):
                scan.skipped.append((str(base / d), f"{base / d}: hidden folder (its name starts with '.'); not indexed"))
            elif (base / d).is_symlink():  # never walked (outside: refused; inside: indexed at its own path)
                _add_link_dir(scan, base / d)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (base / d).is_symlink())
        for n in names:
            if n.startswith("."):
                scan.skipped.append((str(base / n), f"{base / n}: hidden file (its name starts with '.'); not indexed"))
            else:
                found.append((base / n, (base / n).relative_to(scan.root).as_posix()))
    scan.skipped.sort()
    for p, rel in sorted(found, key=lambda x: x[1]):
        _add(scan, p, rel)
    return scan


def _inside(target: Path, root: Path) -> bool:
    return target == root or root in target.parents


def _link_target(scan: CorpusScan, p: Path) -> Path | None:
    """Where the symlink `p` leads, or None (recorded as skipped) for a loop or an unresolvable chain."""
    try:
        return p.resolve(strict=True)
    except (RuntimeError, OSError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        loop = isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP
        why = "symlink loop (the chain of links leads back to itself)" if loop else \
            f"symlink to {os.readlink(p)}, which does not exist"
        scan.skipped.append((str(p), f"{p}: {why}; not followed"))
        return None


def _add(scan: CorpusScan, p: Path, rel: str) -> None:
    if p.is_symlink():
        target = _link_target(scan, p)
        if target is None:
            return
        if not _inside(target, scan.root):
            scan.skipped.append((str(p), f"{p}: symlink to {target}, outside the corpus root {scan.root}; not followed"))
            return
        if not target.is_file():
            scan.skipped.append((str(p), f"{p}: symlink to {target}, which is not a file"))
            return
    elif not p.is_file():
        return  # sockets, fifos, devices
    scan.files.append((p, rel))


def _add_link_dir(scan: CorpusScan, p: Path) -> None:
    target = _link_target(scan, p)
    if target is None:
        return
    where = "outside the corpus root" if not _inside(target, scan.root) else "inside the corpus (indexed at its own path)"
    scan.skipped.append((str(p), f"{p}: symlink to the folder {target}, {where}; not followed"))


def document_id_problem(doc_id: str) -> str | None:
    """Why `doc_id` cannot be a stored id (too long, NUL, empty), or None."""
    try:
        Node(id=doc_id, label="Document")
    except (InvalidInput, ValueError) as exc:
        short = doc_id[:80] + ("…" if len(doc_id) > 80 else "")
        return f"document id {short!r} ({len(doc_id)} characters) cannot be stored: " \
               f"{str(exc).split(', got', 1)[0].replace('node id', 'an id')[:160]}"
    return None


def without_nul(d: Document) -> Document:
    """`d` without NUL characters in its text and title (documents given to the API directly)."""
    if "\x00" in d.text or "\x00" in d.title:
        return d.model_copy(update={"text": strip_nul(d.text), "title": strip_nul(d.title)})
    return d


def iter_files(root: Path) -> Iterator[tuple[Path, str]]:
    """(path, id relative to the root) of every file `scan_corpus` accepts under `root`, sorted."""
    yield from scan_corpus(root).files
