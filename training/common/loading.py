"""Load a causal LM and its tokenizer from a local directory (no hub access, ever)."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase


class ModelPathError(FileNotFoundError):
    """The model path is not a local directory holding a saved model and tokenizer."""


def check_model_dir(path: str | Path) -> Path:
    """Return ``path`` as a Path if it is a local model directory, else raise :class:`ModelPathError`."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ModelPathError(
            f"model path {str(p)!r} is not a local directory; models load from local paths only "
            "(no hub access) — build one with training.common.tiny.build_tiny_model or copy a checkpoint"
        )
    if not (p / "config.json").is_file():
        raise ModelPathError(f"model directory {str(p)!r} has no config.json")
    return p


def load_tokenizer(path: str | Path, padding_side: str = "left") -> PreTrainedTokenizerBase:
    """Tokenizer from a local directory; left padding by default (what GRPO generation needs)."""
    p = check_model_dir(path)
    tok = AutoTokenizer.from_pretrained(str(p), local_files_only=True)
    tok.padding_side = padding_side
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_model_and_tokenizer(
    path: str | Path,
    dtype: torch.dtype | str = "auto",
    padding_side: str = "left",
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Model + tokenizer from a local directory saved with ``save_pretrained``."""
    p = check_model_dir(path)
    tokenizer = load_tokenizer(p, padding_side=padding_side)
    model = AutoModelForCausalLM.from_pretrained(str(p), dtype=dtype, local_files_only=True)
    return model, tokenizer
