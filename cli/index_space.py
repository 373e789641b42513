"""A full disk during `eventfold index`: which store ran out, how much space is free and how much the
files being indexed need (the stores take up to `STORE_BYTES_PER_TEXT_BYTE` bytes per byte of text:
graph rows, chunk/event/entity vectors and their indexes; measured on rule-extracted prose)."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from eventfold.settings import Settings

STORE_BYTES_PER_TEXT_BYTE = 200
MIN_NEEDED_BYTES = 64 * 1024 * 1024  # a fresh index's files and a little room for the SQLite journal
_FULL = ("database or disk is full", "no space left on device", "disk quota exceeded")


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def out_of_space(exc: BaseException, settings: Settings) -> str | None:
    """The store (``graph store /…/graph.sqlite``, ``vector store …``, ``corpus registry …``) that `exc`
    says ran out of disk space, or None when `exc` is about something else."""
    full = any(isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT) or
               any(f in str(e).lower() for f in _FULL) for e in _chain(exc))
    if not full:
        return None
    text = " ".join(str(e) for e in _chain(exc))
    files = " ".join(str(getattr(e, "filename", "") or "") for e in _chain(exc))
    if str(settings.graph_path()) in text or any(isinstance(e, sqlite3.Error) for e in _chain(exc)):
        return f"graph store {settings.graph_path()}"
    if settings.vector_uri() in text or settings.vector_uri() in files:
        return f"vector store {settings.vector_uri()}"
    if "corpora" in files:
        return f"corpus registry {settings.home / 'corpora.json'}"
    return f"index folder {settings.index_dir}"


def free_and_needed(settings: Settings, paths: list[Path]) -> tuple[int, int]:
    """(bytes free on the index's disk, bytes the stores need for the text of `paths`)."""
    where = settings.index_dir
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    return free, max(MIN_NEEDED_BYTES, _text_bytes(paths) * STORE_BYTES_PER_TEXT_BYTE)


def _text_bytes(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        if p.is_file():
            total += p.stat().st_size
            continue
        for folder, _dirs, names in os.walk(p):
            for n in names:
                try:
                    total += (Path(folder) / n).stat().st_size
                except OSError:
                    continue
    return total
