"""Retries with exponential backoff and full jitter for remote calls (chat, embeddings).

The OpenAI SDK's own retries are switched off (``max_retries=0``) so that this loop is the single,
testable place deciding what is retried: rate limits (429), server errors (5xx), request timeouts
(408), conflicts (409), connection failures and timeouts. Anything else (400, 401, 404, ...) fails at once.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from eventfold.text_safety import mask_secrets

T = TypeVar("T")
log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))


def is_retryable(exc: BaseException) -> bool:
    """True for errors worth another try (needs the `openai` package only when one of its errors is seen)."""
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a runtime dependency
        return isinstance(exc, ConnectionError | TimeoutError)
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRYABLE_STATUS
    return isinstance(exc, ConnectionError | TimeoutError)


def retry_after_s(exc: BaseException) -> float | None:
    """The server's Retry-After hint in seconds, when it sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Full jitter: uniform in [0, min(max_s, base_s * 2**attempt)]."""
    return rng.uniform(0.0, min(max_s, base_s * (2**attempt)))


def call_with_retries(
    fn: Callable[[], T],
    *,
    max_retries: int,
    base_delay_s: float = 0.5,
    max_delay_s: float = 20.0,
    retryable: Callable[[BaseException], bool] = is_retryable,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    what: str = "request",
) -> T:
    """Call `fn`; on a retryable error wait and try again, at most `max_retries` more times.

    The last error is re-raised unchanged when the retries are spent, so the caller can wrap it.
    """
    rng = rng or random.Random()
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:
            if attempt >= max_retries or not retryable(exc):
                raise
            delay = backoff_delay(attempt, base_delay_s, max_delay_s, rng)
            hint = retry_after_s(exc)
            if hint is not None:
                delay = max(delay, min(hint, max_delay_s))
            log.warning("%s", mask_secrets(f"{what} failed ({type(exc).__name__}: {str(exc)[:200]}); "
                                           f"retry {attempt + 1}/{max_retries} in {delay:.2f}s"))
            sleep(delay)
            attempt += 1
