"""Student loading: which sources resolve to which directory, and clear errors for the others (the
GGUF dequantization itself runs in test_student_slow.py on the packaged 0.5B)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from training.common.loading import (
    SOURCE_FILE,
    ModelPathError,
    converted_dir,
    gguf_digest,
    qwen2_5_template,
    resolve_model_dir,
)
from training.config import ModelSection


def test_sources_resolve_or_fail_clearly(tmp_path, tiny_model_dir) -> None:
    assert resolve_model_dir(tiny_model_dir, cache_root=tmp_path) == tiny_model_dir
    with pytest.raises(ModelPathError, match="does not exist"):
        resolve_model_dir(tmp_path / "missing.gguf", cache_root=tmp_path)
    with pytest.raises(ModelPathError, match="no config.json"):
        resolve_model_dir(tmp_path, cache_root=tmp_path)
    from eventfold.models import ModelFetchError

    with pytest.raises(ModelFetchError, match="unknown packaged model"):
        resolve_model_dir(packaged="gpt-9", cache_root=tmp_path)


def test_a_finished_conversion_is_reused_and_keyed_by_content(tmp_path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF fake bytes")
    target = converted_dir(gguf, tmp_path / "cache")
    assert target.name == f"m-{gguf_digest(gguf)[:12]}"
    target.mkdir(parents=True)
    (target / SOURCE_FILE).write_text(json.dumps({"gguf": str(gguf)}))
    assert resolve_model_dir(gguf, cache_root=tmp_path / "cache") == target  # no dequantization
    gguf.write_bytes(b"other bytes")  # a different file never reuses the old conversion
    assert converted_dir(gguf, tmp_path / "cache") != target
    sidecar = gguf.with_name(gguf.name + ".sha256")
    sidecar.write_text("a" * 64 + "  m.gguf\n")  # the model registry's checksum is trusted when present
    assert gguf_digest(gguf) == "a" * 64


def test_model_section_needs_exactly_one_source() -> None:
    assert ModelSection(packaged="qwen2.5-coder-0.5b").label == "qwen2.5-coder-0.5b"
    with pytest.raises(ValidationError, match="exactly one"):
        ModelSection()
    with pytest.raises(ValidationError, match="exactly one"):
        ModelSection(path="x", packaged="qwen2.5-coder-0.5b")


def test_only_qwen2_5_templates_are_swapped_for_trls_copy() -> None:
    from trl.chat_template_utils import qwen2_5_chat_template

    assert qwen2_5_template(qwen2_5_chat_template) == qwen2_5_chat_template
    assert qwen2_5_template("{{ messages }}") is None and qwen2_5_template(None) is None
