"""HFChatModel: a transformers model behind the ChatModel protocol (teacher/student for the real agent)."""

from __future__ import annotations

import pytest
import torch

from eventfold.llm.types import LLMError, Message, ToolSpec
from training.common.loading import load_model_and_tokenizer
from training.hf_chat import HFChatModel, hf_message

SEARCH = ToolSpec(name="search", description="Search.", parameters={"type": "object", "properties": {
    "query": {"type": "string"}}, "required": ["query"]})


def test_generates_and_parses_a_tool_call(tiny_model_dir) -> None:
    from trl.chat_template_utils import add_response_schema

    model, tok = load_model_and_tokenizer(tiny_model_dir)
    reply = '<tool_call>\n{"name": "search", "arguments": {"query": "storm"}}\n</tool_call><|im_end|>'

    def generate(input_ids=None, attention_mask=None, **kw):
        return torch.cat([input_ids, torch.tensor([tok(reply, add_special_tokens=False).input_ids])], dim=1)

    model.generate = generate
    chat = HFChatModel(add_response_schema(tok), model, name="tiny")
    msgs = [Message(role="system", content="s"), Message(role="user", content="When was the storm?")]
    resp = chat.chat(msgs, tools=[SEARCH], tool_choice="required", temperature=0.0)
    assert resp.tool_calls[0].name == "search" and resp.tool_calls[0].arguments == {"query": "storm"}
    assert resp.finish_reason == "stop" and resp.usage.prompt_tokens == chat.count_message_tokens(msgs, [SEARCH])
    assert chat.count_message_tokens(msgs, [SEARCH]) > chat.count_message_tokens(msgs)


def test_tokenizer_only_counts_but_cannot_generate(tiny_model_dir) -> None:
    _, tok = load_model_and_tokenizer(tiny_model_dir)
    chat = HFChatModel(tok)
    assert chat.count_tokens("hello world") > 0
    with pytest.raises(LLMError, match="tokenizer-only"):
        chat.chat([Message(role="user", content="x")])


def test_message_conversion_keeps_arguments_json_for_datasets() -> None:
    from eventfold.llm.types import ToolCall

    m = Message(role="assistant", content="", tool_calls=[ToolCall(id="1", name="fold", arguments={"start_step": 1})])
    assert hf_message(m)["tool_calls"][0]["function"]["arguments"] == {"start_step": 1}
    assert hf_message(m, arguments_as_json=True)["tool_calls"][0]["function"]["arguments"] == '{"start_step": 1}'
    assert hf_message(Message(role="tool", content="r", name="search"))["name"] == "search"
