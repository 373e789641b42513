"""Bounded-staleness hand-off between pipeline stages, and the learner's published weights.

``StalenessQueue``: a bounded FIFO (producers block when it is full — backpressure, so rollout
workers cannot run far ahead of the learner) whose items carry the policy version that generated
them; ``get`` drops every item that trails the learner's current version by more than ``max_lag``
and returns the next fresh one with its lag. ``WeightStore``: the learner publishes (version,
weights); rollout workers pick up a newer version before each group.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class StalenessQueue(Generic[T]):
    def __init__(self, capacity: int, max_lag: int, current_version: Callable[[], int]) -> None:
        if capacity < 1 or max_lag < 0:
            raise ValueError("StalenessQueue: capacity >= 1 and max_lag >= 0")
        self.capacity, self.max_lag, self.current_version = capacity, max_lag, current_version
        self._items: deque[tuple[T, int]] = deque()
        self._cv = threading.Condition()
        self._closed = False
        self.dropped = 0
        self.lags: Counter[int] = Counter()

    def put(self, item: T, version: int, timeout: float | None = None) -> bool:
        """Enqueue (blocks while full); False when the queue was closed or the wait timed out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while len(self._items) >= self.capacity and not self._closed:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(left)
            if self._closed:
                return False
            self._items.append((item, version))
            self._cv.notify_all()
            return True

    def get(self, timeout: float | None = None) -> tuple[T, int] | None:
        """Next item within the lag bound as (item, lag); stale items are dropped on the way.
        None when closed and empty, or on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while True:
                while self._items:
                    item, version = self._items.popleft()
                    self._cv.notify_all()
                    lag = self.current_version() - version
                    if lag > self.max_lag:
                        self.dropped += 1
                        continue
                    self.lags[lag] += 1
                    return item, lag
                if self._closed:
                    return None
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cv.wait(left)

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    def __len__(self) -> int:
        with self._cv:
            return len(self._items)


class WeightStore:
    """The latest published policy weights and their version (thread-safe)."""

    def __init__(self, state: dict[str, Any], version: int = 0) -> None:
        self._lock = threading.Lock()
        self._state, self._version = state, version

    @property
    def version(self) -> int:
        with self._lock:
            return self._version

    def publish(self, state: dict[str, Any], version: int) -> None:
        with self._lock:
            self._state, self._version = state, version

    def latest(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            return self._version, self._state
