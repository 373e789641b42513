"""Settings never leak a secret, never read a stray .env, and a broken file is a message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from eventfold.settings import Settings, SettingsFileError, describe_error

KEY = "sk-live-0123456789abcdefXYZ"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("EVENTFOLD_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("EVENTFOLD_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def test_a_dotenv_in_the_working_directory_is_not_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("EVENTFOLD_LLM__BACKEND=openai\nEVENTFOLD_LLM__BASE_URL=http://evil.example/v1\n"
                                   "OPENAI_API_KEY=x\nPATH_EXTRA=1\n")
    s = Settings()
    assert s.llm.backend == "local" and s.llm.base_url is None  # LLM traffic not redirected


def test_an_explicit_env_file_is_read_and_unrelated_variables_are_ignored(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    env = tmp_path / "my.env"
    env.write_text("OPENAI_API_KEY=whatever\nSOME_TOOL_SETTING=1\nEVENTFOLD_INDEX=fromfile\nEVENTFOLD_VENV=/x\n"
                   "EVENTFOLD_LLM__TEMPERATURE=0.5\n")
    monkeypatch.setenv("EVENTFOLD_ENV_FILE", str(env))
    s = Settings()  # was: "extra inputs are not permitted" for OPENAI_API_KEY
    assert s.index == "fromfile" and s.llm.temperature == 0.5
    monkeypatch.setenv("EVENTFOLD_ENV_FILE", str(tmp_path / "nope.env"))
    with pytest.raises(FileNotFoundError, match="EVENTFOLD_ENV_FILE"):
        Settings()


def test_validation_errors_never_carry_the_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTFOLD_LLM__API_KEY", KEY)
    monkeypatch.setenv("EVENTFOLD_LLM__BACKEND", "openai")  # no base_url: the model validator fails on the dict
    with pytest.raises(ValidationError) as info:
        Settings()
    text = describe_error(info.value)
    assert KEY not in text and "needs llm.base_url" in text
    with pytest.raises(ValidationError) as info:
        Settings(llm={"api_key": KEY, "base_url": f"https://user:{KEY}@h/v1", "temperature": 9})
    text = describe_error(info.value)
    assert KEY not in text and "temperature" in text
    with pytest.raises(ValidationError) as info:
        Settings(llm={"api_key": KEY, "base_url": f"ftp://user:{KEY}@h/v1"})
    assert KEY not in describe_error(info.value) and "http://" in describe_error(info.value)


def test_cli_reports_bad_settings_without_secret_or_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app import app

    monkeypatch.setenv("EVENTFOLD_LLM__API_KEY", KEY)
    monkeypatch.setenv("EVENTFOLD_LLM__BACKEND", "openai")
    out = CliRunner().invoke(app, ["retrieve", "q", "--index", "no-such-index"])
    assert out.exit_code == 2 and "invalid settings" in out.output and KEY not in out.output
    assert "Traceback" not in out.output


def test_toml_syntax_error_is_a_clear_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app import app

    bad = tmp_path / "eventfold.toml"
    bad.write_text('[llm]\nbackend = "openai\nbase_url = "http://x/v1"\n')
    with pytest.raises(SettingsFileError, match="not valid TOML.*line 2"):
        Settings.from_toml(bad)
    out = CliRunner().invoke(app, ["retrieve", "q", "--config", str(bad)])
    assert out.exit_code == 2 and "not valid TOML" in out.output
    assert "Traceback" not in out.output
    monkeypatch.setenv("EVENTFOLD_CONFIG", str(bad))
    out = CliRunner().invoke(app, ["retrieve", "q"])
    assert out.exit_code == 2 and "not valid TOML" in out.output
