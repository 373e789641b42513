"""One run config: `RunOptions` in Settings (env/TOML), per-run overrides, and the RL / SFT-teacher
sections that nest it with defaults of their own."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from eventfold.run_options import RunOptions
from eventfold.settings import Settings

CONFIGS = Path(__file__).resolve().parents[1] / "training" / "configs"


def test_settings_run_from_env_and_toml(tmp_path, monkeypatch):
    monkeypatch.setenv("EVENTFOLD_RUN__MAX_STEPS", "30")
    assert Settings().run.max_steps == 30
    toml = tmp_path / "s.toml"
    toml.write_text("[run]\ncontext_budget = 4000\nsearch_top_k = 7\n")
    s = Settings.from_toml(toml)
    assert (s.run.context_budget, s.run.search_top_k, s.run.answer_max_tokens) == (4000, 7, 64)


def test_a_misspelt_run_key_is_refused():
    with pytest.raises(ValidationError, match="max_stepz"):
        Settings(run={"max_stepz": 3})
    with pytest.raises(ValidationError, match="context_budget"):
        Settings(run={"context_budget": 3})


def test_run_options_apply_overrides_and_the_local_window():
    s = Settings(run={"max_steps": 3, "report_mode": "long"}, llm={"n_ctx": 4096})
    opts = s.run_options(max_steps=5, report_mode=None)
    assert (opts.max_steps, opts.report_mode, opts.context_window) == (5, "long", 4096)
    remote = Settings(llm={"backend": "openai", "base_url": "http://x:1/v1"})
    assert remote.run_options().context_window is None
    assert s.run.max_steps == 3  # the settings are not changed by a run's overrides


def test_a_long_report_gets_a_long_step_cap_unless_one_is_set():
    from eventfold.run_options import LONG_MAX_STEPS

    assert Settings().run_options(report_mode="long").max_steps == LONG_MAX_STEPS == 30
    assert Settings().run_options(report_mode="full").max_steps == 12
    assert Settings(run={"report_mode": "long"}).run_options().max_steps == LONG_MAX_STEPS
    assert Settings(run={"max_steps": 8}).run_options(report_mode="long").max_steps == 8  # the user's cap
    assert Settings().run_options(report_mode="long", max_steps=5).max_steps == 5


def test_rl_env_keeps_its_own_defaults_for_keys_a_config_leaves_out():
    from training.rl.env import EnvConfig

    default = EnvConfig().run
    assert (default.max_steps, default.context_budget, default.search_top_k, default.fold_summary) == (
        8, 2048, 3, "deterministic")
    partial = EnvConfig(run={"max_steps": 4}).run
    assert (partial.max_steps, partial.context_budget, partial.result_chars) == (4, 2048, 300)
    assert EnvConfig(run=RunOptions(max_steps=4)).run.context_budget == 6000  # a full object is taken as is
    with pytest.raises(ValidationError, match="max_stepz"):
        EnvConfig(run={"max_stepz": 4})


def test_shipped_training_configs_nest_the_run_config():
    from training.config import RLRunConfig, SFTRunConfig, load_config

    rl = load_config(CONFIGS / "rl_tiny.toml", RLRunConfig)
    assert (rl.env.run.context_budget, rl.env.run.max_steps, rl.env.run.search_top_k) == (3000, 4, 2)
    assert rl.env.run.read_chars == 800  # not in the file: the environment's default
    sft = load_config(CONFIGS / "sft_tiny.toml", SFTRunConfig)
    assert (sft.teacher.run.context_budget, sft.teacher.run.max_steps) == (3000, 6)


def test_a_trained_student_runs_with_the_options_it_was_trained_in(tmp_path, monkeypatch) -> None:
    """A student folder's run file sets every run option the user left unset (no suggestion line, the
    training budget); an option the user set stays theirs; a damaged file is a clear error."""
    import json

    import pytest

    from eventfold.run_options import TRAINED_RUN_FILE, trained_run_options
    from eventfold.settings import Settings

    trained = trained_run_options(RunOptions(context_budget=3000, search_top_k=3, result_chars=300))
    (tmp_path / TRAINED_RUN_FILE).write_text(json.dumps(trained), encoding="utf-8")
    llm = {"backend": "transformers", "hf_model_dir": tmp_path}
    plain = Settings(llm=llm).run
    assert (plain.suggest, plain.context_budget, plain.search_top_k, plain.result_chars) == (False, 3000, 3, 300)
    assert "max_steps" not in plain.model_fields_set  # a long report keeps its own step cap
    monkeypatch.setenv("EVENTFOLD_RUN__CONTEXT_BUDGET", "5000")
    assert Settings(llm=llm).run.context_budget == 5000 and Settings(llm=llm).run.suggest is False
    assert Settings().run.suggest is True  # the packaged model: no student file
    monkeypatch.delenv("EVENTFOLD_RUN__CONTEXT_BUDGET")
    (tmp_path / TRAINED_RUN_FILE).write_text('{"context_budget": "lots"}', encoding="utf-8")
    with pytest.raises(ValueError, match="not the run options of a trained student"):
        Settings(llm=llm)
