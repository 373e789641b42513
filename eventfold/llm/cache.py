"""A content-hash cache of deterministic chat calls, in SQLite (used by indexing and evaluation).

Only calls at temperature 0 are cached; the key is the sha256 of the model name, the messages, the
tools, the tool choice, the JSON schema and the decoding parameters. The file uses WAL so several
processes can share it; one connection per wrapper, guarded by a lock, so threads can share it too.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Literal

from eventfold.llm.types import ChatModel, ChatResponse, Message, ToolSpec

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chat_cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class CachedChatModel:
    """Wraps a `ChatModel`; identical deterministic requests are answered from the cache."""

    def __init__(self, inner: ChatModel, path: str | Path, *, default_temperature: float = 0.0) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = Path(path)
        self.default_temperature = default_temperature
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    def chat(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        tool_choice: Literal["auto", "required", "none"] = "auto",
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
    ) -> ChatResponse:
        call = {
            "tools": tools,
            "tool_choice": tool_choice,
            "json_schema": json_schema,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stop": stop,
        }
        effective_t = self.default_temperature if temperature is None else temperature
        if effective_t != 0:
            return self.inner.chat(messages, **call)  # type: ignore[arg-type]
        key = cache_key(self.name, messages, tools, tool_choice, json_schema, max_tokens, stop)
        with self._lock:
            row = self._db.execute("SELECT response FROM chat_cache WHERE key = ?", (key,)).fetchone()
            if row is not None:
                self.hits += 1
        if row is not None:
            response = ChatResponse.model_validate_json(row[0])
            response.cached = True
            return response
        response = self.inner.chat(messages, **call)  # type: ignore[arg-type]
        with self._lock:
            self.misses += 1
            self._db.execute(
                "INSERT OR REPLACE INTO chat_cache (key, model, response, created) VALUES (?, ?, ?, ?)",
                (key, self.name, response.model_dump_json(), time.time()),
            )
            self._db.commit()
        return response

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def count_message_tokens(self, messages: list[Message], tools: list[ToolSpec] | None = None) -> int:
        return self.inner.count_message_tokens(messages, tools)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM chat_cache").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def cache_key(
    model: str,
    messages: list[Message],
    tools: list[ToolSpec] | None,
    tool_choice: str,
    json_schema: dict[str, Any] | None,
    max_tokens: int | None,
    stop: list[str] | None,
) -> str:
    payload = {
        "model": model,
        "messages": [m.model_dump(mode="json") for m in messages],
        "tools": [t.model_dump(mode="json") for t in tools or []],
        "tool_choice": tool_choice,
        "json_schema": json_schema,
        "max_tokens": max_tokens,
        "stop": stop,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
