"""Teacher mixing: the LLM teacher's rejected questions are filled in by the oracle (real agent, tools)."""

from __future__ import annotations

from test_sft_data import ScriptedTeacher

from eventfold.run_options import RunOptions
from training.sft.data import TrainingQuestion, agent_run_fn, judge, trajectory_rows, write_dataset
from training.sft.teachers import OracleTeacher, mixed_trajectories, oracle_plans, slip_questions

Q = [
    TrainingQuestion(id="q1", question="Who led the repairs on the road that was closed?", golds=["Mara Quill"]),
    TrainingQuestion(id="q2", question="When was the storm?", golds=["10 January 2020"]),
]


def test_oracle_fills_in_for_rejected_llm_trajectories(tmp_path, counter, lexical_backend) -> None:
    wrong = ScriptedTeacher(counter, [("search", {"query": "repairs"}), ("answer", {"answer": "Samuel Okafor"})])  # an answer no seen chunk holds is refused: the run ends without one
    from types import SimpleNamespace

    ds = SimpleNamespace(examples=[SimpleNamespace(qid="q1", gold_titles=["Riverside Road closure", "repairs led"])])
    plans = oracle_plans(Q, ds)
    assert plans[Q[1].question] == ([Q[1].question], "10 January 2020")  # no titles: the question is the search
    oracle = OracleTeacher(counter, plans)
    run_fn = agent_run_fn(lexical_backend, RunOptions(max_steps=6, context_budget=4000, fold_summary="deterministic"))
    trajs = mixed_trajectories(Q, run_fn, llm=wrong, llm_n=1, oracle=oracle, fill="rejected")
    assert [(t.teacher, t.question_id) for t in trajs] == [
        ("scripted-teacher", "q1"), ("oracle-teacher", "q1"), ("oracle-teacher", "q2")]
    assert not judge(trajs[0]).accepted
    kept = [t for t in trajs[1:] if judge(t).accepted]
    assert kept and all(t.run.answer in t.golds for t in kept)
    assert any(t.run.counters.folds for t in trajs[1:])  # the budget is tight: the oracle folds on its own
    m = write_dataset(trajs, tmp_path)
    assert m.per_teacher["scripted-teacher"] == {"trajectories": 1, "accepted": 0, "yield": 0.0,
                                                 "rejection_reasons": {"no answer": 1}}
    assert m.per_teacher["oracle-teacher"]["trajectories"] == 2


def test_the_oracle_slips_once_and_the_slip_is_not_trained(counter, lexical_backend) -> None:
    from types import SimpleNamespace

    assert slip_questions(Q, 0.5) == [Q[1].question] and slip_questions(Q, 0.0) == []
    ten = [TrainingQuestion(id=str(i), question=f"q{i}", golds=["x"]) for i in range(10)]
    assert slip_questions(ten, 0.3) == ["q3", "q6", "q9"] and len(slip_questions(ten, 0.7)) == 7
    ds = SimpleNamespace(examples=[SimpleNamespace(qid="q1", gold_titles=["Riverside Road closure", "repairs led"])])
    oracle = OracleTeacher(counter, oracle_plans(Q, ds), slip_questions(Q, 1.0))
    run_fn = agent_run_fn(lexical_backend, RunOptions(max_steps=6, context_budget=100_000, fold_summary="deterministic"))
    traj = mixed_trajectories(Q[:1], run_fn, llm=None, llm_n=0, oracle=oracle, fill="all")[0]
    queries = [c.arguments.get("query") for s in traj.run.steps for c in s.assistant.tool_calls]
    assert queries == ["Riverside Road closure", "Riverside Road closure", "repairs led", None]  # one slip, then on
    assert judge(traj).accepted and traj.run.answer == "Mara Quill"
    assert [r["id"] for r in trajectory_rows(traj)] == ["q1/turn1", "q1/turn3", "q1/turn4"]


def test_the_oracle_answers_at_the_last_step(counter, lexical_backend) -> None:
    from types import SimpleNamespace

    ds = SimpleNamespace(examples=[SimpleNamespace(qid="q1", gold_titles=["Riverside Road closure", "repairs led", "storm"])])
    oracle = OracleTeacher(counter, oracle_plans(Q, ds))
    run_fn = agent_run_fn(lexical_backend, RunOptions(max_steps=2, context_budget=100_000, fold_summary="deterministic"))
    traj = mixed_trajectories(Q[:1], run_fn, llm=None, llm_n=0, oracle=oracle, fill="all")[0]
    assert [c.name for s in traj.run.steps for c in s.assistant.tool_calls] == ["search", "answer"]
    assert traj.run.status == "answered"
