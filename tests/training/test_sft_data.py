"""SFT data builder: the real agent driven by a scripted teacher, rejection sampling with reasons,
chat-with-tools rows that the tiny tokenizer renders with correct assistant masks."""

from __future__ import annotations

import json

import pytest

from eventfold.llm.transformers_backend import HFChatModel
from eventfold.llm.types import ChatResponse, Message, ToolCall
from eventfold.run_options import RunOptions
from training.common.loading import load_tokenizer
from training.common.tiny import training_chat_template
from training.sft.data import (
    AcceptConfig,
    TrainingQuestion,
    agent_run_fn,
    generate_trajectories,
    judge,
    read_trajectories,
    trajectory_rows,
    write_dataset,
)
from training.sft.mask import assistant_mask_report


class ScriptedTeacher:
    """Test double of a teacher model (or a student under evaluation): replays a fixed list of tool calls
    (a plain string: a turn of text without a call), counts with the tiny tokenizer."""

    def __init__(self, counter: HFChatModel, script: list[tuple[str, dict]]) -> None:
        self.name = "scripted-teacher"
        self.counter = counter
        self.script = list(script)

    def chat(self, messages, *, tools=None, **kw) -> ChatResponse:
        if not tools or not self.script:  # the agent's forced final answer (with or without tools)
            return ChatResponse(message=Message(role="assistant", content="unknown"), model=self.name)
        turn = self.script.pop(0)
        if isinstance(turn, str):
            return ChatResponse(message=Message(role="assistant", content=turn), model=self.name)
        name, args = turn
        call = ToolCall(id=f"c{len(self.script)}", name=name, arguments=args)
        return ChatResponse(message=Message(role="assistant", content="", tool_calls=[call]), model=self.name)

    def count_tokens(self, text: str) -> int:
        return self.counter.count_tokens(text)

    def count_message_tokens(self, messages, tools=None) -> int:
        return self.counter.count_message_tokens(messages, tools)


GOOD = [
    ("search", {"query": "Riverside Road closed pumping station"}),
    ("search", {"query": "repairs Riverside Road led"}),
    ("fold", {"start_step": 1, "end_step": 1}),
    ("answer", {"answer": "Mara Quill", "citations": ["03-repairs#0"]}),
]
SCRIPTS = {
    "good": GOOD,
    "wrong": [("search", {"query": "repairs Riverside Road"}), ("answer", {"answer": "Samuel Okafor"})],
    "bad_fold": [
        ("search", {"query": "repairs"}),
        ("fold", {"start_step": 2, "end_step": 5}),
        ("answer", {"answer": "Mara Quill"}),
    ],
    "thrash": [
        ("search", {"query": "repairs"}),
        ("search", {"query": "closure"}),
        ("fold", {"start_step": 1, "end_step": 2}),
        ("unfold", {"fold_id": "F1"}),
        ("answer", {"answer": "Mara Quill"}),
    ],
    "no_answer": [("search", {"query": "repairs"}), ("search", {"query": "closure"})],
    "detour": [  # a failed read and a re-run query, then the right calls
        ("search", {"query": "Riverside Road closed pumping station"}),
        ("read", {"id": "no-such-chunk"}),
        ("search", {"query": "riverside road  closed pumping station"}),
        ("search", {"query": "repairs Riverside Road led"}),
        ("answer", {"answer": "Mara Quill"}),
    ],
}


def _run(script_name: str, counter, backend, max_steps: int = 6):
    q = TrainingQuestion(
        id=script_name,
        question="Who led the repairs on the road that was closed because the "
        "Millbrook pumping station had flooded?",
        golds=["Mara Quill"],
    )
    teacher = ScriptedTeacher(counter, SCRIPTS[script_name])
    opts = RunOptions(max_steps=max_steps, context_budget=8000, fold_summary="deterministic")
    return generate_trajectories([q], agent_run_fn(backend, opts), teacher)[0]


def test_good_trajectory_is_accepted_and_rows_mirror_the_turns(counter, lexical_backend) -> None:
    traj = _run("good", counter, lexical_backend)
    assert len(traj.calls) == 4 and traj.run.status == "answered"
    v = judge(traj)
    assert v.accepted and v.em == 1.0, v.reason
    rows = trajectory_rows(traj)
    assert len(rows) == 4
    # the prompt of the last turn is the folded context the teacher saw: step 1 is a block, step 2 verbatim
    last = rows[-1]["prompt"]
    assert any(m["content"].startswith("## [F1] steps 1") for m in last)
    assert rows[-1]["completion"][0]["tool_calls"][0]["function"]["name"] == "answer"
    assert (
        json.loads(rows[-1]["completion"][0]["tool_calls"][0]["function"]["arguments"])["answer"]
        == "Mara Quill"
    )
    assert {t["function"]["name"] for t in json.loads(rows[0]["tools"])} == {
        "search",
        "read",
        "timeline",
        "dates",
        "resolve",
        "fold",
        "unfold",
        "answer",
    }


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("wrong", "wrong answer"),
        ("bad_fold", "invalid fold at step 2"),
        ("thrash", "fold thrash"),
        ("no_answer", "no answer"),
    ],
)
def test_bad_trajectories_are_rejected_with_a_reason(script, reason, counter, lexical_backend) -> None:
    traj = _run(script, counter, lexical_backend, max_steps=2 if script == "no_answer" else 6)
    v = judge(traj)
    assert not v.accepted and v.reason.startswith(reason), v.reason


def test_failed_and_repeated_turns_stay_in_the_prompts_but_are_never_trained(counter, lexical_backend) -> None:
    traj = _run("detour", counter, lexical_backend)
    assert judge(traj, AcceptConfig(max_tool_errors=1)).accepted
    rows = trajectory_rows(traj)
    assert [r["id"] for r in rows] == ["detour/turn1", "detour/turn4", "detour/turn5"]
    names = [r["completion"][0]["tool_calls"][0]["function"]["name"] for r in rows]
    assert names == ["search", "search", "answer"]
    later = json.dumps(rows[1]["prompt"])
    assert "no-such-chunk" in later and later.count("pumping station") >= 2  # the detour is in the context


def test_require_fold_and_guard_rules(counter, lexical_backend) -> None:
    traj = _run("wrong", counter, lexical_backend)
    traj.run.answer = "Mara Quill"
    assert judge(traj).accepted
    assert judge(traj, AcceptConfig(require_fold=True)).reason.startswith("no fold used")
    traj.run.counters.guard_folds = 1
    assert judge(traj).reason.startswith("the budget guard folded")
    traj.calls = traj.calls[:1]
    traj.run.counters.guard_folds = 0
    assert judge(traj).reason.startswith("recording mismatch")


def test_dataset_manifest_and_assistant_masks(tmp_path, counter, lexical_backend, tiny_model_dir) -> None:
    trajs = [_run(s, counter, lexical_backend) for s in ("good", "wrong", "bad_fold")]
    m = write_dataset(trajs, tmp_path / "ds", source="tiny_corpus")
    assert (m.trajectories, m.accepted, m.rows, m.folds) == (3, 1, 4, 1)
    assert m.acceptance_rate == pytest.approx(1 / 3)
    assert m.rejection_reasons == {"wrong answer": 1, "invalid fold at step 2": 1}
    saved = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert saved["questions"] == ["good", "wrong", "bad_fold"]
    rows = [json.loads(x) for x in (tmp_path / "ds" / "train.jsonl").read_text().splitlines()]
    assert len(read_trajectories(tmp_path / "ds" / "trajectories.jsonl")) == 3
    tok = load_tokenizer(tiny_model_dir)
    report = assistant_mask_report(rows, tok, training_chat_template())
    assert report.rows == 4 and not report.leaks, report.leaks
    assert 0 < report.trained_tokens < report.total_tokens / 5
