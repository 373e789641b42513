"""The systems the harness compares, behind one small protocol.

- `RetrieveAndRead`: an EventRAG retrieval mode (naive, graph, event, agentic) returns ranked chunks;
  a reader (`agent.reader.read_answer`, the chat model) answers from the first `read_k` of them.
- `AgentSystem`: the research agent answers; its evidence is the chunks it cited, then the other
  chunks it retrieved, in order; its decision trace says at each turn whether the evidence held a gold
  answer.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from pydantic import BaseModel, Field

from agent.focus import backend_embed
from agent.reader import read_answer
from eval.agent_call import AgentCaller, field
from eval.decisions.trace import mark_gold
from eval.multihop.schema import QAExample
from eventfold.llm.types import ChatModel
from eventrag.schema import RetrievalMode, RetrievedChunk, SearchBackend


class Prediction(BaseModel):
    answer: str | None = None  # None: this system did not answer (retrieval-only run)
    retrieved: list[RetrievedChunk] = Field(default_factory=list)
    stats: dict[str, Any] = Field(default_factory=dict)


class QASystem(Protocol):
    name: str  # the run's name in tables and plots, e.g. "naive", "agent-nofold"

    def predict(self, example: QAExample) -> Prediction: ...


class RetrieveAndRead:
    def __init__(
        self,
        backend: SearchBackend,
        mode: RetrievalMode,
        chat_model: ChatModel | None,
        *,
        top_k: int = 10,
        read_k: int = 10,
        answer_max_tokens: int = 64,
    ) -> None:
        self.backend = backend
        self.mode: RetrievalMode = mode
        self.chat_model = chat_model
        self.top_k = top_k
        self.read_k = read_k
        self.answer_max_tokens = answer_max_tokens
        self.embed = backend_embed(backend)  # the reader ranks sentences with the retriever's embedder
        self.name = mode

    def predict(self, example: QAExample) -> Prediction:
        t0 = time.perf_counter()
        result = self.backend.retrieve(example.question, mode=self.mode, top_k=self.top_k)
        stats: dict[str, Any] = {
            "retrieval_s": round(time.perf_counter() - t0, 3),
            "rounds": result.rounds,
            "retrieval_llm_calls": result.llm_calls,
        }
        answer = None
        t1 = time.perf_counter()
        if self.chat_model is not None:
            answer, usage = read_answer(
                self.chat_model, example.question, result.chunks[: self.read_k], self.answer_max_tokens, self.embed
            )
            stats.update(usage)
            stats["llm_calls"] = 1
        stats["wall_s"] = round(time.perf_counter() - t0, 3)
        stats["reader_s"] = round(time.perf_counter() - t1, 3)
        return Prediction(answer=answer, retrieved=result.chunks, stats=stats)


class AgentSystem:
    """The research agent answers; its evidence is what it cited, then what else it retrieved."""

    def __init__(self, caller: AgentCaller) -> None:
        self.caller = caller
        self.name = caller.name

    def predict(self, example: QAExample) -> Prediction:
        """The agent's answer and evidence; its decision trace marks where the evidence first held a
        gold answer (`eval.decisions.trace.mark_gold`)."""
        out = self.caller(example.question)
        retrieved = evidence_chunks(out.raw, self.caller.backend)
        if isinstance(out.stats.get("trace"), list):
            mark_gold(out.stats["trace"], {c.chunk_id: c.text for c in retrieved}, example.answers)
        return Prediction(answer=out.answer, retrieved=retrieved, stats=out.stats)


def _chunk_id(item: Any) -> str | None:
    if isinstance(item, str):
        return item
    value = field(item, "chunk_id")
    return str(value) if value else None


def evidence_chunks(result: Any, backend: SearchBackend) -> list[RetrievedChunk]:
    """Cited chunks first, then every other chunk the agent retrieved, deduplicated, as RetrievedChunks
    (ids the result does not carry as chunks are looked up in the backend)."""
    gathered: list[Any] = [*(field(result, "retrieved") or []), *(field(result, "evidence") or [])]
    known = {c.chunk_id: c for c in gathered if isinstance(c, RetrievedChunk)}
    out: list[RetrievedChunk] = []
    seen: set[str] = set()
    for item in [*(field(result, "citations") or []), *gathered]:
        cid = _chunk_id(item)
        if not cid or cid in seen:
            continue
        seen.add(cid)
        if cid in known:
            out.append(known[cid])
            continue
        chunk = backend.get_chunk(cid)
        if chunk is not None:
            out.append(
                RetrievedChunk(
                    chunk_id=chunk.chunk_id,
                    doc_id=chunk.doc_id,
                    title=chunk.title,
                    text=chunk.text,
                    score=0.0,
                )
            )
    return out
