"""Settings: validation errors, env nesting, TOML files, masked secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from eventfold.settings import Settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    import os

    for key in list(os.environ):
        if key.startswith("EVENTFOLD_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)  # no stray .env


def test_defaults_are_the_embedded_backends(tmp_path):
    s = Settings(home=tmp_path)
    assert (s.llm.backend, s.llm.packaged_model, s.embed.backend, s.graph.backend) == (
        "local", "qwen2.5-coder-1.5b", "local", "embedded")
    assert s.models_dir == tmp_path / "models"
    assert s.vector_uri() == str(tmp_path / "indexes" / "default" / "milvus.db")


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"llm": {"base_url": "localhost:8000/v1"}}, "must start with http"),
        ({"llm": {"backend": "openai"}}, "needs llm.base_url"),
        ({"llm": {"model_path": "model.bin"}}, ".gguf"),
        ({"llm": {"temperature": 3}}, "less than or equal to 2"),
        ({"embed": {"backend": "openai"}}, "needs embed.base_url"),
        ({"graph": {"uri": "http://neo4j:7474"}}, "bolt://"),
        ({"index": "../escape"}, "simple name"),
        ({"llm": {"backnd": "local"}}, "Extra inputs"),
    ],
)
def test_bad_values_are_refused_clearly(overrides, needle):
    with pytest.raises(ValidationError, match=needle):
        Settings(**overrides)


def test_env_vars_nest_with_double_underscore(monkeypatch):
    monkeypatch.setenv("EVENTFOLD_LLM__BACKEND", "openai")
    monkeypatch.setenv("EVENTFOLD_LLM__BASE_URL", "http://vllm:8000/v1")
    monkeypatch.setenv("EVENTFOLD_LLM__CONCURRENCY", "16")
    monkeypatch.setenv("EVENTFOLD_RUN__MAX_STEPS", "30")
    s = Settings()
    assert (s.llm.backend, s.llm.base_url, s.llm.concurrency, s.run.max_steps) == (
        "openai", "http://vllm:8000/v1", 16, 30)


def test_env_var_bad_value_is_refused(monkeypatch):
    monkeypatch.setenv("EVENTFOLD_LLM__CONCURRENCY", "0")
    with pytest.raises(ValidationError, match="concurrency"):
        Settings()


def write_toml(path: Path) -> Path:
    path.write_text(
        '[llm]\nbackend = "openai"\nbase_url = "https://api.example.com/v1"\napi_key = "sk-secret-123"\n'
        '[graph]\nbackend = "neo4j"\nuri = "neo4j://db:7687"\npassword = "hunter2"\n'
    )
    return path


def test_toml_file_and_overrides(tmp_path):
    s = Settings.from_toml(write_toml(tmp_path / "ef.toml"), llm={"model": "gpt-x"})
    assert (s.llm.backend, s.llm.model, s.graph.uri) == ("openai", "gpt-x", "neo4j://db:7687")
    assert s.llm.base_url == "https://api.example.com/v1"  # deep merge kept the file's other keys


def test_toml_from_env_var_and_env_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("EVENTFOLD_CONFIG", str(write_toml(tmp_path / "ef.toml")))
    monkeypatch.setenv("EVENTFOLD_GRAPH__NAMESPACE", "tenant-a")
    s = Settings()
    assert s.graph.backend == "neo4j" and s.graph.namespace == "tenant-a"


def test_missing_toml_file_is_an_error(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError):
        Settings.from_toml(tmp_path / "nope.toml")
    monkeypatch.setenv("EVENTFOLD_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(FileNotFoundError):
        Settings()


def test_secrets_are_masked(tmp_path):
    s = Settings.from_toml(write_toml(tmp_path / "ef.toml"))
    dumped = json.dumps(s.redacted())
    assert "sk-secret-123" not in dumped and "hunter2" not in dumped
    assert "sk-secret-123" not in repr(s) and "hunter2" not in str(s)
    assert s.llm.api_key is not None and s.llm.api_key.get_secret_value() == "sk-secret-123"
