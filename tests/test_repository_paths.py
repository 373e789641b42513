"""Nothing of the project or its tests reads outside the repository: no source, config or script
names a folder beside the clone or a path of one machine, and every relative path of a run config
stays inside the repository (outputs, caches and downloaded models go under the user's home, `~`)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from training.config import PATH_KEYS

ROOT = Path(__file__).resolve().parents[1]
# the product and its tests; data/ holds data, docs/ and bench/results hold prose and past outputs
SCANNED = ("app.py", "pyproject.toml", "agent", "bench", "cli", "eval", "eventfold", "eventrag", "examples",
           "scripts", "tests", "training")
SKIPPED = {"__pycache__", "results", "node_modules", "target"}
SUFFIXES = {".py", ".toml", ".sh", ".yaml", ".yml", ".cfg", ".ini", ".jinja"}
# written so that this file does not match them itself
ESCAPES = {
    "a folder beside the clone": re.compile(r"\.\./shared\b"),
    "a path joined onto a 'shared' folder": re.compile(r"""/\s*["']shared["']|["']shared["']\s*/"""),
    "the variable naming the data beside the clone": re.compile(r"EVENTFOLD_SHARED_DAT[A]"),
    "an absolute path of one machine": re.compile(r"(?<![\w.~-])/(?:wor[k]|home|Users|roo[t])/"),
}


def _files() -> Iterator[Path]:
    for name in SCANNED:
        top = ROOT / name
        paths = [top] if top.is_file() else sorted(top.rglob("*"))
        for p in paths:
            if p.is_file() and p.suffix in SUFFIXES and not SKIPPED & set(p.relative_to(ROOT).parts):
                yield p


def test_the_scan_sees_the_configs_scripts_and_sources() -> None:
    seen = {p.relative_to(ROOT).as_posix() for p in _files()}
    assert {"training/configs/sft_qwen05b.toml", "training/gpu_check.sh", "bench/eventrag.py",
            "eval/multihop/loaders.py", "tests/eval/conftest.py", "training/rl/configs/fsdp.yaml"} <= seen


def test_no_file_reads_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {what}: {line.strip()}"
        for path in _files()
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        for what, pattern in ESCAPES.items()
        if pattern.search(line)
    ]
    assert not found, "\n".join(found)


def _paths(data: Any, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, k)
    elif isinstance(data, str) and key in PATH_KEYS:
        yield key, data


@pytest.mark.parametrize("config", sorted((ROOT / "training" / "configs").glob("*.toml")), ids=lambda p: p.name)
def test_config_paths_stay_in_the_repository_or_the_home_folder(config: Path) -> None:
    raw = tomllib.loads(config.read_text(encoding="utf-8"))
    for key, value in _paths(raw):
        if value.startswith("~"):
            continue
        assert not Path(value).is_absolute(), f"{config.name}: {key} = {value!r} is one machine's path"
        resolved = (config.parent / value).resolve()
        assert resolved.is_relative_to(ROOT), f"{config.name}: {key} = {value!r} leaves the repository"
        assert resolved.exists(), f"{config.name}: {key} = {value!r} is not in the repository"
