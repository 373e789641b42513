"""`eventfold ask` input checks (no model is loaded for these)."""

from __future__ import annotations

from typer.testing import CliRunner

from app import app


def out(result) -> str:
    return " ".join(result.output.split())  # rich wraps long lines


def test_ask_refuses_an_empty_question(tmp_path, monkeypatch):
    monkeypatch.setenv("EVENTFOLD_HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["ask", "   ", "--model", str(tmp_path / "none.gguf")])
    assert result.exit_code == 2
    assert "question is empty" in out(result)


def test_ask_refuses_an_absurd_budget_and_a_missing_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("EVENTFOLD_HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["ask", "Who?", "--budget", "3"])
    assert result.exit_code == 2 and "invalid settings" in out(result) and "run.context_budget" in out(result)
    result = CliRunner().invoke(app, ["ask", "Who?", "--corpus", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "is not a directory" in out(result)


def test_ask_reports_a_missing_model_clearly(tmp_path, monkeypatch):
    monkeypatch.setenv("EVENTFOLD_HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["ask", "Who?", "--model", "qwen2.5-coder-0.5b"])
    assert result.exit_code == 2 and "cannot start" in out(result) and "model pull" in out(result)


def test_index_name_follows_the_corpus_dir(tmp_path):
    from cli.ask import index_name_for

    d = tmp_path / "my corpus!"
    d.mkdir()
    name = index_name_for(d)
    assert name.startswith("my-corpus--") and len(name) == len("my-corpus--") + 8


def test_ask_names_a_bad_option_value_and_its_choices(tmp_path, monkeypatch):
    monkeypatch.setenv("EVENTFOLD_HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["ask", "Who?", "--policy", "bogus"])
    assert result.exit_code == 2 and "--policy 'bogus': choose model | workflow" in out(result)
    result = CliRunner().invoke(app, ["ask", "Who?", "--report", "huge"])
    assert result.exit_code == 2 and "choose short | full | long" in out(result)
