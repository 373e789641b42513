"""A missing optional extra names the install command at the point of use, never a traceback: the
train extra (trl) for `train ... --dry-run`, `local` (llama-cpp-python) for the local backend, and the
module-to-extra map behind every such message. Missing modules are simulated with a None entry in
sys.modules (what `import` treats as not installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eventfold.extras import EXTRA_OF_MODULE, MissingExtra, install_hint, missing_extra

ROOT = Path(__file__).resolve().parents[1]


def _run_without(modules: list[str], argv: list[str]) -> subprocess.CompletedProcess[str]:
    code = ("import sys\n"
            f"for m in {modules!r}: sys.modules[m] = None\n"
            f"sys.argv = ['eventfold', *{argv!r}]\n"
            "from app import main\n"
            "main()\n")
    env = {**os.environ, "COLUMNS": "300", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=env)


@pytest.mark.parametrize("argv", [
    ["train", "rl", "--config", "training/configs/rl_tiny.toml", "--dry-run"],
    ["train", "rl", "--config", "training/configs/rl_tiny.toml"],
])
def test_train_without_the_train_extra_names_the_install_command(argv: list[str]) -> None:
    proc = _run_without(["trl", "peft"], argv)
    text = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2, text  # was: ModuleNotFoundError: trl, with a traceback
    assert "Traceback" not in text and "ModuleNotFoundError" not in text
    assert "needs the 'train' extra" in text and "pip install 'eventfold[train]'" in text
    assert "bash scripts/install.sh dev" in text


def test_local_backend_without_llama_cpp_names_the_local_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app import app

    for key in list(os.environ):
        if key.startswith("EVENTFOLD_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("EVENTFOLD_HOME", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "300")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    result = CliRunner().invoke(app, ["ask", "Who led the repairs?", "--model", str(gguf)])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, text
    assert "the local backend needs the 'local' extra" in text and "pip install 'eventfold[local]'" in text


@pytest.mark.parametrize(("module", "extra"), [("trl", "train"), ("trl.trainer", "train"), ("vllm", "gpu"),
                                               ("pypdf", "pdf"), ("llama_cpp", "local")])
def test_a_missing_module_maps_to_its_extra(module: str, extra: str) -> None:
    wrapped = RuntimeError("while loading")
    wrapped.__cause__ = ModuleNotFoundError(f"No module named '{module}'", name=module)
    found = missing_extra(wrapped, "this step")
    assert isinstance(found, MissingExtra) and found.extra == extra
    assert install_hint(extra) in str(found) and str(found).startswith("this step needs")


def test_a_module_outside_the_extras_is_not_blamed_on_one() -> None:
    assert missing_extra(ModuleNotFoundError("No module named 'nope'", name="nope")) is None
    assert missing_extra(ValueError("x")) is None
    assert "transformers" not in EXTRA_OF_MODULE  # core, through sentence-transformers


def test_every_mapped_extra_is_declared_in_pyproject() -> None:
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_OF_MODULE.values()) <= set(declared)
