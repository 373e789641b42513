"""An exclusive lock on a file, shared by every process on this machine (model pulls, model conversions)."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Hold ``lock_path`` exclusively for the block (other processes wait); its folder is created."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
