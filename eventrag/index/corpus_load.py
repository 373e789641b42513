"""Files and folders -> documents with their ids, for `Indexer.index_paths`.

Each file is read once with an id relative to its scan; it then takes the id it has under the
innermost corpus root that holds it (`eventrag.index.corpora`). Files under no known root belong to
the scanned folder, which becomes a root, unless it is a root of this index that was moved there.
What could not be read is remembered by location, so a re-index never prunes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from eventrag.index.corpora import (
    CorpusRegistry,
    KnownDocument,
    folder_name,
    index_roots,
    innermost,
    inside,
    moved_from,
)
from eventrag.index.documents import CorpusScan, DocumentError, UnreadableDocument, load_file, scan_corpus
from eventrag.index.summary import IndexSummary, SkippedFile
from eventrag.schema import Document


@dataclass
class LoadedCorpora:
    docs: list[Document] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)  # folders scanned whole: documents gone from them are pruned
    kept: list[Path] = field(default_factory=list)  # files and folders that exist but could not be read
    moves: dict[str, str] = field(default_factory=dict)  # old root -> the folder it was moved to

    def keeps(self, location: Path) -> bool:
        return any(inside(location, k) for k in self.kept)


class CorpusLoader:
    """Reads the given paths into documents with stable ids; `hash_of` is the indexer's content hash
    (a document found again unchanged under a new folder proves its root was moved)."""

    def __init__(self, registry: CorpusRegistry, known: list[KnownDocument], hash_of: Callable[[Document], str],
                 max_bytes: int) -> None:
        self.registry, self.known, self.hash_of, self.max_bytes = registry, known, hash_of, max_bytes
        self.own = index_roots(known)  # this index's names win for its roots: its ids were made with them
        self.roots = {**registry.roots(), **self.own}

    def load(self, paths: Iterable[str | Path], summary: IndexSummary) -> LoadedCorpora:
        out = LoadedCorpora()
        for given in paths:
            scan = scan_corpus(Path(given))
            summary.skipped += [SkippedFile(source=src, reason=why) for src, why in scan.skipped]
            out.kept += [scan.root / d for d in scan.unreadable]
            if not scan.single:
                out.folders.append(scan.root)
            loaded = self._read(scan, out, summary)
            self._place(scan, loaded, out)
        self._note_gone_roots(out, summary)
        return out

    def _read(self, scan: CorpusScan, out: LoadedCorpora, summary: IndexSummary) -> list[tuple[Path, list[Document]]]:
        """(file location, its documents with ids relative to the scan) for every readable file."""
        loaded = []
        for path, rel in scan.files:
            location = scan.root / rel
            try:
                docs = load_file(path, rel, max_bytes=self.max_bytes, notes=summary.notes)
            except DocumentError as exc:
                summary.skipped.append(SkippedFile(source=str(path), reason=str(exc)))
                if isinstance(exc, UnreadableDocument):  # empty, binary, too large: not a document any more
                    out.kept.append(location)
                continue
            loaded.append((location, docs))
        return loaded

    def _place(self, scan: CorpusScan, loaded: list[tuple[Path, list[Document]]], out: LoadedCorpora) -> None:
        """Give each file's documents the id they have under their root; files under no known root make
        the scanned folder one (a moved root of this index keeps its name)."""
        orphans = [(loc, docs) for loc, docs in loaded if innermost(self.roots, loc) is None]
        if orphans:
            self._adopt(scan.root, orphans, out, scan.single)
        for location, docs in loaded:
            root = innermost(self.roots, location)
            assert root is not None  # every location lies in a known root now
            rel = location.relative_to(root).as_posix()
            scan_rel = location.relative_to(scan.root).as_posix()
            out.docs += [_retag(d, self.roots[root], root, rel, scan_rel) for d in docs]

    def _adopt(self, root: Path, orphans: list[tuple[Path, list[Document]]], out: LoadedCorpora,
               single: bool) -> None:
        """Make `root` a corpus root: the moved root of this index whose documents it holds unchanged
        (a folder scan only), or a new root named after the folder."""
        gone_roots = {r for r in self.own if not Path(r).exists()} if not single else set()
        gone: dict[str, list[KnownDocument]] = {}
        for d in self.known:
            if d.root in gone_roots:
                gone.setdefault(d.root, []).append(d)
        # the orphans were read with ids relative to `root`, which is the key moved_from compares on
        old = moved_from(gone, {d.doc_id: self.hash_of(d) for _, docs in orphans for d in docs}) if gone else None
        if old is not None:
            name = self.registry.register(root, self.own.pop(old), replaces=old)
            out.moves[old] = str(root)
            self.roots.pop(old, None)
            self.own[str(root)] = name
        else:
            name = self.registry.register(root, folder_name(root), avoid=set(self.roots.values()))
        self.roots[str(root)] = name

    def _note_gone_roots(self, out: LoadedCorpora, summary: IndexSummary) -> None:
        for root, name in sorted(self.own.items()):
            n = sum(1 for d in self.known if d.root == root)
            if not n or Path(root).exists():
                continue
            summary.notes.append(f"the folder of corpus '{name}' ({root}) is gone: its {n} document(s) are kept; "
                                 "index the folder where it went to move them, or remove them with --delete")


def _retag(doc: Document, name: str, root: str, rel: str, scan_rel: str) -> Document:
    """`doc` (read with an id relative to its scan) with its id under the corpus root and that root recorded."""
    doc_id = f"{name}/{rel}{doc.doc_id[len(scan_rel):]}"  # a record keeps its #<record id>
    source = f"{name}/{rel}" if doc.source == scan_rel else doc.source
    meta = {**doc.meta, "corpus": name, "corpus_root": root, "path": rel}
    return doc.model_copy(update={"doc_id": doc_id, "source": source, "meta": meta})
