"""Resumable SFT data generation: each finished trajectory is recorded as it ends; a resumed run runs only
the rest and writes the dataset an uninterrupted run writes; a torn line and a failed run run again; a
record of another configuration is refused; the progress line counts n/N with the resumed ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_sft_workflow_teacher import OPTS, REPAIRS, STORM, WordModel

from eventfold.llm.types import LLMError
from training.config import SFTRunConfig
from training.sft.data import TrainingQuestion, agent_run_fn, write_dataset
from training.sft.resume import PARTIAL, ResumeRefused, TrajectoryLog, data_config
from training.sft.teachers import MemoryWorkflow, mixed_trajectories, policy_run_fn, policy_trajectories

QS = [
    TrainingQuestion(id="q1", question=REPAIRS, golds=["Mara Quill"]),
    TrainingQuestion(id="q2", question=STORM, golds=["Aldwick council"]),
    TrainingQuestion(id="q3", question="Who opened the new reading room at Aldwick Library?", golds=["nobody"]),
    TrainingQuestion(id="q4", question="When did the storm flood the Millbrook pumping station?", golds=["2020"]),
]
CONFIG = {"questions": {"path": "qs", "offset": 0, "limit": 4}, "teacher": {"backend": "workflow"}}


class Killed(RuntimeError):
    """The process was stopped (the run_fn raises it at the question it is to stop at)."""


def _run_fn(backend, model=None, *, kill_at: str | None = None, seen: list[str] | None = None):
    inner = policy_run_fn(backend, model or WordModel(), OPTS)

    def run(question: str, policy):
        if seen is not None:
            seen.append(question)
        if question == kill_at:
            raise Killed(question)
        return inner(question, policy)

    return run


def _log(path: Path, lines: list[str] | None = None, config: dict = CONFIG) -> TrajectoryLog:
    return TrajectoryLog(path / PARTIAL, config, out=(lines if lines is not None else []).append, warn=lambda _: None)


def _generate(backend, path: Path, **kw) -> list:
    lines = kw.pop("lines", None)
    return policy_trajectories(QS, _run_fn(backend, **kw), MemoryWorkflow, log=_log(path, lines))


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / PARTIAL).read_text().splitlines()]


def test_a_killed_run_resumes_with_the_rest_and_writes_the_uninterrupted_dataset(lexical_backend, tmp_path) -> None:
    whole = tmp_path / "whole"
    write_dataset(_generate(lexical_backend, whole), whole)
    part = tmp_path / "part"
    with pytest.raises(Killed):  # stopped at the third question: two finished and recorded
        _generate(lexical_backend, part, kill_at=QS[2].question)
    recs = _records(part)
    assert "config" in recs[0] and [r["trajectory"]["question_id"] for r in recs[1:]] == ["q1", "q2"]
    seen: list[str] = []
    lines: list[str] = []
    trajs = _generate(lexical_backend, part, seen=seen, lines=lines)
    assert seen == [QS[2].question, QS[3].question]  # only the rest ran
    assert [t.question_id for t in trajs] == ["q1", "q2", "q3", "q4"]
    write_dataset(trajs, part)
    assert (part / "train.jsonl").read_text() == (whole / "train.jsonl").read_text()
    assert json.loads((part / "manifest.json").read_text())["accepted"] == 2
    assert len(_records(part)) == 5  # the record stays: header + all four


def test_progress_counts_the_resumed_ones(lexical_backend, tmp_path) -> None:
    with pytest.raises(Killed):
        _generate(lexical_backend, tmp_path, kill_at=QS[1].question)
    lines: list[str] = []
    _generate(lexical_backend, tmp_path, lines=lines)
    assert lines[0].startswith("[teacher] workflow-teacher: 4 trajectories, 1 resumed from ")
    assert [line.split()[1] for line in lines[1:]] == ["2/4", "3/4", "4/4"]
    assert all("elapsed " in line and ", ETA " in line for line in lines[1:])
    assert lines[1].split()[2] == "q2;" and lines[-1].endswith("ETA 0s")


def test_a_torn_last_line_is_dropped_and_its_question_runs_again(lexical_backend, tmp_path) -> None:
    _generate(lexical_backend, tmp_path)
    text = (tmp_path / PARTIAL).read_text()
    (tmp_path / PARTIAL).write_text(text[: len(text) - 40])  # the last record torn by a kill
    warnings: list[str] = []
    log = TrajectoryLog(tmp_path / PARTIAL, CONFIG, out=lambda _: None, warn=warnings.append)
    assert len(warnings) == 1 and "unreadable line dropped" in warnings[0]
    assert log.recorded("workflow-teacher", "q4") is None and log.recorded("workflow-teacher", "q3") is not None
    seen: list[str] = []
    policy_trajectories(QS, _run_fn(lexical_backend, seen=seen), MemoryWorkflow, log=log)
    assert seen == [QS[3].question]
    assert [r["trajectory"]["question_id"] for r in _records(tmp_path)[1:]] == ["q1", "q2", "q3", "q4"]


class FailingReader(WordModel):
    """The reader's call fails for good on one question (an LLM error: the run stops as failed)."""

    def chat(self, messages, *, tools=None, json_schema=None, **kw):
        if not tools and json_schema is None and STORM in messages[-1].content:
            raise LLMError("server error 500")
        return super().chat(messages, tools=tools, json_schema=json_schema, **kw)


def test_a_run_with_a_failed_model_call_is_not_recorded_and_runs_again(lexical_backend, tmp_path) -> None:
    lines: list[str] = []
    trajs = _generate(lexical_backend, tmp_path, model=FailingReader(), lines=lines)
    assert trajs[1].run.status == "answered" and trajs[1].llm_errors == ["server error 500"]  # absorbed: not found
    assert [r["trajectory"]["question_id"] for r in _records(tmp_path)[1:]] == ["q1", "q3", "q4"]
    assert lines[2].split()[1:3] == ["2/4", "q2"] and "a model call failed: not recorded" in lines[2]
    seen: list[str] = []
    trajs = _generate(lexical_backend, tmp_path, seen=seen)
    assert seen == [STORM] and trajs[1].run.answer == "Aldwick council" and not trajs[1].llm_errors


class BrokenTeacher(WordModel):
    """A model-policy teacher whose turns fail for good (the agent stops the run as failed)."""

    name = "broken"

    def chat(self, messages, *, tools=None, **kw):
        if tools:
            raise LLMError("overloaded")
        return super().chat(messages, tools=tools, **kw)


def test_a_failed_run_of_the_llm_teacher_is_not_recorded(lexical_backend, tmp_path) -> None:
    log = _log(tmp_path)
    [traj] = mixed_trajectories(QS[:1], agent_run_fn(lexical_backend, OPTS), llm=BrokenTeacher(), llm_n=None,
                                oracle=None, log=log)  # fmt: skip
    assert traj.run.status == "failed" and "overloaded" in traj.run.stop_reason
    assert _records(tmp_path) == [{"config": CONFIG}] and log.recorded("broken", "q1") is None


def test_a_record_of_another_configuration_is_refused(lexical_backend, tmp_path) -> None:
    _generate(lexical_backend, tmp_path)
    changed = {**CONFIG, "teacher": {"backend": "workflow", "long_tasks": {"count": 3}}}
    with pytest.raises(ResumeRefused, match=r"\(teacher changed .*delete that file .* another data_dir"):
        _log(tmp_path, config=changed)
    fresh = TrajectoryLog(tmp_path / PARTIAL, changed, resume=False, out=lambda _: None)  # starts over
    assert fresh.done == {} and _records(tmp_path) == [{"config": changed}]


def _shipped() -> SFTRunConfig:
    from training.config import load_config

    return load_config(Path(__file__).resolve().parents[2] / "training/configs/sft_workflow.toml", SFTRunConfig)


def test_the_data_configuration_leaves_out_the_workers_and_the_acceptance_settings() -> None:
    """More threads record the same trajectories, and the verdicts are judged after recording; another
    questions slice or another teacher run option records other trajectories."""
    cfg = _shipped()
    more = cfg.model_copy(update={"teacher": cfg.teacher.model_copy(update={"workers": 4})})
    assert data_config(more) == data_config(cfg)
    rejudged = cfg.model_copy(update={"accept": cfg.accept.model_copy(update={"min_f1": 0.5})})
    assert data_config(rejudged) == data_config(cfg)
    run = cfg.teacher.run.model_copy(update={"max_steps": cfg.teacher.run.max_steps + 1})
    for other in (cfg.model_copy(update={"questions": cfg.questions.model_copy(update={"limit": cfg.questions.limit - 10})}),
                  cfg.model_copy(update={"teacher": cfg.teacher.model_copy(update={"run": run})})):
        assert data_config(other) != data_config(cfg)


def test_sft_data_keeps_its_record_in_the_data_dir_and_refuses_another_questions_slice(tmp_path) -> None:
    from training.launch import _partial_log

    cfg = _shipped().model_copy(update={"data_dir": tmp_path})
    _partial_log(cfg)
    assert _records(tmp_path) == [{"config": data_config(cfg)}]
    other = cfg.model_copy(update={"questions": cfg.questions.model_copy(update={"offset": 40})})
    with pytest.raises(ResumeRefused, match=r"\(questions changed"):
        _partial_log(other)
    assert _partial_log(other.model_copy(update={"resume": False})).done == {}  # resume = false starts over


def test_threads_record_every_trajectory(lexical_backend, tmp_path) -> None:
    trajs = policy_trajectories(QS, _run_fn(lexical_backend), MemoryWorkflow, workers=3, log=_log(tmp_path))
    assert [t.question_id for t in trajs] == ["q1", "q2", "q3", "q4"]
    assert sorted(r["trajectory"]["question_id"] for r in _records(tmp_path)[1:]) == ["q1", "q2", "q3", "q4"]


def test_the_oracle_path_resumes_too(lexical_backend, tmp_path) -> None:
    from training.sft.teachers import OracleTeacher, oracle_plans

    run = agent_run_fn(lexical_backend, OPTS)

    def killed_at_q2(question, model):
        if question == QS[1].question:
            raise Killed(question)
        return run(question, model)

    def oracle_run(run_fn) -> list:
        oracle = OracleTeacher(WordModel(), oracle_plans(QS[:2]))
        return mixed_trajectories(QS[:2], run_fn, llm=None, llm_n=0, oracle=oracle, fill="all", log=_log(tmp_path))

    with pytest.raises(Killed):
        oracle_run(killed_at_q2)
    seen: list[str] = []
    trajs = oracle_run(lambda q, m: seen.append(q) or run(q, m))
    assert seen == [QS[1].question] and [(t.teacher, t.question_id) for t in trajs] == [
        ("oracle-teacher", "q1"), ("oracle-teacher", "q2")]
