"""HFChatModel: a transformers model behind the ChatModel protocol (teacher/student for the real agent)."""

from __future__ import annotations

import pytest
import torch

from eventfold.llm.transformers_backend import HFChatModel, call_opener_ids, hf_message
from eventfold.llm.types import LLMError, Message, ToolSpec
from training.common.loading import load_model_and_tokenizer

SEARCH = ToolSpec(name="search", description="Search.", parameters={"type": "object", "properties": {
    "query": {"type": "string"}}, "required": ["query"]})


def test_generates_and_parses_a_tool_call(tiny_model_dir) -> None:
    from trl.chat_template_utils import add_response_schema

    model, tok = load_model_and_tokenizer(tiny_model_dir)
    opener = call_opener_ids(tok)
    # the template's own start of a call, as training tokenizes an assistant turn (this tiny model's
    # template writes an empty think block first)
    assert tok.decode(opener).endswith('<tool_call>\n{"name": "')
    seen: list[list[int]] = []
    rest = 'search", "arguments": {"query": "storm"}}\n</tool_call><|im_end|>'

    def generate(input_ids=None, attention_mask=None, **kw):
        seen.append(input_ids[0].tolist())
        return torch.cat([input_ids, torch.tensor([tok(rest, add_special_tokens=False).input_ids])], dim=1)

    model.generate = generate
    chat = HFChatModel(add_response_schema(tok), model, name="tiny")
    msgs = [Message(role="system", content="s"), Message(role="user", content="When was the storm?")]
    resp = chat.chat(msgs, tools=[SEARCH], tool_choice="required", temperature=0.0)
    # "required" is kept by decoding: the model continues from the call's opener, which the reply keeps
    assert seen[0][-len(opener):] == opener
    assert resp.tool_calls[0].name == "search" and resp.tool_calls[0].arguments == {"query": "storm"}
    counted = chat.count_message_tokens(msgs, [SEARCH])
    assert resp.finish_reason == "stop" and resp.usage.prompt_tokens == counted + len(opener)
    assert chat.count_message_tokens(msgs, [SEARCH]) > chat.count_message_tokens(msgs)


def test_a_free_turn_is_not_forced_into_a_call(tiny_model_dir) -> None:
    model, tok = load_model_and_tokenizer(tiny_model_dir)
    seen: list[list[int]] = []

    def generate(input_ids=None, attention_mask=None, **kw):
        seen.append(input_ids[0].tolist())
        return torch.cat([input_ids, torch.tensor([tok("Paris<|im_end|>", add_special_tokens=False).input_ids])], dim=1)

    model.generate = generate
    chat = HFChatModel(tok, model, name="tiny")
    msgs = [Message(role="user", content="Capital of France?")]
    resp = chat.chat(msgs, tools=[SEARCH], tool_choice="auto", temperature=0.0)
    assert resp.text == "Paris" and not resp.tool_calls
    assert len(seen[0]) == chat.count_message_tokens(msgs, [SEARCH])  # the prompt alone, nothing forced


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


def test_prefix_reuse_gives_the_same_tokens_and_skips_the_shared_prefix(tiny_model_dir) -> None:
    model, tok = load_model_and_tokenizer(tiny_model_dir)
    model.eval()
    plain = HFChatModel(tok, model, reuse_prefix=False, max_new_tokens=6)
    reuse = HFChatModel(tok, model, reuse_prefix=True, max_new_tokens=6)
    first = [Message(role="system", content="You are a research agent."), Message(role="user", content="When?")]
    second = [*first, Message(role="assistant", content="step one"), Message(role="user", content="And then?")]
    for msgs in (first, second, first):
        a = plain.chat(msgs, temperature=0.0)
        b = reuse.chat(msgs, temperature=0.0)
        assert a.text == b.text and a.usage.prompt_tokens == b.usage.prompt_tokens
        assert a.usage.evaluated_prompt_tokens == a.usage.prompt_tokens  # no reuse: every token evaluated
    assert plain.reused_tokens == 0
    assert b.usage.evaluated_prompt_tokens < b.usage.prompt_tokens  # the third call: `first` again, cached
    assert reuse.reused_tokens >= plain.count_message_tokens(first)  # the second and third calls


def test_transformers_backend_from_settings(tiny_model_dir, tmp_path) -> None:
    from eventfold.llm.factory import make_chat_model
    from eventfold.settings import LLMSettings, Settings

    with pytest.raises(ValueError, match="hf_model_dir"):
        LLMSettings(backend="transformers")
    chat = make_chat_model(Settings(home=tmp_path, llm=LLMSettings(backend="transformers", hf_model_dir=tiny_model_dir,
                                                                   max_tokens=4)), cache=False)
    resp = chat.chat([Message(role="user", content="hello")], temperature=0.0)
    assert resp.usage.completion_tokens <= 4 and chat.count_tokens("hello") > 0
