"""Milvus Lite's process side, for ``vector_milvus``: connecting (keepalive settings, retries), the
directory lock another process may hold, the per-directory count of this process's open stores (the
last close stops the embedded server), and waiting for its background index build."""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from pathlib import Path
from typing import Any

from pymilvus import MilvusClient, MilvusException
from pymilvus.exceptions import ConnectionConfigException

from eventfold.llm.retry import call_with_retries

logger = logging.getLogger(__name__)


def lock_holder(path: Path) -> str | None:
    """If another process holds Milvus Lite's lock on ``path``, the lock file's path."""
    lock = path / "LOCK"
    if not lock.exists():
        return None
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    except OSError:
        return str(lock)
    finally:
        os.close(fd)


# pymilvus pings every 10 s even while idle; Milvus Lite's gRPC server (Python defaults) allows one
# ping per 5 min without data and answers the third with GOAWAY "too_many_pings", after which every new
# client on that server (and the idle one) fails to reconnect for a while. An in-process server needs
# no keepalive: ping only while calls are in flight, and no more often than the server permits.
_LITE_GRPC = {"grpc.keepalive_permit_without_calls": 0, "grpc.keepalive_time_ms": 300_000}
_CONNECT_RETRIES = 2


def connect(uri: str, token: str | None, lite: bool) -> MilvusClient:
    """A client, retried twice with backoff on a failed connect (a server restarting, a channel still
    in GOAWAY); the last failure propagates. The project's one retry loop, which logs no URI."""
    extra: dict[str, Any] = {"grpc_options": dict(_LITE_GRPC)} if lite else {}
    return call_with_retries(
        lambda: MilvusClient(uri=uri, token=token or "", **extra),
        max_retries=_CONNECT_RETRIES,
        base_delay_s=1.0,
        retryable=lambda exc: isinstance(exc, ConnectionConfigException | MilvusException),
        what="connecting to Milvus",
    )


# Milvus Lite runs one embedded server per data directory per process (milvus_lite's own registry);
# count this module's open stores per directory so the last close() stops it and frees the lock.
_LITE_USERS: dict[str, int] = {}
_LITE_GUARD = threading.Lock()


def lite_in_use(path: str) -> bool:
    """Whether a store of this process has the Lite directory open (then its lock is ours)."""
    with _LITE_GUARD:
        return path in _LITE_USERS


def acquire_lite(path: str) -> None:
    with _LITE_GUARD:
        _LITE_USERS[path] = _LITE_USERS.get(path, 0) + 1


def release_lite(path: str) -> None:
    with _LITE_GUARD:
        _LITE_USERS[path] -= 1
        if _LITE_USERS[path] > 0:
            return
        del _LITE_USERS[path]
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(path)


def drain_lite_background(path: str, name: str, timeout_s: float) -> None:
    """Wait for Milvus Lite's background compaction + index build after a flush. Until it finishes,
    searches scan unindexed segments (~10x slower) and ``describe_index`` already says "Finished".
    Uses milvus_lite's in-process objects (no public API for it); best effort if they change."""
    try:
        from milvus_lite.server_manager import server_manager_instance

        entry = server_manager_instance._servers.get(path)
        if entry is not None:
            entry[1].get_collection(name)._wait_for_bg(timeout_s)
    except (
        AttributeError,
        KeyError,
        TypeError,
        LookupError,
    ) as exc:  # pragma: no cover - lite internals moved
        logger.debug("cannot wait for Milvus Lite background work: %s", exc)
