"""The held-out evaluation records what the policy did with each turn, through the real agent: the tool
names in order (a failed call marked ``!``, a turn without a call ``invalid``) and what each failure said,
so a table row such as "the SFT student never folds" can be traced to its turns."""

from __future__ import annotations

import pytest
from test_sft_data import ScriptedTeacher

from eventfold.run_options import RunOptions
from training.evaluate import EpisodeScore, call_profile, evaluate_policy, summarize
from training.rl.rewards import RewardConfig
from training.sft.data import TrainingQuestion

QUESTION = TrainingQuestion(
    id="q1",
    question="Who led the repairs on the road that was closed because the Millbrook pumping station had flooded?",
    golds=["Mara Quill"],
)


SCRIPT = [
    ("search", {"query": "Riverside Road closed pumping station"}),
    ("fold", {"start_step": 2, "end_step": 5}),  # impossible range: an error the model is shown
    "I think it was the mayor.",  # prose, no call
    ("search", {"query": "repairs Riverside Road led"}),
    ("answer", {"answer": "Mara Quill", "citations": ["03-repairs#0"]}),
]


def _evaluate(counter, backend, tmp_path, script=SCRIPT) -> list[EpisodeScore]:
    opts = RunOptions(max_steps=6, context_budget=8000, fold_summary="deterministic")
    return evaluate_policy(ScriptedTeacher(counter, script), [QUESTION], backend, opts, RewardConfig(),
                           log_path=tmp_path / "eval.jsonl")  # fmt: skip


def test_each_turn_is_recorded_in_order_with_what_failed(counter, lexical_backend, tmp_path) -> None:
    [score] = _evaluate(counter, lexical_backend, tmp_path)
    assert score.calls == ["search", "fold!", "invalid", "search", "answer"]
    assert len(score.errors) == 2
    assert score.errors[0].startswith("fold: ") and "step" in score.errors[0]
    assert score.errors[1] == "invalid: I think it was the mayor."
    assert score.answered and score.em == 1.0
    assert (score.turns, score.valid_calls) == (5, 3)
    assert summarize([score])["valid_call_rate"] == pytest.approx(3 / 5)
    # the log keeps the turns, and a resumed evaluation reads them back without running the model
    [again] = _evaluate(counter, lexical_backend, tmp_path, script=[])
    assert again.calls == score.calls and again.errors == score.errors


def test_profile_counts_tools_openings_and_failures() -> None:
    def s(qid: str, calls: list[str], errors: list[str]) -> EpisodeScore:
        return EpisodeScore(qid=qid, reward=0, em=0, f1=0, answered=False, folds=0, unfolds=0, guard_folds=0,
                            invalid_turns=0, tool_errors=len(errors), steps=len(calls), peak_context_tokens=0,
                            calls=calls, errors=errors)  # fmt: skip

    prof = call_profile([
        s("a", ["search", "search", "read!", "search"], ["read: Error: unknown id 'x'"]),
        s("b", ["search", "search", "read!", "search", "fold"], ["read: Error: unknown id 'y'"]),
        s("c", ["invalid"], ['invalid: <tool_call>\n{"name": "fold", "arguments": {"target"']),
        s("d", [], []),
    ])  # fmt: skip
    assert prof["calls"] == {"search": 6, "read!": 2, "fold": 1, "invalid": 1}
    assert prof["openings"] == {"search search read! search": 2, "invalid": 1}
    # failures of one kind count together, whatever value they quoted
    assert prof["errors"] == {
        "read: Error: unknown id '…'": 2,
        'invalid: <tool_call> {"name": "fold", "arguments": {"target"': 1,
    }
