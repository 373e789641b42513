"""Export a trained student (a saved Hugging Face directory) to GGUF with llama.cpp's own converter.

The converter (``convert_hf_to_gguf.py`` with its ``conversion`` package and ``gguf-py``) ships inside
the llama-cpp-python sdist, under ``vendor/llama.cpp/``. The first export fetches that sdist with pip
(the version installed here, so the GGUF matches the llama.cpp that will load it), extracts only the
converter's files into ``<cache>/llama_cpp_convert/<version>/`` and reuses them afterwards. The export
runs the converter in a subprocess (it imports torch and its own ``gguf``) and writes
``<model_dir>/student-<outtype>.gguf`` atomically; an export that is already newer than the weights is
kept. ``eventfold ask --model DIR`` then serves the student through llama.cpp in its training format
(``eventfold.llm.gguf_generator``).

``q8_0`` is the default: near-lossless for these weights (the packaged 0.5B is a Q4_K_M mix, so its
dequantized values survive a Q8_0 round trip almost exactly), about half the size of f16 and the
fastest on a memory-bound CPU. Export the base student the same way to compare it with its trained
versions at one precision. ``f16`` / ``bf16`` / ``f32`` keep more of the trained weights at 2–4× the size.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Literal

from eventfold.llm.gguf_generator import EXPORT_NAME, exported_gguf
from eventfold.locks import exclusive

OutType = Literal["q8_0", "f16", "bf16", "f32"]
LoraOutType = Literal["f32", "f16", "bf16", "q8_0"]
LORA_EXPORT_NAME = "adapter-{outtype}.gguf"
_MEMBERS = ("convert_hf_to_gguf.py", "convert_lora_to_gguf.py", "conversion/", "gguf-py/")
# both converters must be there: a cache extracted before the LoRA converter was kept is extracted again
_SCRIPTS = ("convert_hf_to_gguf.py", "convert_lora_to_gguf.py")


class ExportError(RuntimeError):
    """The converter could not be fetched, or it failed on this model directory."""


def converter_dir(cache_dir: Path, version: str | None = None) -> Path:
    """llama.cpp's converter for the installed llama-cpp-python, fetched and extracted once."""
    version = version or _installed_version()
    target = cache_dir / "llama_cpp_convert" / version
    if _complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(target.parent / f".{version}.lock"):
        if _complete(target):
            return target
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            sdist = _download_sdist(version, Path(tmp))
            staged = Path(tmp) / "tree"
            _extract_converter(sdist, staged)
            shutil.rmtree(target, ignore_errors=True)
            staged.rename(target)
    return target


def _complete(target: Path) -> bool:
    return all((target / name).is_file() for name in _SCRIPTS)


def export_gguf(
    model_dir: Path, cache_dir: Path, *, outtype: OutType = "q8_0", force: bool = False, timeout_s: float = 3600
) -> Path:
    """``model_dir`` (config.json + safetensors + tokenizer) → ``model_dir/student-<outtype>.gguf``."""
    model_dir = model_dir.expanduser()
    if not (model_dir / "config.json").is_file():
        raise ExportError(f"{model_dir} is not a saved model directory (config.json missing)")
    current = exported_gguf(model_dir, outtype)
    if current is not None and not force:
        return current
    script = converter_dir(cache_dir) / "convert_hf_to_gguf.py"
    out = model_dir / EXPORT_NAME.format(outtype=outtype)
    started = time.perf_counter()
    log = _convert([str(script), str(model_dir)], out, outtype, timeout_s, f"the GGUF export of {model_dir}")
    (model_dir / (out.name + ".log")).write_text(
        f"exported in {time.perf_counter() - started:.1f} s with {script}\n{log[-4000:]}", encoding="utf-8"
    )
    return out


def export_lora_gguf(
    adapter_dir: Path, base_dir: Path, cache_dir: Path, *, out: Path | None = None,
    outtype: LoraOutType = "f32", timeout_s: float = 600,
) -> Path:  # fmt: skip
    """A peft LoRA adapter (``adapter_config.json`` + ``adapter_model.safetensors``) → a GGUF adapter that
    llama.cpp applies over the base model's GGUF (``Llama(lora_path=...)``), with llama.cpp's
    ``convert_lora_to_gguf.py``. ``base_dir`` is the base model's saved directory (its config.json names
    the architecture). Written atomically to ``out`` (default ``adapter_dir/adapter-<outtype>.gguf``)."""
    adapter_dir, base_dir = adapter_dir.expanduser(), base_dir.expanduser()
    if not (adapter_dir / "adapter_config.json").is_file():
        raise ExportError(f"{adapter_dir} is not a saved LoRA adapter (adapter_config.json missing)")
    if not (base_dir / "config.json").is_file():
        raise ExportError(f"{base_dir} is not a saved base model directory (config.json missing)")
    script = converter_dir(cache_dir) / "convert_lora_to_gguf.py"
    out = out or adapter_dir / LORA_EXPORT_NAME.format(outtype=outtype)
    cmd = [str(script), str(adapter_dir), "--base", str(base_dir)]
    _convert(cmd, out, outtype, timeout_s, f"the LoRA export of {adapter_dir}")
    return out


def _convert(args: list[str], out: Path, outtype: str, timeout_s: float, what: str) -> str:
    """Run one of llama.cpp's converters into ``out`` (via a partial file, renamed when complete);
    returns its log (stderr)."""
    partial = out.with_name(out.name + ".partial")
    cmd = [sys.executable, *args, "--outfile", str(partial), "--outtype", outtype]
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}  # its own gguf-py, matching it
    env["HF_HUB_OFFLINE"] = "1"
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        partial.unlink(missing_ok=True)
        raise ExportError(f"{what} took longer than {timeout_s:.0f} s") from exc
    if proc.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-12:])
        raise ExportError(f"llama.cpp's converter failed: {what} (exit {proc.returncode}):\n{tail}")
    partial.replace(out)
    return proc.stderr or ""


def _installed_version() -> str:
    try:
        return metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError as exc:
        raise ExportError("llama-cpp-python is not installed (the `local` extra): its sdist holds the converter") from exc


def _download_sdist(version: str, dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           "-q", "-d", str(dest), f"llama-cpp-python=={version}"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    found = sorted(dest.glob("llama_cpp_python-*.tar.gz"))
    if proc.returncode != 0 or not found:
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        raise ExportError(f"could not download the llama-cpp-python {version} sdist (it holds the converter):\n{tail}")
    return found[0]


def _extract_converter(sdist: Path, dest: Path) -> None:
    """Only the converters (``vendor/llama.cpp/{convert_hf_to_gguf.py, convert_lora_to_gguf.py, conversion/,
    gguf-py/}``), nothing outside ``dest``."""
    dest.mkdir(parents=True)
    n = 0
    with tarfile.open(sdist) as tar:
        for m in tar.getmembers():
            _, sep, rel = m.name.partition("/vendor/llama.cpp/")
            if not sep or not rel.startswith(_MEMBERS) or not (m.isfile() or m.isdir()):
                continue
            path = (dest / rel).resolve()
            if not path.is_relative_to(dest.resolve()):
                continue  # never write outside the cache folder
            if m.isdir():
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(m)
            if src is not None:
                with src, open(path, "wb") as f:
                    shutil.copyfileobj(src, f)
                n += 1
    for name in _SCRIPTS:
        if not (dest / name).is_file():
            raise ExportError(f"{sdist.name} holds no vendor/llama.cpp/{name} ({n} converter files)")
