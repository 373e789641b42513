"""RL runs a user can watch, compare and resume: TensorBoard events in output_dir/tb, the per-step
episode metrics, --resume / --no-resume, and the multi-run curves PNG."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from test_rl_run import _cfg, patch_generate

from training.common.loading import load_model_and_tokenizer
from training.config import ConfigError
from training.curves import CURVES, SMOOTHED, main, plot_runs, run_label, trailing_mean
from training.launch import check_rl_launch, rl_override_args, rl_overrides
from training.rl.result import RUN_CONFIG
from training.rl.run import require_report_backend, resume_point, run_rl, tensorboard_dir
from training.sft.data import TrainingQuestion


@pytest.fixture
def questions(tiny_questions) -> list[TrainingQuestion]:
    return [TrainingQuestion(id=q["id"], question=q["question"], golds=[q["answer"]]) for q in tiny_questions]


def _run(cfg, tiny_model_dir, questions, backend):
    model, tok = load_model_and_tokenizer(tiny_model_dir)
    patch_generate(model, tok)
    return run_rl(cfg, questions, backend, model=model, tokenizer=tok)


def test_tensorboard_events_hold_the_step_metrics(tmp_path, tiny_model_dir, questions, lexical_backend) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg = _cfg(tmp_path, tiny_model_dir, report_to="tensorboard")
    res = _run(cfg, tiny_model_dir, questions, lexical_backend)
    tb = tensorboard_dir(cfg)
    assert tb == cfg.output_dir / "tb" and list(tb.glob("events.out.tfevents.*"))
    events = EventAccumulator(str(tb))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for key in ("reward", "episode/valid_call_rate", "episode/fold_rate", "episode/unfold_rate", "entropy", "step_time"):
        assert f"train/{key}" in tags, sorted(tags)
    (reward,) = events.Scalars("train/reward")
    assert reward.step == 1 and reward.value == pytest.approx(0.6, abs=1e-4)
    # every policy turn ran a call (A: search, fold, answer; B: search, answer); A folded, nobody unfolded
    assert events.Scalars("train/episode/valid_call_rate")[0].value == pytest.approx(1.0)
    assert events.Scalars("train/episode/fold_rate")[0].value == pytest.approx(0.5)
    assert events.Scalars("train/episode/unfold_rate")[0].value == 0.0
    step = next(x for x in map(json.loads, res.log_path.read_text().splitlines()) if "reward" in x)
    assert step["episode/valid_call_rate"] == pytest.approx(1.0) and step["step_time"] > 0
    assert run_label(cfg.output_dir) == "grpo seed 0"  # from the saved run_config.json


def test_no_resume_starts_at_step_zero_and_the_default_resumes(tmp_path, tiny_model_dir, questions,
                                                               lexical_backend) -> None:
    first = _cfg(tmp_path, tiny_model_dir, grpo={"max_steps": 1, "save_steps": 1})
    assert resume_point(first).checkpoint is None
    assert _run(first, tiny_model_dir, questions, lexical_backend).global_step == 1
    longer = _cfg(tmp_path, tiny_model_dir, grpo={"max_steps": 2, "save_steps": 1})
    point = resume_point(longer)
    assert point.checkpoint and point.checkpoint.endswith("checkpoint-1") and (point.step, point.remaining) == (1, 1)
    res = _run(longer, tiny_model_dir, questions, lexical_backend)
    assert res.global_step == 2 and res.resumed_from == point.checkpoint
    steps = [x["step"] for x in map(json.loads, res.log_path.read_text().splitlines()) if "reward" in x]
    assert steps == [1, 2]  # step 1 from the checkpoint's history, step 2 trained now
    # another seed (or estimator) would continue this run's checkpoints: refused before anything is written
    other = rl_overrides(longer, seed=7, max_steps=3)
    other = other.model_copy(update={"advantage": other.advantage.model_copy(update={"method": "siras"}),
                                     "grpo": other.grpo.model_copy(update={"learning_rate": 1e-3})})  # fmt: skip
    with pytest.raises(ConfigError, match=r"advantage\.method: 'grpo' -> 'siras'; grpo\.seed: 0 -> 7\)") as refused:
        run_rl(other, questions, lexical_backend)
    assert "max_steps" not in str(refused.value)  # a longer run, or another learning rate, is the same run
    assert json.loads((longer.output_dir / RUN_CONFIG).read_text())["grpo"]["seed"] == 0
    assert "grpo.seed" in " ".join(check_rl_launch(other).problems)
    apart = rl_overrides(longer, seed=7, output_dir=tmp_path / "seed7")
    assert resume_point(apart).checkpoint is None
    assert not [p for p in check_rl_launch(apart).problems if p.startswith("resume")]
    fresh = rl_overrides(longer, resume=False)
    assert not fresh.resume and resume_point(fresh).checkpoint is None and resume_point(fresh).remaining == 2
    res = _run(fresh, tiny_model_dir, questions, lexical_backend)
    assert res.global_step == 2 and res.resumed_from is None
    steps = [x["step"] for x in map(json.loads, res.log_path.read_text().splitlines()) if "reward" in x]
    assert steps == [1, 2]  # both trained in this run


def test_cli_reports_the_resume_point(tmp_path, tiny_model_dir, capsys) -> None:
    from cli.train import _report_start

    cfg = _cfg(tmp_path, tiny_model_dir, grpo={"max_steps": 5}, report_to="tensorboard")
    ckpt = cfg.output_dir / "checkpoint-3"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 3}))
    _report_start(cfg)
    out = " ".join(capsys.readouterr().out.split())
    assert "checkpoint-3 (step 3): 2 of 5 steps remain" in out and f"--logdir {cfg.output_dir / 'tb'}" in out
    _report_start(rl_overrides(cfg, resume=False))
    assert "starting at step 0 (--no-resume" in " ".join(capsys.readouterr().out.split())
    _report_start(rl_overrides(cfg, max_steps=3))  # stopped early: the checkpoint becomes the model
    assert "max_steps 3 reached, nothing to train" in " ".join(capsys.readouterr().out.split())


def test_overrides_and_their_launch_arguments(tmp_path, tiny_model_dir) -> None:
    cfg = _cfg(tmp_path, tiny_model_dir)
    assert cfg.report_to == "none" and cfg.resume
    assert rl_overrides(cfg) is cfg
    both = rl_overrides(cfg, report_to="tensorboard", resume=False)
    assert (both.report_to, both.resume) == ("tensorboard", False)
    assert rl_override_args("tensorboard", False) == ["--report-to", "tensorboard", "--no-resume"]
    assert rl_override_args() == []
    short = rl_overrides(cfg, max_steps=4)
    assert short.grpo.max_steps == 4 and short.grpo.learning_rate == cfg.grpo.learning_rate
    assert rl_override_args(max_steps=4) == ["--max-steps", "4"]
    seeded = rl_overrides(cfg, seed=3, output_dir=Path("~/runs/seed3"))
    assert seeded.grpo.seed == 3 and seeded.output_dir == Path.home() / "runs" / "seed3"
    assert seeded.grpo.learning_rate == cfg.grpo.learning_rate and cfg.grpo.seed == 0
    assert rl_override_args(seed=3, output_dir=seeded.output_dir) == ["--seed", "3", "--output-dir", str(seeded.output_dir)]
    with pytest.raises(ValueError, match="max_steps"):
        rl_overrides(cfg, max_steps=0)
    with pytest.raises(ValueError, match="report_to"):
        rl_overrides(_cfg(tmp_path, tiny_model_dir, async_rollouts=True), report_to="tensorboard")


def test_missing_tensorboard_names_the_install_command(monkeypatch) -> None:
    from eventfold.extras import missing_extra

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'eventfold\[train\]'") as exc:
        require_report_backend("tensorboard")
    assert missing_extra(exc.value).extra == "train"
    require_report_backend("none")


def _fake_run(folder: Path, method: str | None, seed: int, steps: int, kl: bool = False) -> Path:
    folder.mkdir(parents=True)
    rows = [{"step": i, "reward": 0.1 * i, "episode/valid_call_rate": 0.9, "episode/fold_rate": 0.5,
             "episode/unfold_rate": 0.0, "entropy": 1.0, "step_time": 2.0, **({"kl": 0.01} if kl else {})}
            for i in range(1, steps + 1)]
    rows.append({"train_runtime": 9.0, "step": steps})  # TRL's closing row: no reward, not a step
    (folder / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if method is not None:
        (folder / "run_config.json").write_text(json.dumps({"advantage": {"method": method}, "grpo": {"seed": seed}}))
    return folder


def test_curves_of_several_runs(tmp_path, capsys) -> None:
    grpo = _fake_run(tmp_path / "a", "grpo", 1, 3)
    siras = _fake_run(tmp_path / "exp" / "rl", "siras", 2, 4, kl=True).parent  # an experiment folder
    plain = _fake_run(tmp_path / "plain", None, 0, 2)
    out = tmp_path / "plots" / "curves.png"
    curves = plot_runs([grpo, siras, plain], out)
    assert out.is_file() and out.read_bytes()[:4] == b"\x89PNG"
    assert set(curves) == set(CURVES) | {SMOOTHED}
    assert list(curves["reward"]) == ["grpo seed 1", "siras seed 2", "plain"]
    assert curves[SMOOTHED]["siras seed 2"] == ([1.0, 2.0, 3.0, 4.0], pytest.approx([0.1, 0.15, 0.2, 0.25]))
    assert curves["reward"]["siras seed 2"] == ([1.0, 2.0, 3.0, 4.0], pytest.approx([0.1, 0.2, 0.3, 0.4]))
    assert all(len(curves[t]) == 3 for t in CURVES if t != "KL")
    assert list(curves["KL"]) == ["siras seed 2"]  # only that run logged kl
    same = plot_runs([grpo, _fake_run(tmp_path / "b", "grpo", 1, 2)], out)
    assert list(same["reward"]) == ["grpo seed 1 (a)", "grpo seed 1 (b)"]
    main([str(grpo), str(siras), "--out", str(out)])
    assert "2 runs, 8 of 8 metrics logged" in capsys.readouterr().out
    main([str(grpo)])  # no --out: the table
    assert "RL reward curve of" in capsys.readouterr().out


def test_the_trailing_mean_covers_the_last_window_steps() -> None:
    assert trailing_mean([1.0, 3.0, 5.0, 7.0], window=2) == [1.0, 2.0, 4.0, 6.0]
    assert trailing_mean([0.0] * 9 + [10.0] * 11)[-1] == 10.0 and trailing_mean([0.0] * 9 + [10.0])[-1] == 1.0


def test_a_resume_from_another_clone_of_the_same_data_is_the_same_run(tmp_path, tiny_model_dir) -> None:
    """The saved config names the repository's question file by the clone's absolute path: a fresh clone
    elsewhere names the same content at another place, which is no conflict; other content is."""
    from training.rl.resume import resume_conflicts

    cfg = _cfg(tmp_path, tiny_model_dir)
    saved = cfg.model_dump(mode="json")
    clone_a, clone_b = tmp_path / "a" / "questions.json", tmp_path / "b" / "questions.json"
    for f in (clone_a, clone_b):
        f.parent.mkdir()
        f.write_text('[{"id": "q1"}]')
    saved["corpus"]["settings_toml"] = str(clone_a)
    now = cfg.model_copy(update={"corpus": cfg.corpus.model_copy(update={"settings_toml": clone_b})})
    assert resume_conflicts(saved, now) == []
    clone_b.write_text('[{"id": "q2"}]')
    assert [c.split(":")[0] for c in resume_conflicts(saved, now)] == ["corpus.settings_toml"]
    saved["corpus"]["settings_toml"] = str(tmp_path / "gone.json")  # the saved place is gone: cannot tell
    assert [c.split(":")[0] for c in resume_conflicts(saved, now)] == ["corpus.settings_toml"]
