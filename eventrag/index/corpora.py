"""Corpus roots: what a file's document id is relative to, shared by every index of one home.

A document's id is ``<corpus name>/<path relative to the corpus root>``. The first folder indexed
that lies in no known root becomes a root; its resolved path and name go to the home's registry
(``<home>/corpora.json``), so the same file gets the same id whichever folder it is reached through
(the root, a sub-folder, the file alone) and in whichever index. A file belongs to the innermost known
root that holds it. Names are unique in the registry (``docs``, ``docs~2`` ...), so ``a/docs`` and
``b/docs`` never share ids.

A root whose folder is gone and whose documents turn up, with the same content at the same relative
paths, under a new folder was moved: the registry entry and the index record follow it, the ids stay.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from eventfold.locks import exclusive
from eventrag.storage.base import Node

REGISTRY_VERSION = 1


class CorpusRegistry:
    """Root (resolved absolute path) -> name, kept in a JSON file under a lock (None: this process only)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._memory: dict[str, str] = {}

    def roots(self) -> dict[str, str]:
        if self.path is None:
            return dict(self._memory)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise RegistryError(f"cannot read the corpus registry {self.path}: {exc}; move it away to start "
                                "a new one (documents keep their ids in each index)") from None
        roots = data.get("roots") if isinstance(data, dict) else None
        return {str(k): str(v) for k, v in roots.items()} if isinstance(roots, dict) else {}

    def register(self, root: Path, name: str, *, avoid: Iterable[str] = (), replaces: str | None = None) -> str:
        """Record `root`; returns its name: the recorded one if it has one, `name` when it replaces the
        moved root `replaces`, else `name` made unique among the registry's names and `avoid`."""
        def update(roots: dict[str, str]) -> str:
            if str(root) in roots:
                return roots[str(root)]
            if replaces is not None:
                roots.pop(replaces, None)
                final = name
            else:
                final = unique_name(name, set(roots.values()) | set(avoid))
            roots[str(root)] = final
            return final

        if self.path is None:
            return update(self._memory)
        with exclusive(self.path.with_suffix(".lock")):
            roots = self.roots()
            final = update(roots)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"version": REGISTRY_VERSION, "roots": roots}, indent=1, sort_keys=True),
                           encoding="utf-8")
            os.replace(tmp, self.path)
        return final


class RegistryError(ValueError):
    """The registry file exists but cannot be read as one."""


def unique_name(base: str, used: set[str]) -> str:
    """`base` made unique among `used` with ``~2``, ``~3`` ..."""
    tag, n = base, 1
    while tag in used:
        n += 1
        tag = f"{base}~{n}"
    return tag


def folder_name(root: Path) -> str:
    """A corpus name from the root folder's name (``corpus`` for /)."""
    return (re.sub(r"[^\w.\-]+", "_", root.name).strip("._") or "corpus")[:80]


def innermost(roots: Iterable[str], path: Path) -> str | None:
    """The deepest of `roots` that is `path` or holds it."""
    holding = [r for r in roots if Path(r) == path or Path(r) in path.parents]
    return max(holding, key=lambda r: len(Path(r).parts)) if holding else None


def inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


@dataclass(frozen=True)
class KnownDocument:
    """A file-backed document of the index: its id, corpus name and root, and the file it came from."""

    doc_id: str
    corpus: str
    root: str
    rel: str  # the file's path relative to the root
    hash: str

    @property
    def location(self) -> Path:
        return Path(self.root) / self.rel


def known_documents(nodes: Sequence[Node]) -> list[KnownDocument]:
    """The Document nodes that came from a corpus (documents given directly have no root)."""
    out = []
    for n in nodes:
        root, tag = n.props.get("corpus_root"), n.props.get("corpus")
        if not isinstance(root, str) or not isinstance(tag, str) or not n.id.startswith(tag + "/"):
            continue
        rel = n.props.get("path")
        if not isinstance(rel, str):  # recorded before the path was: a record's id ends in #<record id>
            rel = n.id[len(tag) + 1:]
            head = rel.rsplit("#", 1)[0]
            rel = head if "#" in rel and head.endswith((".json", ".jsonl")) else rel
        out.append(KnownDocument(n.id, tag, root, rel, str(n.props.get("hash") or "")))
    return out


def index_roots(known: Sequence[KnownDocument]) -> dict[str, str]:
    """Root -> name as this index recorded them (its ids were made with these names)."""
    out: dict[str, str] = {}
    for d in known:
        out.setdefault(d.root, d.corpus)
    return out


def moved_from(candidates: dict[str, list[KnownDocument]], hashes: dict[str, str]) -> str | None:
    """The gone root (of `candidates`: root -> its documents) whose documents are found again among
    `hashes` (relative document id -> content hash, under the new root): at least one, and at least
    half of the smaller side, match; None when no root qualifies."""
    best, best_n = None, 0
    for root, docs in sorted(candidates.items()):
        n = sum(1 for d in docs if hashes.get(d.doc_id[len(d.corpus) + 1:]) == d.hash)
        if n and 2 * n >= min(len(docs), len(hashes)) and n > best_n:
            best, best_n = root, n
    return best
