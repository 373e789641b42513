"""Web search as an evidence source: an httpx client for a configurable JSON search API.

Works with SearxNG (`GET <url>?q=…&format=json` → {"results": [{url, title, content, …}]}), the
Brave Search API (`GET <url>?q=…&count=n` with an `X-Subscription-Token` header → {"web": {"results":
[{url, title, description, …}]}}) and any endpoint answering {"results": [{url, title, snippet|content|
description}]} (flavor "auto" reads all three shapes).

`WebSearchBackend` implements `eventrag.schema.SearchBackend`, so the agent's search and read tools
use web results exactly as they use EventRAG chunks: each result becomes a `RetrievedChunk` whose
`doc_id` is the URL. Result text is untrusted data and is never treated as instructions.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field, SecretStr, field_validator

from eventfold.text_safety import mask_secrets, mask_url
from eventrag.schema import Chunk, RetrievalMode, RetrievalResult, RetrievedChunk


class WebSearchError(RuntimeError):
    """The search API could not be reached or answered with something that is not a result list."""


class WebSearchSettings(BaseModel):
    url: str  # the search endpoint, e.g. http://127.0.0.1:8888/search
    flavor: Literal["auto", "searxng", "brave"] = "auto"
    api_key: SecretStr | None = None
    api_key_header: str = "X-Subscription-Token"
    timeout_s: float = Field(15.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    params: dict[str, str] = Field(default_factory=dict)  # extra query parameters (language, engines…)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"web search url must start with http:// or https:// (got {mask_url(v)!r})")
        return v


class WebResult(BaseModel):
    url: str
    title: str = ""
    snippet: str = ""
    published: str | None = None
    engine: str = ""
    rank: int = 0


def parse_results(payload: Any) -> list[WebResult]:
    """Results from a SearxNG, Brave or generic JSON payload, in the API's order; entries without a
    URL are dropped."""
    if not isinstance(payload, dict):
        raise WebSearchError(f"search API answered {type(payload).__name__}, expected a JSON object")
    rows = payload.get("results")
    if rows is None and isinstance(payload.get("web"), dict):
        rows = payload["web"].get("results")
    if rows is None:
        rows = []
    if not isinstance(rows, list):
        raise WebSearchError("search API 'results' is not a list")
    out: list[WebResult] = []
    for row in rows:
        if not isinstance(row, dict) or not row.get("url"):
            continue
        snippet = row.get("content") or row.get("snippet") or row.get("description") or ""
        out.append(
            WebResult(
                url=str(row["url"]),
                title=str(row.get("title") or ""),
                snippet=" ".join(str(snippet).split()),
                published=row.get("publishedDate")
                or row.get("page_age")
                or row.get("age")
                or row.get("published"),
                engine=str(row.get("engine") or ""),
                rank=len(out) + 1,
            )
        )
    return out


class WebSearchClient:
    def __init__(self, settings: WebSearchSettings, client: httpx.Client | None = None) -> None:
        self.settings = settings
        self._client = client or httpx.Client(timeout=settings.timeout_s, follow_redirects=True)

    def _params(self, query: str, top_k: int) -> dict[str, str]:
        params = {"q": query}
        if self.settings.flavor in ("auto", "searxng"):
            params["format"] = "json"
        if self.settings.flavor in ("auto", "brave"):
            params["count"] = str(top_k)
        return {**params, **self.settings.params}

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.settings.api_key is not None:
            headers[self.settings.api_key_header] = self.settings.api_key.get_secret_value()
        return headers

    def search(self, query: str, top_k: int = 5) -> list[WebResult]:
        if not query.strip():
            raise ValueError("web search query is empty")
        last: Exception | None = None
        for attempt in range(self.settings.max_retries + 1):
            try:
                resp = self._client.get(
                    self.settings.url, params=self._params(query, top_k), headers=self._headers()
                )
                if resp.status_code in (429, 500, 502, 503, 504):
                    raise httpx.HTTPStatusError(
                        f"status {resp.status_code}", request=resp.request, response=resp
                    )
                resp.raise_for_status()
                try:
                    payload = resp.json()
                except ValueError as exc:
                    raise WebSearchError(f"search API at {mask_url(self.settings.url)} did not answer JSON") from exc
                return parse_results(payload)[:top_k]
            except httpx.HTTPStatusError as exc:
                last = exc
                if exc.response.status_code not in (429, 500, 502, 503, 504):
                    break
            except httpx.TransportError as exc:
                last = exc
            if attempt < self.settings.max_retries:
                time.sleep(min(2.0, 0.2 * 2**attempt))
        raise WebSearchError(mask_secrets(f"web search failed at {self.settings.url}: {last}")) from last

    def close(self) -> None:
        self._client.close()


def _chunk_id(url: str) -> str:
    return "web:" + hashlib.sha1(url.encode()).hexdigest()[:16]


class WebSearchBackend:
    """`SearchBackend` over web search; results are remembered so `read` can open them by id."""

    def __init__(self, client: WebSearchClient) -> None:
        self.client = client
        self._chunks: dict[str, Chunk] = {}
        self._lock = threading.Lock()

    def retrieve(self, query: str, *, mode: RetrievalMode | None = None, top_k: int = 5) -> RetrievalResult:
        t0 = time.perf_counter()
        results = self.client.search(query, top_k=top_k)
        chunks: list[RetrievedChunk] = []
        for r in results:
            cid = _chunk_id(r.url)
            text = r.snippet if not r.published else f"{r.snippet} (published {r.published})"
            with self._lock:
                self._chunks[cid] = Chunk(chunk_id=cid, doc_id=r.url, title=r.title, text=text)
            chunks.append(
                RetrievedChunk(
                    chunk_id=cid,
                    doc_id=r.url,
                    title=r.title,
                    text=text,
                    score=1.0 / r.rank,
                    path=[f"web:{r.engine or 'search'}", f"rank:{r.rank}"],
                )
            )
        return RetrievalResult(
            query=query, mode=mode or "naive", chunks=chunks, elapsed_s=round(time.perf_counter() - t0, 3)
        )

    def get_chunk(self, chunk_id: str) -> Chunk | None:
        with self._lock:
            return self._chunks.get(chunk_id)

    def get_document_chunks(self, doc_id: str) -> list[Chunk]:
        with self._lock:
            return [c for c in self._chunks.values() if c.doc_id == doc_id]
