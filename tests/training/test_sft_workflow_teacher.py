"""The workflow policy as SFT teacher: its turns recorded as the prompts the model policy is given alone,
refused when a prompt shows a suggestion; its memory decisions in a long task (fold past half the budget
at an item's start, unfold before a cross-reference item's answer); training questions kept clear of
the benchmarks'; the manifest's per-tool row counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.graph import AgentDeps
from agent.llm import ChatResponse, Message, ToolCall
from agent.plan import step_items
from agent.policy import ModelPolicy, WorkflowPolicy
from agent.runner import run_agent
from eval.longhorizon.crossref import Detail, question_for
from eval.longhorizon.tasks import render_request
from eval.multihop.schema import Passage
from eventfold.run_options import RunOptions
from training.config import QuestionsSection, SFTRunConfig, load_config
from training.sft.data import AcceptConfig, TrainingQuestion, judge, trajectory_rows, write_dataset
from training.sft.record import RecordingChatModel, RecordingPolicy, SuggestionInPrompt
from training.sft.teachers import CountedBy, MemoryWorkflow, policy_run_fn, policy_trajectories

ROOT = Path(__file__).resolve().parents[2]
OPTS = RunOptions(fold_summary="deterministic", context_budget=6000, max_steps=8)
REPAIRS = "Who led the Riverside Road repairs in 2020?"
STORM = "Which council closed Riverside Road in January 2020?"
READS = {REPAIRS: "Mara Quill", STORM: "Aldwick council", "blanked out": "410,000"}


class WordModel:
    """Test double of the run's model: no tool turns of its own (the workflow picks them); the reader's
    answer by the question it is asked (`READS`); a replay of given calls for the model policy; tokens
    counted as words."""

    name = "word-model"

    def __init__(self, replay: list[list[ToolCall]] | None = None) -> None:
        self.replay = list(replay or [])

    def chat(self, messages: list[Message], *, tools=None, json_schema=None, **kw) -> ChatResponse:
        if json_schema is not None:  # a bridge split: none (the rule split is used)
            return ChatResponse(message=Message(role="assistant", content="{}"), parsed={}, model=self.name)
        if tools:
            calls = [c.model_copy(deep=True) for c in self.replay.pop(0)]
            return ChatResponse(message=Message(role="assistant", content="", tool_calls=calls), model=self.name)
        asked = messages[-1].content
        text = next((a for key, a in READS.items() if key in asked), "Insufficient information")
        return ChatResponse(message=Message(role="assistant", content=text), model=self.name)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def count_message_tokens(self, messages: list[Message], tools=None) -> int:
        text = " ".join(m.content + json.dumps([c.to_openai() for c in m.tool_calls]) for m in messages)
        return self.count_tokens(text) + self.count_tokens(json.dumps([t.to_openai() for t in tools or []]))


def _names(row: dict) -> list[str]:
    return [c["function"]["name"] for m in row["completion"] for c in m.get("tool_calls") or []]


def test_rows_are_the_prompts_the_model_policy_is_given(lexical_backend) -> None:
    q = TrainingQuestion(id="r1", question=REPAIRS, golds=["Mara Quill"])
    [traj] = policy_trajectories([q], policy_run_fn(lexical_backend, WordModel(), OPTS), MemoryWorkflow)
    assert judge(traj).accepted and traj.teacher == "workflow-teacher"
    rows = trajectory_rows(traj)
    assert [_names(r) for r in rows] == [["search"], ["read"], ["answer"]]  # the workflow's own calls
    assert all("suggested:" not in m["content"] for r in rows for m in r["prompt"])
    # the model policy, replaying the same calls, is given the same prompts and tools at every turn
    rec = RecordingChatModel(WordModel([c.calls for c in traj.calls]))
    opts = OPTS.model_copy(update={"suggest": False})
    replay = run_agent(REPAIRS, AgentDeps(rec, lexical_backend), opts, policy=ModelPolicy()).run
    assert replay.answer == traj.run.answer == "Mara Quill" and len(rec.calls) == len(traj.calls) == 3
    for teacher, student in zip(traj.calls, rec.calls, strict=True):
        assert teacher.messages == student.messages and teacher.tools == student.tools


class CharCounter(WordModel):
    """The student's tokenizer in these tests: one token per character."""

    def count_tokens(self, text: str) -> int:
        return len(text)


def test_the_turns_count_in_the_students_tokens(lexical_backend) -> None:
    q = TrainingQuestion(id="r1", question=REPAIRS, golds=["Mara Quill"])
    student = CharCounter()
    model = CountedBy(WordModel(), student)
    [traj] = policy_trajectories([q], policy_run_fn(lexical_backend, model, OPTS), MemoryWorkflow)
    assert traj.run.answer == "Mara Quill"  # read by the wrapped model
    samples = traj.run.counters.context_samples
    assert samples == [student.count_message_tokens(c.messages, c.tools) for c in traj.calls]
    assert samples[0] > 2 * WordModel().count_message_tokens(traj.calls[0].messages, traj.calls[0].tools)


def test_a_prompt_that_shows_a_suggestion_is_refused(lexical_backend) -> None:
    deps = AgentDeps(WordModel(), lexical_backend)
    with pytest.raises(SuggestionInPrompt, match="suggested: search"):
        run_agent(REPAIRS, deps, OPTS.model_copy(update={"suggest": True}), policy=RecordingPolicy(WorkflowPolicy()))


def _cross_ref_task() -> str:
    text = (ROOT / "tests/fixtures/tiny_corpus/03-repairs.md").read_text(encoding="utf-8")
    passage = Passage(passage_id="03-repairs", title="Riverside Road Reopens", text=text)
    detail = Detail("number", "410,000", text.index("410,000"))
    return render_request([REPAIRS, STORM, question_for(1, passage, detail)])


def _long_run(backend, budget: int):
    q = TrainingQuestion(id="long", question=_cross_ref_task(), golds=["Mara Quill"],
                         items=[["Mara Quill"], ["Aldwick council"], ["410,000"]])  # fmt: skip
    opts = OPTS.model_copy(update={"context_budget": budget, "max_steps": 20})
    [traj] = policy_trajectories([q], policy_run_fn(backend, WordModel(), opts), MemoryWorkflow)
    return traj, [c.name for s in traj.run.steps for c in s.assistant.tool_calls]


def _tight_run(backend):
    """The long task under a budget whose half item 2's start passes (the memory wrapper folds there)."""
    roomy, calls = _long_run(backend, 100_000)
    traj, _ = _long_run(backend, int(roomy.run.counters.context_samples[calls.index("answer") + 1] * 1.9))
    return traj


def test_the_memory_wrapper_folds_past_half_the_budget_and_unfolds_for_a_cross_reference(lexical_backend) -> None:
    roomy, calls = _long_run(lexical_backend, 100_000)  # never past half: the workflow's calls alone
    assert "fold" not in calls and "unfold" not in calls and calls.count("answer") == 3
    assert judge(roomy).accepted
    # item 2 starts at the turn after the first answer: a budget its context passes the half of
    start = roomy.run.counters.context_samples[calls.index("answer") + 1]
    budget = int(start * 1.9)
    tight, calls = _long_run(lexical_backend, budget)
    folds = [i for i, name in enumerate(calls) if name == "fold"]
    assert folds and folds[0] == calls.index("answer") + 1  # at item 2's start
    samples = tight.run.counters.context_samples  # the context of each turn, as the status line states it
    steps = tight.run.steps
    for i in folds:  # at an item's start: the item just answered, one block each
        assert samples[i] > 0.5 * budget
        if calls[i - 1] == "answer":
            answered = steps[i - 1].assistant.tool_calls[0].arguments["item"]
            assert steps[i].assistant.tool_calls[0].arguments == {"target": f"item{answered}"}
        else:  # before the cross-reference unfold: the open item's own steps make room
            assert calls[i + 1] == "unfold"
            assert steps[i].assistant.tool_calls[0].arguments == {"target": f"item{len(tight.run.plan.sub_questions)}"}
    assert steps[folds[0]].assistant.tool_calls[0].arguments == {"target": "item1"}
    # the cross-reference item: its detail lies in item 1's folded search, unfolded before its answer
    unfolds = [i for i, name in enumerate(calls) if name == "unfold"]
    assert unfolds and calls[unfolds[0]:] == ["unfold"] * len(unfolds) + ["answer"]
    item1 = tight.run.plan.sub_questions[0].steps
    assert all(tight.run.memory.covering(n) is None for n in item1)
    assert [sq.answer for sq in tight.run.plan.sub_questions] == ["Mara Quill", "Aldwick council", "410,000"]
    verdict = judge(tight)
    assert verdict.accepted, verdict.reason
    rows = trajectory_rows(tight)
    assert ["fold"] in [_names(r) for r in rows] and ["unfold"] in [_names(r) for r in rows]


def test_a_long_task_is_judged_per_item(lexical_backend) -> None:
    traj, _ = _long_run(lexical_backend, 100_000)
    wrong = traj.model_copy(update={"items": [["Mara Quill"], ["Somewhere else"], ["410,000"]]})
    assert not judge(wrong).accepted and "items [2] of 3" in judge(wrong).reason


def test_a_long_task_with_a_wrong_item_may_be_kept_without_that_items_answer_turns(lexical_backend) -> None:
    """Kept when enough items are right: the wrong item's search, read and answer turns are no rows, while
    its memory turns (the fold at its start: a decision of the budget) and the other items' turns are."""
    tight = _tight_run(lexical_backend)
    wrong = tight.model_copy(update={"items": [["Mara Quill"], ["Somewhere else"], ["410,000"]]})
    assert not judge(wrong, AcceptConfig(min_items_right=0.7)).accepted  # 2 of 3 right < .7
    verdict = judge(wrong, AcceptConfig(min_items_right=0.6))
    assert verdict.accepted and verdict.wrong_items == [2]
    item2 = {n for n, item in step_items(tight.run.plan, tight.run.steps).items() if item == 2}
    steps = {s.n: [c.name for c in s.assistant.tool_calls] for s in tight.run.steps}
    assert "fold" in [steps[n][0] for n in item2] and "answer" in [steps[n][0] for n in item2]
    all_rows, rows = trajectory_rows(tight), trajectory_rows(wrong, verdict.wrong_items)
    dropped = [r for r in all_rows if r not in rows]
    assert dropped and {tuple(_names(r)) for r in dropped} <= {("search",), ("read",), ("resolve",), ("answer",)}
    assert ["fold"] in [_names(r) for r in rows] and ["unfold"] in [_names(r) for r in rows]
    answered = [json.loads(c["function"]["arguments"]).get("item") for r in rows for m in r["completion"]
                for c in m.get("tool_calls") or [] if c["function"]["name"] == "answer"]  # fmt: skip
    assert sorted(answered) == [1, 3]


def test_the_manifest_counts_the_rows_calling_each_tool(lexical_backend, tmp_path: Path) -> None:
    q = TrainingQuestion(id="r1", question=REPAIRS, golds=["Mara Quill"])
    trajs = policy_trajectories([q], policy_run_fn(lexical_backend, WordModel(), OPTS), MemoryWorkflow)
    manifest = write_dataset(trajs, tmp_path)
    assert manifest.tool_rows["search"] == manifest.tool_rows["read"] == manifest.tool_rows["answer"] == 1
    assert manifest.tool_rows["fold"] == manifest.tool_rows["timeline"] == 0  # offered, never called
    saved = json.loads((tmp_path / "manifest.json").read_text())
    assert saved["tool_rows"] == manifest.tool_rows and sum(saved["tool_rows"].values()) == manifest.rows


def test_benchmark_questions_are_refused_and_the_shipped_workflow_config_loads() -> None:
    multihop = ROOT / "data" / "multihop"
    for name in ("hotpotqa_train100", "musique_train100"):
        with pytest.raises(ValidationError, match="benchmark questions"):
            QuestionsSection(path=multihop / name, offset=19)
        assert QuestionsSection(path=multihop / name, offset=20).offset == 20
    assert QuestionsSection(path=multihop / "2wiki").offset == 0  # no benchmark of its first questions
    cfg = load_config(ROOT / "training" / "configs" / "sft_workflow.toml", SFTRunConfig)
    assert cfg.teacher.backend == "workflow" and cfg.questions is not None and cfg.questions.offset >= 20


def test_long_tasks_are_built_from_the_training_questions_alone() -> None:
    from agent.briefing import briefing_plan
    from training.corpus import load_questions
    from training.sft.teachers import long_questions

    qs, dataset = load_questions(QuestionsSection(path=ROOT / "data/multihop/hotpotqa_train100", offset=20, limit=20))
    tasks = long_questions(dataset, 2, 4, 1)
    assert len(tasks) == 2 and all(len(t.items) == 5 for t in tasks)  # 4 questions and a cross-reference
    golds = {" ".join(q.question.split()): q.golds for q in qs}
    for t in tasks:
        plan = briefing_plan(t.question)
        assert plan is not None and len(plan.sub_questions) == 5
        assert all(golds[sq.text] == g for sq, g in zip(plan.sub_questions[:4], t.items, strict=False))
        assert plan.sub_questions[4].text.startswith("Question ")  # refers to an earlier item
