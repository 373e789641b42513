"""Test doubles for unit tests only: a scripted chat model and an in-memory vector store.

Integration tests use the real stores (Milvus Lite, SQLite, Neo4j) and the real local model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from eventfold.llm.types import ChatResponse, LLMError, Message
from eventrag.storage.base import VectorHit, VectorRecord
from eventrag.storage.errors import CollectionNotFound


class ScriptedChatModel:
    """Replies with the scripted texts in order; records the messages it was sent."""

    name = "scripted"

    def __init__(self, replies: Sequence[str | Exception], parse: bool = True) -> None:
        self.replies = list(replies)
        self.parse = parse
        self.calls: list[list[Message]] = []

    def chat(self, messages: list[Message], **kw: Any) -> ChatResponse:
        self.calls.append(messages)
        if not self.replies:
            raise LLMError("script exhausted")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        parsed = None
        if self.parse and kw.get("json_schema") is not None:
            try:
                parsed = json.loads(reply)
            except json.JSONDecodeError:
                parsed = None
        return ChatResponse(message=Message(role="assistant", content=reply), parsed=parsed)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def count_message_tokens(self, messages: list[Message], tools: Any = None) -> int:
        return sum(len(m.content.split()) for m in messages)


class MemoryVectorStore:
    """Exact cosine search over numpy arrays (same semantics as the VectorStore protocol)."""

    def __init__(self) -> None:
        self.cols: dict[str, dict[str, tuple[np.ndarray, dict[str, Any]]]] = {}
        self.dims: dict[str, int] = {}

    def create_collection(self, name: str, dim: int, metric: str = "COSINE") -> None:
        self.cols.setdefault(name, {})
        self.dims[name] = dim

    def has_collection(self, name: str) -> bool:
        return name in self.cols

    def drop_collection(self, name: str) -> None:
        self.cols.pop(name, None)

    def _col(self, name: str) -> dict[str, tuple[np.ndarray, dict[str, Any]]]:
        if name not in self.cols:
            raise CollectionNotFound(name)
        return self.cols[name]

    def upsert(self, name: str, ids: Sequence[str], vectors: Any, metadata: Sequence[dict[str, Any]] | None = None) -> int:
        col = self._col(name)
        for i, vid in enumerate(ids):
            v = np.asarray(vectors[i], dtype=np.float32)
            col[vid] = (v / max(float(np.linalg.norm(v)), 1e-12), dict(metadata[i]) if metadata else {})
        return len(ids)

    def search(self, name: str, vectors: Any, top_k: int = 10, filter: Any = None) -> list[list[VectorHit]]:
        col = self._col(name)
        ids = list(col)
        out = []
        for q in np.asarray(vectors, dtype=np.float32).reshape(-1, self.dims[name]):
            if not ids:
                out.append([])
                continue
            sims = np.stack([col[i][0] for i in ids]) @ q
            order = np.argsort(-sims)[:top_k]
            out.append([VectorHit(id=ids[j], score=float(sims[j]), metadata=col[ids[j]][1]) for j in order])
        return out

    def get(self, name: str, ids: Sequence[str]) -> list[VectorRecord]:
        col = self._col(name)
        return [VectorRecord(id=i, vector=col[i][0].tolist(), metadata=col[i][1]) for i in ids if i in col]

    def delete(self, name: str, ids: Sequence[str] | None = None, filter: Any = None) -> int:
        col = self._col(name)
        gone = [i for i in col if (ids is not None and i in ids) or
                (filter and all(col[i][1].get(k) == v for k, v in filter.items()))]
        for i in gone:
            del col[i]
        return len(gone)

    def count(self, name: str, filter: Any = None) -> int:
        return len(self._col(name))

    def flush(self, name: str) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> MemoryVectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        pass
