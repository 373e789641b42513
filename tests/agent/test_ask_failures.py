"""`ask` fails loudly: an unknown --model, an index never built, a model server that refuses the key
(401) or cannot be reached, each exit non-zero with the reason, never an "Insufficient information"
report; no secret in the output. Real CLI, real stores, a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app import app

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_corpus"
KEY = "sk-test-abcdefghijklmnop0123"
QUESTION = "Who led the repairs of the pumping station?"


def out(result) -> str:  # type: ignore[no-untyped-def]
    return " ".join(result.output.split())  # rich wraps long lines


class _Refuses(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that refuses every key."""

    def _deny(self) -> None:
        body = json.dumps({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                     "code": "invalid_api_key"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _deny  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuses)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()



def _openai(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("EVENTFOLD_LLM__BACKEND", "openai")
    monkeypatch.setenv("EVENTFOLD_LLM__BASE_URL", url)
    monkeypatch.setenv("EVENTFOLD_LLM__API_KEY", KEY)
    monkeypatch.setenv("EVENTFOLD_LLM__MAX_RETRIES", "1")
    monkeypatch.setenv("EVENTFOLD_LLM__CACHE", "false")


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unknown_model_on_the_local_backend_names_the_packaged_ones(env: Path) -> None:
    result = CliRunner().invoke(app, ["ask", QUESTION, "--model", "no-such-model"])
    assert result.exit_code == 2, result.output  # was: the default 1.5B loaded in silence
    text = out(result)
    assert "unknown --model" in text and "no-such-model" in text
    assert "qwen2.5-coder-1.5b" in text and "qwen2.5-coder-0.5b" in text


def test_model_names_resolve_to_their_settings(tmp_path: Path) -> None:
    from eventfold.models import ModelNotFoundError, llm_overrides_for

    trained = tmp_path / "student"
    trained.mkdir()
    (trained / "config.json").write_text("{}")
    assert llm_overrides_for("qwen2.5-coder-0.5b", "local") == {"packaged_model": "qwen2.5-coder-0.5b"}
    assert llm_overrides_for("x.gguf", "local") == {"model_path": Path("x.gguf")}
    assert llm_overrides_for(str(trained), "local") == {"backend": "transformers", "hf_model_dir": trained}
    assert llm_overrides_for("gpt-4o-mini", "openai") == {"model": "gpt-4o-mini"}
    with pytest.raises(ModelNotFoundError, match="has no config.json"):
        llm_overrides_for(str(tmp_path), "local")


def test_ask_on_an_index_never_built_exits_1(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _openai(monkeypatch, f"http://127.0.0.1:{_dead_port()}/v1")  # nothing may be asked of it
    result = CliRunner().invoke(app, ["ask", QUESTION, "--index", "never-built"])
    assert result.exit_code == 1, result.output  # was: exit 0, an "Insufficient information" report
    assert "index 'never-built' is empty" in out(result) and "eventfold index" in out(result)


@pytest.fixture
def built(env: Path) -> str:
    res = CliRunner().invoke(app, ["index", str(TINY), "--extract", "rules", "--index", "tiny"])
    assert res.exit_code == 0, res.output
    return "tiny"


def test_ask_with_a_server_refusing_the_key_exits_2_with_the_reason(
        built: str, refusing_server: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _openai(monkeypatch, f"http://alice:pa55word-secret@127.0.0.1:{refusing_server}/v1")
    result = CliRunner().invoke(app, ["ask", QUESTION, "--index", built])
    assert result.exit_code == 2, result.output  # was: exit 0 and a report
    text = out(result)
    assert "the model did not answer" in text and "401" in text and "AuthenticationError" in text
    assert "report" not in text.split("the model did not answer")[0].lower().replace("no report", "")
    assert KEY not in result.output and "pa55word-secret" not in result.output


def test_ask_with_the_server_unreachable_exits_2(built: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _openai(monkeypatch, f"http://127.0.0.1:{_dead_port()}/v1")
    result = CliRunner().invoke(app, ["ask", QUESTION, "--index", built])
    assert result.exit_code == 2, result.output
    assert "the model did not answer" in out(result) and "APIConnectionError" in out(result)


def test_a_model_that_fails_mid_run_is_reported_after_its_partial_report(tmp_path: Path) -> None:
    """Answered, then the server went away: the run stops as failed (no answer is made up for it), its
    report keeps the evidence found, and the result says the model failed (the CLI exits 1 after it)."""
    from agent.graph import AgentDeps
    from agent.runner import run_agent
    from eventfold.llm.types import LLMConnectionError
    from eventfold.run_options import RunOptions
    from tests.agent.agent_doubles import MemoryBackend, ScriptedChatModel

    def gone(messages):  # type: ignore[no-untyped-def]
        raise LLMConnectionError("chat completion failed at http://127.0.0.1:1/v1: APIConnectionError")

    model = ScriptedChatModel([("search", {"query": "Curie"}), gone], text_replies=["Warsaw"])
    backend = MemoryBackend({"d1": ("Curie", "Marie Curie was born in Warsaw.")})
    result = run_agent("Where was Marie Curie born?", AgentDeps(model=model, backend=backend),
                       RunOptions(context_budget=4000))
    assert result.run.status == "failed" and result.run.answer is None
    assert result.llm_error is not None and "APIConnectionError" in result.llm_error
