"""Token counting for remote models: tiktoken when its encoding is available, else an estimate.

tiktoken downloads its BPE files on first use; on a machine without that access (or with a model
tiktoken does not know, e.g. a Qwen served by vLLM) counts fall back to ~4 characters per token,
which is close for English prose. The server's `usage` fields stay the source of truth for spend.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable

from eventfold.llm.types import Message, ToolSpec

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4.0
# Per-message overhead of chat formats (role markers, separators), as in OpenAI's cookbook.
MESSAGE_OVERHEAD = 4
REPLY_PRIMING = 3

_lock = threading.Lock()
_encoders: dict[str, Callable[[str], int] | None] = {}


def _load(model: str) -> Callable[[str], int] | None:
    try:
        import tiktoken

        try:
            enc = tiktoken.encoding_for_model(model)
        except KeyError:
            enc = tiktoken.get_encoding("o200k_base")
        enc.encode("probe")
        return lambda text: len(enc.encode(text, disallowed_special=()))
    except Exception as exc:  # no network for the BPE file, or tiktoken missing
        log.info("tiktoken unavailable for %s (%s); estimating tokens as chars/%.0f", model, exc, CHARS_PER_TOKEN)
        return None


def text_counter(model: str) -> Callable[[str], int]:
    """A function counting tokens of a string for `model` (exact with tiktoken, else estimated)."""
    with _lock:
        if model not in _encoders:
            _encoders[model] = _load(model)
        enc = _encoders[model]
    if enc is not None:
        return enc
    return estimate_tokens


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def count_messages(count: Callable[[str], int], messages: list[Message], tools: list[ToolSpec] | None) -> int:
    """Tokens of a chat prompt: contents, tool calls, tool schemas, plus the usual per-message overhead."""
    total = REPLY_PRIMING
    for m in messages:
        total += MESSAGE_OVERHEAD + count(m.content)
        for call in m.tool_calls:
            total += count(call.name) + count(json.dumps(call.arguments, ensure_ascii=False))
    if tools:
        total += count(json.dumps([t.to_openai() for t in tools], ensure_ascii=False))
    return total
