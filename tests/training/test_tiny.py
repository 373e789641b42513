"""The offline tiny model: builds, saves, reloads by local path, generates, and TRL recognises its template."""

from __future__ import annotations

import pytest
import torch

from training.common.loading import ModelPathError, load_model_and_tokenizer
from training.common.tiny import (
    EOS_TOKEN,
    PAD_TOKEN,
    SPECIAL_TOKENS,
    build_tiny_model,
    load_tiny,
    qwen3_chat_template,
    training_chat_template,
)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


def test_tokenizer_specials_and_padding(tiny_dir) -> None:
    _, tok = load_model_and_tokenizer(tiny_dir)
    assert tok.eos_token == EOS_TOKEN and tok.pad_token == PAD_TOKEN
    assert tok.padding_side == "left"
    assert 500 <= len(tok) <= 700
    for s in SPECIAL_TOKENS:  # each special is one token
        assert len(tok(s, add_special_tokens=False).input_ids) == 1, s
    text = 'Step 1: 12 + 7 = 19\n<tool_call>\n{"name": "search"}\n</tool_call>'
    assert tok.decode(tok(text).input_ids) == text  # byte-level BPE round-trips


def test_chat_template_is_trls_and_recognised(tiny_dir) -> None:
    from trl.chat_template_utils import add_response_schema, get_training_chat_template

    _, tok = load_model_and_tokenizer(tiny_dir)
    assert tok.chat_template == qwen3_chat_template()
    assert get_training_chat_template(tok) == training_chat_template()
    assert "{% generation %}" in training_chat_template() or "{%- generation %}" in training_chat_template()
    tok = add_response_schema(tok)
    schema = getattr(tok, "response_schema", None) or getattr(tok, "response_template", None)
    assert schema is not None
    prefix = tok.apply_chat_template(
        [{"role": "user", "content": "q"}], add_generation_prompt=True, tokenize=False
    )
    parsed = tok.parse_response(
        '<tool_call>\n{"name": "search", "arguments": {"q": "x"}}\n</tool_call><|im_end|>', prefix=prefix
    )
    assert parsed["tool_calls"][0]["function"]["name"] == "search"


def test_model_config_and_generation(tiny_dir) -> None:
    model, tok = load_tiny(tiny_dir)
    cfg = model.config
    assert (cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers) == (16, 32, 2)
    assert (cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim) == (4, 2, 8)
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "What is 2 + 3?"}], add_generation_prompt=True, tokenize=False
    )
    batch = tok([prompt, "hi"], return_tensors="pt", padding=True)
    assert batch.attention_mask[1, 0] == 0  # left padded
    torch.manual_seed(0)
    out = model.generate(**batch, max_new_tokens=5, do_sample=True, pad_token_id=tok.pad_token_id)
    assert out.shape[0] == 2 and out.shape[1] > batch.input_ids.shape[1]


def test_build_is_deterministic_and_overridable(tmp_path) -> None:
    a = build_tiny_model(tmp_path / "a", seed=3)
    b = build_tiny_model(tmp_path / "b", seed=3)
    c = build_tiny_model(tmp_path / "c", seed=4, hidden_size=32, head_dim=8)
    ma, _ = load_model_and_tokenizer(a)
    mb, _ = load_model_and_tokenizer(b)
    mc, _ = load_model_and_tokenizer(c)
    wa = ma.model.embed_tokens.weight
    assert torch.equal(wa, mb.model.embed_tokens.weight)
    assert mc.config.hidden_size == 32


def test_missing_path_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(ModelPathError, match="local"):
        load_model_and_tokenizer(tmp_path / "nope")
    with pytest.raises(ModelPathError, match="config.json"):
        load_model_and_tokenizer(tmp_path)
