"""A real HTTP server speaking the OpenAI chat-completions / embeddings wire format, with scripted replies;
the llama-cpp-python module for the local-backend tests."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType
from typing import Any

import pytest

# a completion body (sent with 200), a (status, body) pair, or a function of the request body
Reply = dict[str, Any] | tuple[int, dict[str, Any]] | Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


def completion(content: str | None = "ok", tool_calls: list[dict[str, Any]] | None = None,
               usage: dict[str, int] | None = None, model: str = "fake-model") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
    }
    if usage is not False:
        body["usage"] = usage or {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    return body


def tool_call(name: str, arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def error(status: int, message: str = "boom") -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "server_error", "code": status}}


@dataclass
class FakeOpenAIServer:
    base_url: str = ""
    script: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    delay_s: float = 0.0
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # reply builders, so tests need not import this conftest
    completion = staticmethod(completion)
    tool_call = staticmethod(tool_call)
    error = staticmethod(error)

    def next_reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(body)
            reply = self.script.pop(0) if self.script else error(500, "script exhausted")
        if callable(reply):
            return reply(body)
        return reply if isinstance(reply, tuple) else (200, reply)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    state = FakeOpenAIServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            body["_path"] = self.path
            with state.lock:
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            try:
                if state.delay_s:
                    time.sleep(state.delay_s)
                status, payload = state.next_reply(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and hung up
            finally:
                with state.lock:
                    state.in_flight -= 1

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def llama_cpp() -> ModuleType:
    """llama-cpp-python (the `local` extra): a test needing it fails in CI without it, is skipped elsewhere."""
    try:
        import llama_cpp
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("llama-cpp-python is missing in CI (install the `local` extra)")
        pytest.skip("needs the `local` extra (llama-cpp-python)")
    return llama_cpp
