"""Append-only JSONL results store: one record per finished unit of work, so a run can resume.

Every eval writes each result as soon as it exists (one line, flushed and fsynced under a lock), and
a rerun reads the file back to skip the keys already done. A torn last line (the process was killed
mid-write) is ignored on reading and the unit is simply redone.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Key = tuple[str, ...]


class ResultsStore:
    """`results.jsonl` in `path`; `key_fn` maps a record to the identity used for resuming."""

    def __init__(self, path: str | Path, key_fn: Callable[[dict[str, Any]], Key]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._key_fn = key_fn
        self._lock = threading.Lock()

    def records(self) -> Iterator[dict[str, Any]]:
        """Every readable record, later records overriding earlier ones with the same key."""
        latest: dict[Key, dict[str, Any]] = {}
        if self.path.is_file():
            with self.path.open(encoding="utf-8") as fh:
                for line in fh:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # torn write from an interrupted run: that unit is redone
                    if isinstance(rec, dict):
                        latest[self._key_fn(rec)] = rec
        yield from latest.values()

    def done_keys(self, ok: Callable[[dict[str, Any]], bool] = lambda r: not r.get("error")) -> set[Key]:
        """Keys whose latest record counts as finished (by default: recorded without an error)."""
        return {self._key_fn(r) for r in self.records() if ok(r)}

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock, self.path.open("a+b") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() > 0:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":  # a torn last line: start on a fresh one
                    fh.write(b"\n")
            fh.write((line + "\n").encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())


def write_json(path: str | Path, data: Any) -> Path:
    """Write JSON atomically (temp file + rename), so a reader never sees half a summary."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2, default=str), encoding="utf-8")
    tmp.replace(path)
    return path
