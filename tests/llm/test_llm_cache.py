"""The SQLite content-hash cache, in front of the real OpenAI-compatible client and a local server."""

from __future__ import annotations

import threading

from eventfold.llm.cache import CachedChatModel
from eventfold.llm.openai_backend import OpenAIChatModel
from eventfold.llm.types import Message, ToolSpec

USER = [Message(role="user", content="Who founded Acme?")]


def make(srv, tmp_path, **kw) -> CachedChatModel:
    inner = OpenAIChatModel(srv.base_url, "fake-model", max_retries=0, timeout_s=5.0)
    return CachedChatModel(inner, tmp_path / "llm.sqlite", **kw)


def test_hit_returns_identical_response_without_a_request(fake_openai, tmp_path):
    call = fake_openai.tool_call("search", '{"query": "Acme"}')
    fake_openai.script = [fake_openai.completion("thinking", tool_calls=[call])]
    tools = [ToolSpec(name="search", description="s", parameters={"type": "object", "properties": {"query": {"type": "string"}}})]
    model = make(fake_openai, tmp_path)
    first = model.chat(USER, tools=tools, temperature=0)
    second = model.chat(USER, tools=tools, temperature=0)
    assert len(fake_openai.requests) == 1
    assert (model.hits, model.misses) == (1, 1)
    assert second.cached and not first.cached
    assert second.model_dump(exclude={"cached"}) == first.model_dump(exclude={"cached"})


def test_cache_survives_reopening(fake_openai, tmp_path):
    fake_openai.script = [fake_openai.completion("Alice")]
    make(fake_openai, tmp_path).chat(USER)
    again = make(fake_openai, tmp_path)
    assert again.chat(USER).text == "Alice" and again.hits == 1
    assert len(fake_openai.requests) == 1


def test_any_change_in_the_request_misses(fake_openai, tmp_path):
    fake_openai.script = [fake_openai.completion(f"r{i}") for i in range(4)]
    model = make(fake_openai, tmp_path)
    model.chat(USER)
    model.chat(USER + [Message(role="user", content="and when?")])
    model.chat(USER, max_tokens=7)
    model.chat(USER, json_schema={"type": "object"})
    assert model.misses == 4 and model.hits == 0 and len(model) == 4


def test_sampling_calls_are_not_cached(fake_openai, tmp_path):
    fake_openai.script = [fake_openai.completion("a"), fake_openai.completion("b")]
    model = make(fake_openai, tmp_path)
    assert [model.chat(USER, temperature=0.7).text for _ in range(2)] == ["a", "b"]
    assert len(model) == 0


def test_default_temperature_decides_when_none_is_given(fake_openai, tmp_path):
    fake_openai.script = [fake_openai.completion("a"), fake_openai.completion("b")]
    model = make(fake_openai, tmp_path, default_temperature=0.5)
    assert [model.chat(USER).text for _ in range(2)] == ["a", "b"]


def test_threads_share_the_cache(fake_openai, tmp_path):
    fake_openai.script = [fake_openai.completion(f"r{i}") for i in range(8)]
    model = make(fake_openai, tmp_path)
    prompts = [[Message(role="user", content=f"q{i % 4}")] for i in range(8)]
    threads = [threading.Thread(target=model.chat, args=(p,)) for p in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert model.hits + model.misses == 8 and len(model) == 4
