"""Web search tool against a local HTTP server fixture (SearxNG- and Brave-shaped JSON)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from agent.tools.web_search import (
    WebSearchBackend,
    WebSearchClient,
    WebSearchError,
    WebSearchSettings,
    parse_results,
)
from eventrag.schema import SearchBackend

SEARX = {
    "query": "tram",
    "results": [
        {
            "url": "https://a.example/tram",
            "title": "Tram approved",
            "content": "The council  approved\nthe tram.",
            "engine": "duckduckgo",
            "publishedDate": "2023-10-05",
        },
        {"title": "no url, dropped", "content": "x"},
        {
            "url": "https://b.example/cost",
            "title": "Tram cost",
            "content": "It costs 310 million dollars.",
            "engine": "bing",
        },
    ],
}
BRAVE = {
    "type": "search",
    "web": {
        "results": [
            {
                "url": "https://c.example/x",
                "title": "Brave hit",
                "description": "From Brave.",
                "age": "2 days ago",
            }
        ]
    },
}


class _Handler(BaseHTTPRequestHandler):
    hits: list[dict] = []
    flaky = {"left": 0}

    def log_message(self, *args):  # keep test output quiet
        pass

    def do_GET(self):
        url = urlparse(self.path)
        params = {k: v[0] for k, v in parse_qs(url.query).items()}
        _Handler.hits.append(
            {"path": url.path, "params": params, "token": self.headers.get("X-Subscription-Token")}
        )
        if url.path == "/flaky" and _Handler.flaky["left"] > 0:
            _Handler.flaky["left"] -= 1
            self.send_response(503)
            self.end_headers()
            return
        if url.path == "/html":
            body, ctype = b"<html>not json</html>", "text/html"
        elif url.path == "/missing":
            self.send_response(404)
            self.end_headers()
            return
        else:
            body, ctype = json.dumps(BRAVE if url.path == "/brave" else SEARX).encode(), "application/json"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _client(url: str, **kw) -> WebSearchClient:
    return WebSearchClient(WebSearchSettings(url=url, **{"timeout_s": 5, **kw}))


def test_searxng_results_and_params(server):
    _Handler.hits.clear()
    results = _client(f"{server}/search", flavor="searxng", params={"language": "en"}).search("tram", top_k=5)
    assert [r.url for r in results] == ["https://a.example/tram", "https://b.example/cost"]
    assert results[0].snippet == "The council approved the tram." and results[0].published == "2023-10-05"
    assert _Handler.hits[-1]["params"] == {"q": "tram", "format": "json", "language": "en"}


def test_brave_shape_and_api_key_header(server):
    _Handler.hits.clear()
    client = _client(f"{server}/brave", flavor="brave", api_key="sekrit")
    results = client.search("x", top_k=3)
    assert [(r.title, r.snippet) for r in results] == [("Brave hit", "From Brave.")]
    assert _Handler.hits[-1]["token"] == "sekrit" and _Handler.hits[-1]["params"] == {"q": "x", "count": "3"}
    assert "sekrit" not in repr(client.settings)  # the key stays masked


def test_retries_on_503_then_succeeds(server):
    _Handler.flaky["left"] = 1
    results = _client(f"{server}/flaky", max_retries=2).search("tram")
    assert len(results) == 2 and _Handler.flaky["left"] == 0


def test_clear_errors(server):
    with pytest.raises(WebSearchError, match="JSON"):
        _client(f"{server}/html").search("tram")
    with pytest.raises(WebSearchError, match="404"):
        _client(f"{server}/missing", max_retries=3).search("tram")
    with pytest.raises(WebSearchError):
        _client("http://127.0.0.1:9/search", max_retries=0, timeout_s=1).search(
            "tram"
        )  # nothing listens on port 9
    with pytest.raises(ValueError):
        _client(f"{server}/search").search("   ")
    with pytest.raises(ValueError):
        WebSearchSettings(url="ftp://x")
    with pytest.raises(WebSearchError):
        parse_results({"results": "nope"})


def test_backend_gives_agent_evidence_and_reads_back(server):
    backend = WebSearchBackend(_client(f"{server}/search"))
    assert isinstance(backend, SearchBackend)
    res = backend.retrieve("tram", top_k=2)
    assert [c.doc_id for c in res.chunks] == ["https://a.example/tram", "https://b.example/cost"]
    first = res.chunks[0]
    assert first.chunk_id.startswith("web:") and first.score == 1.0 and first.path[0] == "web:duckduckgo"
    assert "published 2023-10-05" in first.text
    assert backend.get_chunk(first.chunk_id).text == first.text
    assert [c.chunk_id for c in backend.get_document_chunks("https://b.example/cost")] == [
        res.chunks[1].chunk_id
    ]
    assert backend.get_chunk("web:unknown") is None
