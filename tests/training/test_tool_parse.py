"""RL rollouts read tool calls as the agent does at inference: a call written as plain JSON (what the
packaged 0.5B student writes) is executed in RL too, through TRL's own `parse_response` path."""

from __future__ import annotations

from pathlib import Path

from transformers import AutoTokenizer
from trl.chat_template_utils import add_response_schema, parse_response

from training.rl.tool_parse import with_text_call_repair

NAMES = ["search", "read", "fold", "unfold", "answer"]


def tokenizer(tiny_model_dir: Path):
    return add_response_schema(AutoTokenizer.from_pretrained(str(tiny_model_dir), local_files_only=True))


def ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def parse(tok, text: str) -> dict:
    """TRL's rollout parse of a completion `text`, with the rendered prompt before it (as GRPO calls it)."""
    prompt = tok.apply_chat_template([{"role": "user", "content": "q"}], tokenize=False, add_generation_prompt=True)
    return parse_response(tok, ids(tok, text), prefix=ids(tok, prompt))


def test_plain_json_call_becomes_a_tool_call(tiny_model_dir: Path) -> None:
    tok = tokenizer(tiny_model_dir)
    text = '{"name": "search", "arguments": {"query": "Heinkel HD 23 first flight"}}' + tok.eos_token
    assert not parse(tok, text).get("tool_calls")  # TRL alone runs nothing
    with_text_call_repair(tok, NAMES)
    parsed = parse(tok, text)
    assert parsed["tool_calls"] == [
        {"type": "function", "function": {"name": "search", "arguments": {"query": "Heinkel HD 23 first flight"}}}
    ]
    assert parsed["content"] == ""


def test_native_calls_plain_text_and_unknown_tools_are_left_alone(tiny_model_dir: Path) -> None:
    tok = with_text_call_repair(tokenizer(tiny_model_dir), NAMES)
    native = '<tool_call>\n{"name": "fold", "arguments": {"target": "all"}}\n</tool_call>' + tok.eos_token
    assert parse(tok, native)["tool_calls"][0]["function"] == {
        "name": "fold", "arguments": {"target": "all"}}  # fmt: skip
    prose = "The answer is Paris." + tok.eos_token
    assert "tool_calls" not in parse(tok, prose)
    unknown = '{"name": "delete_everything", "arguments": {}}' + tok.eos_token
    assert "tool_calls" not in parse(tok, unknown)
    assert with_text_call_repair(tok, NAMES) is tok  # wrapping twice keeps one fallback


def test_a_turn_forced_open_is_repaired_with_its_opener(tiny_model_dir: Path) -> None:
    # the packaged 0.5B, forced to open its call (training.rl.opener), wrote the rest without the closing
    # tag: the template's parser refuses it, and without its opener it is no call at all
    from training.rl.opener import opener_template, opener_text

    tok = tokenizer(tiny_model_dir)
    opener = opener_text(tok)
    forced = opener_template(tok.chat_template, opener)
    prompt = ids(tok, tok.apply_chat_template([{"role": "user", "content": "q"}], tokenize=False,
                                              add_generation_prompt=True, chat_template=forced))
    rest = ids(tok, 'read", "arguments": {"id": "q1"}}' + tok.eos_token)
    assert not parse_response(tok, rest, prefix=prompt).get("tool_calls")
    with_text_call_repair(tok, NAMES, opener)
    call = parse_response(tok, rest, prefix=prompt)["tool_calls"][0]["function"]
    assert call == {"name": "read", "arguments": {"id": "q1"}}
    # a turn that was not forced open is read as written: the same words are no call there
    free = ids(tok, tok.apply_chat_template([{"role": "user", "content": "q"}], tokenize=False, add_generation_prompt=True))
    assert not parse_response(tok, rest, prefix=free).get("tool_calls")
    plain = ids(tok, '{"name": "search", "arguments": {"query": "x"}}' + tok.eos_token)
    assert parse_response(tok, plain, prefix=free)["tool_calls"][0]["function"]["name"] == "search"
