"""Every CLI group answers --help (through `python app.py`, as a user runs it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "app.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_top_level_help_lists_every_group():
    result = run("--help")
    assert result.returncode == 0, result.stderr
    for group in ("model", "index", "ask", "eval", "train"):
        assert group in result.stdout


@pytest.mark.parametrize("group", ["model", "index", "ask", "eval", "train", "model pull", "model list", "model path", "model export"])
def test_group_help(group):
    result = run(*group.split(), "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout


def test_model_path_of_unknown_model_fails():
    result = run("model", "path", "no-such-model")
    assert result.returncode == 2 and "unknown packaged model" in result.stderr


def test_model_export_refuses_what_it_cannot_export(tmp_path):
    result = run("model", "export", str(tmp_path))
    assert result.returncode == 1 and "config.json missing" in result.stderr
    result = run("model", "export", str(tmp_path), "--outtype", "q4_k")
    assert result.returncode == 2 and "--outtype must be" in result.stderr
