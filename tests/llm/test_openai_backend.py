"""The OpenAI-compatible backend against a real local HTTP server speaking the wire format."""

from __future__ import annotations

import threading
import time

import pytest

from eventfold.llm.openai_backend import OpenAIChatModel
from eventfold.llm.types import LLMError, Message, ToolSpec

SEARCH = ToolSpec(
    name="search",
    description="Search the corpus.",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
ANSWER = ToolSpec(
    name="answer",
    description="Give the final answer.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)
USER = [Message(role="user", content="Who founded Acme?")]


def client(srv, **kw) -> OpenAIChatModel:
    kw.setdefault("max_retries", 3)
    kw.setdefault("backoff_base_s", 0.01)
    kw.setdefault("timeout_s", 5.0)
    return OpenAIChatModel(srv.base_url, "fake-model", **kw)


def test_plain_text_and_usage(fake_openai):
    fake_openai.script = [fake_openai.completion("Alice founded it.", usage={"prompt_tokens": 21, "completion_tokens": 4})]
    resp = client(fake_openai).chat(USER, max_tokens=32)
    assert resp.text == "Alice founded it."
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (21, 4)
    sent = fake_openai.requests[0]
    assert sent["_path"] == "/v1/chat/completions"
    assert sent["messages"] == [{"role": "user", "content": "Who founded Acme?"}]
    assert sent["max_tokens"] == 32 and sent["temperature"] == 0.0
    assert "tools" not in sent


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retries_transient_errors_then_succeeds(fake_openai, status):
    fake_openai.script = [fake_openai.error(status), fake_openai.error(status), fake_openai.completion("fine")]
    resp = client(fake_openai).chat(USER)
    assert resp.text == "fine"
    assert len(fake_openai.requests) == 3


def test_gives_up_after_max_retries(fake_openai):
    fake_openai.script = [fake_openai.error(500)] * 5
    with pytest.raises(LLMError, match="InternalServerError"):
        client(fake_openai, max_retries=2).chat(USER)
    assert len(fake_openai.requests) == 3


def test_client_errors_are_not_retried(fake_openai):
    fake_openai.script = [fake_openai.error(401, "bad key"), fake_openai.completion("never")]
    with pytest.raises(LLMError, match="AuthenticationError"):
        client(fake_openai).chat(USER)
    assert len(fake_openai.requests) == 1


def test_timeout_raises_llm_error_after_retries(fake_openai):
    fake_openai.delay_s = 1.0
    fake_openai.script = [fake_openai.completion("late")] * 3
    started = time.perf_counter()
    with pytest.raises(LLMError, match="Timeout"):
        client(fake_openai, timeout_s=0.2, max_retries=1).chat(USER)
    assert time.perf_counter() - started < 3.0
    time.sleep(0.9)  # let the server finish its sleeping handlers
    assert len(fake_openai.requests) == 2


def test_native_tool_calls_are_parsed(fake_openai):
    fake_openai.script = [
        fake_openai.completion(None, tool_calls=[fake_openai.tool_call("search", '{"query": "Acme founder"}', "call_9")])
    ]
    resp = client(fake_openai).chat(USER, tools=[SEARCH, ANSWER], tool_choice="required")
    [call] = resp.tool_calls
    assert (call.id, call.name, call.arguments, call.error) == ("call_9", "search", {"query": "Acme founder"}, None)
    assert resp.text == ""
    sent = fake_openai.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == ["search", "answer"]
    assert sent["tool_choice"] == "required"


def test_tool_call_json_is_repaired_once(fake_openai):
    fenced = '```json\n{"query": "Acme founder",}\n```'
    fake_openai.script = [fake_openai.completion(None, tool_calls=[fake_openai.tool_call("search", fenced)])]
    [call] = client(fake_openai).chat(USER, tools=[SEARCH]).tool_calls
    assert call.arguments == {"query": "Acme founder"} and call.error is None


def test_malformed_tool_call_json_becomes_a_tool_error(fake_openai):
    fake_openai.script = [fake_openai.completion(None, tool_calls=[fake_openai.tool_call("search", "query = Acme")])]
    [call] = client(fake_openai).chat(USER, tools=[SEARCH]).tool_calls
    assert call.name == "search" and call.arguments == {}
    assert call.error and "not valid JSON" in call.error


def test_unknown_tool_becomes_a_tool_error(fake_openai):
    fake_openai.script = [fake_openai.completion(None, tool_calls=[fake_openai.tool_call("browse", '{"url": "x"}')])]
    [call] = client(fake_openai).chat(USER, tools=[SEARCH, ANSWER]).tool_calls
    assert call.error and "unknown tool 'browse'" in call.error and "answer, search" in call.error


def test_tool_messages_round_trip_on_the_wire(fake_openai):
    fake_openai.script = [fake_openai.completion("Alice.")]
    first = fake_openai.tool_call("search", '{"query": "q"}', "call_1")
    history = USER + [
        Message(role="assistant", tool_calls=[{"id": "call_1", "name": "search", "arguments": {"query": "q"}}]),
        Message(role="tool", tool_call_id="call_1", name="search", content="Alice founded Acme in 1999."),
    ]
    client(fake_openai).chat(history, tools=[SEARCH])
    sent = fake_openai.requests[0]["messages"]
    assert sent[1]["tool_calls"][0]["function"] == first["function"]
    assert sent[2] == {"role": "tool", "content": "Alice founded Acme in 1999.", "tool_call_id": "call_1", "name": "search"}


SCHEMA = {"type": "object", "properties": {"year": {"type": "integer"}}, "required": ["year"]}


def test_structured_output_uses_json_schema(fake_openai):
    fake_openai.script = [fake_openai.completion('{"year": 1999}')]
    resp = client(fake_openai).chat(USER, json_schema=SCHEMA)
    assert resp.parsed == {"year": 1999}
    rf = fake_openai.requests[0]["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["schema"] == SCHEMA


def test_structured_output_falls_back_when_rejected(fake_openai):
    fake_openai.script = [
        fake_openai.error(400, "response_format json_schema is not supported"),
        fake_openai.completion('```json\n{"year": 1999}\n```'),
        fake_openai.completion('{"year": 2001}'),
    ]
    model = client(fake_openai)
    assert model.chat(USER, json_schema=SCHEMA).parsed == {"year": 1999}
    second = fake_openai.requests[1]
    assert second["response_format"] == {"type": "json_object", "schema": SCHEMA}  # llama.cpp's server constrains to it
    assert '"year"' in second["messages"][0]["content"] and second["messages"][0]["role"] == "system"
    # the downgrade is remembered: no second rejected request
    assert model.chat(USER, json_schema=SCHEMA).parsed == {"year": 2001}
    assert fake_openai.requests[2]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert len(fake_openai.requests) == 3


def test_llama_cpp_server_format_error_downgrades_without_retries(fake_openai):
    """llama_cpp.server answers `json_schema` with a 500 validation error: a format rejection, not a
    server fault — downgraded at once (no retries, no failed call); a plain 500 is still retried."""
    body = ("1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}")
    fake_openai.script = [fake_openai.error(500, body), fake_openai.completion('{"year": 1999}')]
    model = client(fake_openai)
    assert model.chat(USER, json_schema=SCHEMA).parsed == {"year": 1999}
    assert [r["response_format"]["type"] for r in fake_openai.requests] == ["json_schema", "json_object"]
    fake_openai.script = [fake_openai.error(500, "internal error"), fake_openai.completion('{"year": 2001}')]
    assert model.chat(USER, json_schema=SCHEMA).parsed == {"year": 2001}
    assert len(fake_openai.requests) == 4  # retried once, same format
    assert fake_openai.requests[3]["response_format"] == {"type": "json_object", "schema": SCHEMA}


def test_other_bad_requests_do_not_downgrade_structured_output(fake_openai):
    fake_openai.script = [fake_openai.error(400, "This model's maximum context length is 4096 tokens"),
                          fake_openai.completion('{"year": 1999}')]
    model = client(fake_openai)
    with pytest.raises(LLMError, match="maximum context length"):
        model.chat(USER, json_schema=SCHEMA)
    assert model.chat(USER, json_schema=SCHEMA).parsed == {"year": 1999}
    assert fake_openai.requests[1]["response_format"]["type"] == "json_schema"


def test_missing_usage_is_counted_locally(fake_openai):
    fake_openai.script = [fake_openai.completion("Alice founded it.", usage=False)]
    resp = client(fake_openai).chat(USER)
    assert resp.usage.prompt_tokens > 0 and resp.usage.completion_tokens > 0


def test_concurrency_limit_is_respected(fake_openai):
    fake_openai.delay_s = 0.15
    fake_openai.script = [fake_openai.completion(f"r{i}") for i in range(6)]
    model = client(fake_openai, concurrency=2)
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(model.chat(USER).text)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(results) == 6
    assert fake_openai.max_in_flight == 2
