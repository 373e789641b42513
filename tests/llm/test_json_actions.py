"""JSON repair of model output, the JSON-action schema, and the local backend's model-free helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventfold.llm.actions import action_schema, parse_action, render_action
from eventfold.llm.json_repair import JSONRepairError, parse_json_lenient, parse_json_object
from eventfold.llm.types import ToolSpec


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Sure! Here it is: {"a": [1, 2,], } Hope it helps.', {"a": [1, 2]}),
        ('{"a": True, "b": None, "c": "True"}', {"a": True, "b": None, "c": "True"}),
        ('{"a": {"b": "unfinished', {"a": {"b": "unfinished"}}),
    ],
)
def test_repairs(text, expected):
    assert parse_json_lenient(text) == expected


@pytest.mark.parametrize("text", ["", "no json here", "{'a': 1}", "[1, 2]"])
def test_unrepairable_or_not_an_object(text):
    with pytest.raises(JSONRepairError):
        parse_json_object(text)


TOOLS = [
    ToolSpec(name="search", description="s", parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
    ToolSpec(name="answer", description="a", parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
]


def test_action_schema_ties_arguments_to_each_tool():
    schema = action_schema(TOOLS, think=True)
    first, second = schema["anyOf"]
    assert list(first["properties"]) == ["thought", "tool", "arguments"]
    assert first["properties"]["tool"] == {"const": "search"}
    assert second["properties"]["arguments"]["required"] == ["text"]
    assert "anyOf" not in action_schema(TOOLS[:1])


def test_parse_action_and_render_round_trip():
    call, thought = parse_action('{"thought": "look it up", "tool": "search", "arguments": {"query": "Acme"}}', TOOLS)
    assert (call.name, call.arguments, call.error, thought) == ("search", {"query": "Acme"}, None, "look it up")
    again, _ = parse_action(render_action(call), TOOLS)
    assert (again.name, again.arguments) == (call.name, call.arguments)


@pytest.mark.parametrize(
    ("text", "needle"),
    [('{"tool": "browse", "arguments": {}}', "unknown tool"), ("nonsense", "not valid JSON"),
     ('{"tool": "search", "arguments": "Acme"}', "JSON object")],
)
def test_parse_action_reports_problems_as_tool_errors(text, needle):
    call, _ = parse_action(text, TOOLS)
    assert call.error and needle in call.error


def test_local_rendering_of_a_trajectory():
    from eventfold.llm.local_backend import render_for_template
    from eventfold.llm.types import Message, ToolCall

    call = ToolCall(id="c1", name="search", arguments={"query": "Acme"})
    history = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="Who founded Acme?"),
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", name="search", content="Maria Keller founded Acme."),
    ]
    wire = render_for_template(history, TOOLS, None, {"c1": '{"tool":"search","arguments":{"query":"Acme"}}'})
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "user"]
    assert wire[0]["content"].startswith("Be brief.") and "- search(query): s" in wire[0]["content"]
    assert wire[2]["content"] == '{"tool":"search","arguments":{"query":"Acme"}}'  # the raw text, for KV reuse
    assert "Result of tool search" in wire[3]["content"] and "Maria Keller" in wire[3]["content"]
    again = render_for_template(history[1:3], None, {"type": "object"})
    assert again[0]["role"] == "system" and "JSON schema" in again[0]["content"]
    assert again[2]["content"] == render_action(call)


@pytest.mark.parametrize(("idle", "expected"), [(0.0, 1), (0.4, 1), (0.6, 1), (1.6, 2), (2.0, 2), (9.0, 2)])
def test_auto_threads_uses_the_idle_cores(monkeypatch, idle, expected):
    from eventfold.llm import local_backend

    monkeypatch.setattr(local_backend.os, "sched_getaffinity", lambda _pid: {0, 1})
    monkeypatch.setattr(local_backend, "_idle_cores", lambda cpus, sample_s: idle)
    assert local_backend.auto_threads() == expected


def test_idle_cores_reads_proc_stat():
    from eventfold.llm.local_backend import _idle_cores

    idle = _idle_cores(2, 0.05)
    if not Path("/proc/stat").exists():
        pytest.skip("no /proc/stat (not Linux)")
    assert idle is not None and 0.0 <= idle <= 2.0


def test_tool_list_is_fixed_and_the_grammar_carries_the_current_choices():
    from eventfold.llm.prompts import tools_instruction

    params = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    open_now = ToolSpec(name="read", description="Show a chunk.", parameters=params,
                        grammar_parameters={**params, "properties": {"id": {"enum": ["a#1", "b#2"]}}})
    none_now = ToolSpec(name="unfold", description="Show a fold.", parameters=params, available=False)
    later = open_now.model_copy(update={"grammar_parameters": {**params, "properties": {"id": {"enum": ["c#3"]}}}})
    assert tools_instruction([open_now, none_now]) == tools_instruction([later, none_now])
    assert tools_instruction([open_now, none_now]).splitlines()[1] == "- read(id): Show a chunk."
    schema = action_schema([open_now, none_now])
    assert schema["properties"]["tool"] == {"const": "read"}  # an unavailable tool is not admitted
    assert schema["properties"]["arguments"]["properties"]["id"] == {"enum": ["a#1", "b#2"]}
