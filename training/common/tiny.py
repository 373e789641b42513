"""A tiny Qwen3-style causal LM + tokenizer built fully offline, for tests and CPU smoke runs.

Recipe (DESIGN.md §8, verified with TRL 1.16 / transformers 5.24):

- byte-level BPE (vocab ~600) trained with ``tokenizers`` on a small built-in text, with the special
  tokens of Qwen chat-with-tools (``<|im_start|>``, ``<tool_call>`` ...);
- ``PreTrainedTokenizerFast(eos_token="<|im_end|>", pad_token="<|endoftext|>")``, left padding;
- TRL's bundled ``qwen3.jinja`` chat template, byte for byte, so that TRL's ``add_response_schema``
  recognises it (tool-call parsing in GRPO) and ``get_training_chat_template`` maps it to the
  ``{% generation %}`` variant (assistant-only loss in SFT); :func:`training_chat_template` exposes it;
- ``Qwen3Config(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
  num_key_value_heads=2, head_dim=8)``, randomly initialised from a seed.

Everything is written with ``save_pretrained`` so it loads again by local path
(:func:`training.common.loading.load_model_and_tokenizer`).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import torch
from pydantic import BaseModel, ConfigDict, Field
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

from training.common.loading import load_model_and_tokenizer

SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
)
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"

# Small built-in training text: chat scaffolding, tool-call JSON, digits and arithmetic, plain prose.
_BASE_TEXT = """\
<|im_start|>system
You are a helpful research assistant. Think step by step, cite sources, and answer briefly.<|im_end|>
<|im_start|>user
What is 12 + 7? Show the steps.<|im_end|>
<|im_start|>assistant
<think>
Step 1: add the units. 2 + 7 = 9.
Step 2: carry the tens. 10 + 0 = 10.
</think>

The answer is 19.<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "search", "arguments": {"query": "capital of France", "k": 4}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
{"results": [{"title": "Paris", "text": "Paris is the capital and largest city of France."}]}
</tool_response><|im_end|>
# Tools

You may call one or more functions to assist with the user query.
<tools>
{"type": "function", "function": {"name": "read", "description": "Open a chunk", "parameters": {}}}
</tools>
- first item
- second item
1. Find the entities.
2. Expand the graph.
3. Rank the events and write the report.
The quick brown fox jumps over the lazy dog. A research agent folds old context into summaries
and unfolds them when a detail is needed again. Events, entities and relations form a graph.
Answer: yes. Answer: no. Answer: 42. true false null
0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 30 40 50 60 70 80 90 100
+ - * / = ( ) [ ] { } < > : ; , . ! ? ' " _ # @ % & | ~ ^ $
abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ
"""


class TinyModelSpec(BaseModel):
    """Sizes of the tiny model. Defaults are the recipe of DESIGN.md §8."""

    model_config = ConfigDict(extra="forbid")

    vocab_size: int = Field(
        600, ge=300, le=8192, description="BPE vocabulary target (>= 256 bytes + specials)"
    )
    hidden_size: int = Field(16, ge=8)
    intermediate_size: int = Field(32, ge=8)
    num_hidden_layers: int = Field(2, ge=1)
    num_attention_heads: int = Field(4, ge=1)
    num_key_value_heads: int = Field(2, ge=1)
    head_dim: int = Field(8, ge=2)
    max_position_embeddings: int = Field(4096, ge=64)
    seed: int = 0
    extra_text: list[str] = Field(default_factory=list, description="more tokenizer training text")


def qwen3_chat_template() -> str:
    """TRL's bundled ``qwen3.jinja`` (exact text; TRL matches templates by string equality)."""
    return resources.files("trl").joinpath("chat_templates/qwen3.jinja").read_text(encoding="utf-8")


def training_chat_template() -> str:
    """TRL's ``qwen3_training.jinja``: the same template with ``{% generation %}`` markers."""
    return resources.files("trl").joinpath("chat_templates/qwen3_training.jinja").read_text(encoding="utf-8")


def build_tiny_tokenizer(
    vocab_size: int = 600, extra_text: list[str] | None = None
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on the built-in text (+ ``extra_text``) and wrap it for transformers."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    texts = [_BASE_TEXT, *(extra_text or [])]
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in (EOS_TOKEN, PAD_TOKEN)],
    )
    fast.padding_side = "left"
    fast.chat_template = qwen3_chat_template()
    return fast


def build_tiny_model(out_dir: str | Path, spec: TinyModelSpec | None = None, **overrides: object) -> Path:
    """Build the tiny tokenizer + randomly initialised Qwen3 model and save both to ``out_dir``.

    ``overrides`` are fields of :class:`TinyModelSpec` (e.g. ``hidden_size=32``). Returns the
    directory, which :func:`load_tiny` / ``load_model_and_tokenizer`` load by local path.
    """
    spec = (spec or TinyModelSpec()).model_copy(update=overrides)
    spec = TinyModelSpec.model_validate(spec.model_dump())
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_tokenizer(spec.vocab_size, spec.extra_text)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def load_tiny(
    out_dir: str | Path, spec: TinyModelSpec | None = None, **overrides: object
) -> tuple[Qwen3ForCausalLM, PreTrainedTokenizerFast]:
    """Load the tiny model from ``out_dir``, building it there first if it is not there yet."""
    out = Path(out_dir)
    if not (out / "config.json").is_file() or not (out / "tokenizer.json").is_file():
        build_tiny_model(out, spec, **overrides)
    model, tokenizer = load_model_and_tokenizer(out)
    return model, tokenizer  # type: ignore[return-value]
