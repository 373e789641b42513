"""Load a student (causal LM + tokenizer) from local files only (no hub access, ever).

A student comes from either
- a local Hugging Face directory (``save_pretrained`` layout: ``config.json`` + weights + tokenizer), or
- a GGUF file: a packaged model by name (``eventfold model path qwen2.5-coder-0.5b``, resolved through the
  model registry ``eventfold.models``) or a path ending in ``.gguf``. transformers dequantizes it with the
  ``gguf`` package (train extra) — about 2.5 minutes for the 0.5B on two busy cores — so the result is
  saved once as a Hugging Face directory under ``<cache>/students/<name>-<sha12>/`` and every later load
  reads that directory (seconds). The cache key is the GGUF's sha256 (the registry's ``.sha256`` sidecar
  when present), so a re-pulled or different file never reuses a stale conversion. Two processes asking
  for the same conversion wait on a file lock; the directory appears atomically (rename) when complete.

Chat template: the Qwen2.5 GGUFs embed Qwen2.5's chat template; when the embedded template is that
family's, the tokenizer gets TRL's verbatim copy of it (``trl/chat_templates/qwen2_5.jinja``) so that
TRL recognises it exactly (tool-call response parsing, the ``{% generation %}`` training template) —
the same text the model was tuned on, not a substitute.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from eventfold.locks import exclusive

log = logging.getLogger(__name__)

SOURCE_FILE = "eventfold_source.json"  # written into a converted directory: where it came from


class ModelPathError(FileNotFoundError):
    """The model path is not a local model directory, GGUF file or pulled packaged model."""


def check_model_dir(path: str | Path) -> Path:
    """Return ``path`` as a Path if it is a local model directory, else raise :class:`ModelPathError`."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ModelPathError(
            f"model path {str(p)!r} is not a local directory; models load from local paths only "
            "(no hub access) — build one with training.common.tiny.build_tiny_model, point at a .gguf "
            "file, or name a packaged model (`eventfold model list`)"
        )
    if not (p / "config.json").is_file():
        raise ModelPathError(f"model directory {str(p)!r} has no config.json")
    return p


# --- GGUF -> cached HF directory -------------------------------------------------------------------


def packaged_gguf(name: str, models_dir: Path | None = None) -> Path:
    """The pulled GGUF of a packaged model (the path `eventfold model path NAME` prints)."""
    from eventfold.models import get_model, is_installed, model_file
    from eventfold.settings import Settings

    model = get_model(name)  # unknown name -> ModelFetchError listing the known ones
    models_dir = models_dir or Settings().models_dir
    path = model_file(models_dir, model.name)
    if not is_installed(models_dir, model):
        raise ModelPathError(f"packaged model {name!r} is not pulled ({path}); run `eventfold model pull {name}`")
    return path


def gguf_digest(path: Path) -> str:
    """sha256 of a GGUF: the registry's sidecar when it is there, else hashed (once per call)."""
    sidecar = path.with_name(path.name + ".sha256")
    if sidecar.is_file():
        text = sidecar.read_text().split()
        if text and len(text[0]) == 64:
            return text[0]
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(8 << 20), b""):
            h.update(block)
    return h.hexdigest()


def converted_dir(gguf: Path, cache_root: Path) -> Path:
    """Where the dequantized HF copy of ``gguf`` lives (whether or not it exists yet)."""
    return cache_root / "students" / f"{gguf.stem}-{gguf_digest(gguf)[:12]}"


def qwen2_5_template(template: str | None) -> str | None:
    """TRL's verbatim Qwen2.5 template when ``template`` is a Qwen2.5-family tool template, else None."""
    if not template or "<tool_call>" not in template or "<|im_start|>" not in template:
        return None
    if "You are Qwen, created by Alibaba Cloud" not in template:
        return None
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def convert_gguf(gguf: Path, cache_root: Path) -> Path:
    """Dequantize ``gguf`` into a saved HF directory once; return the directory (cached)."""
    target = converted_dir(gguf, cache_root)
    if (target / SOURCE_FILE).is_file():
        return target
    with exclusive(target.with_name(target.name + ".lock")):
        if (target / SOURCE_FILE).is_file():  # another process finished it while we waited
            return target
        try:
            import gguf as _gguf  # noqa: F401  (transformers needs it to read GGUF files)
        except ImportError as exc:
            raise ModelPathError("loading a GGUF needs the `gguf` package: pip install 'eventfold[train]'") from exc
        started = time.perf_counter()
        log.info("dequantizing %s into %s (first load only; minutes on a small CPU)", gguf, target)
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
        from transformers import GgufConfig

        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32, local_files_only=True,
            quantization_config=GgufConfig(dequantize=True),  # plain dense float32 weights, trainable
        )
        quantizer = getattr(model, "hf_quantizer", None)
        if quantizer is not None:  # weights are dense: drop the GGUF marker so save_pretrained writes them
            quantizer.remove_quantization_config(model)
        template = qwen2_5_template(getattr(tok, "chat_template", None))
        if template is not None:
            tok.chat_template = template
        tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        source = {
            "gguf": str(gguf), "sha256": gguf_digest(gguf), "seconds": round(time.perf_counter() - started, 1),
            "parameters": sum(p.numel() for p in model.parameters()), "chat_template": "trl qwen2_5"
            if template is not None else "embedded",
        }  # fmt: skip
        (tmp / SOURCE_FILE).write_text(json.dumps(source, indent=1))
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
        log.info("converted %s in %.0f s", gguf.name, source["seconds"])
    return target


def resolve_model_dir(
    path: str | Path | None = None, *, packaged: str | None = None, cache_root: Path | None = None
) -> Path:
    """A loadable HF directory for a local directory, a ``.gguf`` file or a packaged model name."""
    if cache_root is None:
        from eventfold.settings import Settings

        cache_root = Settings().cache_dir
    if packaged:
        return convert_gguf(packaged_gguf(packaged), cache_root)
    if path is None:
        raise ModelPathError("no model given: set a model directory, a .gguf file or a packaged model name")
    p = Path(path).expanduser()
    if p.suffix == ".gguf":
        if not p.is_file():
            raise ModelPathError(f"GGUF file {str(p)!r} does not exist")
        return convert_gguf(p, cache_root)
    return check_model_dir(p)


# --- loading ---------------------------------------------------------------------------------------


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
    """Model + tokenizer from a local directory saved with ``save_pretrained`` (or a ``.gguf`` file,
    converted once through the cache)."""
    p = resolve_model_dir(path) if Path(path).suffix == ".gguf" else check_model_dir(path)
    tokenizer = load_tokenizer(p, padding_side=padding_side)
    model = AutoModelForCausalLM.from_pretrained(str(p), dtype=dtype, local_files_only=True)
    return model, tokenizer
