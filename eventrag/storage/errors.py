"""Storage exceptions: every failure of a store surfaces as one of these, with a message that says
what was wrong and what to do. A failed write raises before anything of its batch is committed."""

from __future__ import annotations

import sqlite3


class StorageError(Exception):
    """Base class of every storage failure."""


class InvalidInput(StorageError):
    """A batch or argument is malformed (bad id, bad property value, bad filter key, ...).

    Deliberately not a ``ValueError``: pydantic lets it propagate unwrapped from model validators,
    so ``Edge(type="FOO")`` raises ``UnknownEdgeType`` itself."""


class UnknownEdgeType(InvalidInput):
    """An edge type outside the fixed whitelist (``eventrag.storage.base.EDGE_TYPES``)."""


class UnknownLabel(InvalidInput):
    """A node label outside the fixed whitelist (``eventrag.storage.base.NODE_LABELS``)."""


class MissingNode(InvalidInput):
    """An edge refers to a node id that is not in the store (write its nodes first)."""


class NamespaceMismatch(InvalidInput):
    """A record names a namespace other than the store's."""


class DimensionMismatch(InvalidInput):
    """A vector's length differs from its collection's dimension."""


class CollectionNotFound(StorageError, KeyError):
    """The named vector collection does not exist (call ``create_collection`` first)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "collection not found"


class StoreLocked(StorageError):
    """Another process holds the store's lock (Milvus Lite directory, SQLite write lock)."""


class StoreUnavailable(StorageError):
    """The store cannot be reached (server down, wrong URI, authentication refused)."""


class StoreCorrupt(StorageError):
    """The store's file is damaged (not a database, a malformed page): nothing in it can be trusted."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class StoreClosed(StorageError):
    """The store was used after ``close()``."""


_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26  # primary result codes of a damaged file


def sqlite_failure(exc: Exception, what: str, path: object) -> StorageError:
    """The storage error for a failed SQLite call on the file at `path`: locked or busy (StoreLocked),
    damaged (StoreCorrupt: not a database, a malformed page), or anything else (StorageError)."""
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)):
        return StoreLocked(f"{what}: graph store {path} is locked by another writer ({exc}); retry later")
    if getattr(exc, "sqlite_errorcode", 0) & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return StoreCorrupt(f"{what}: graph store {path} is damaged ({exc})", str(path))
    return StorageError(f"{what} failed on {path}: {exc}")
