"""Teacher trajectories -> chat-with-tools SFT dataset (JSONL + manifest).

1. ``generate_trajectories``: the real agent (``agent.runner.run_agent``) answers training questions
   with a teacher model (any `ChatModel`: an OpenAI-compatible endpoint, the local llama.cpp model,
   or a Hugging Face model through ``eventfold.llm.transformers_backend``) under a tight context budget; a
   ``RecordingChatModel`` keeps the exact prompt of every agent turn.
2. ``judge``: rejection sampling. A trajectory is kept only when it ended with ``answer()``, the
   answer is correct (EM, or F1 >= threshold, against the gold aliases), it has no invalid turn, no
   failed fold/unfold, no tool error beyond the allowance, no safety-net fold by the budget guard
   (the teacher must fold by itself), no fold unfolded again at the very next step (thrashing),
   and, optionally, at least one fold. Every rejection carries its reason.
3. ``trajectory_rows``: one prompt-completion row per agent turn that neither failed nor re-ran an
   earlier search (those stay in later rows' prompts, never as targets): ``prompt`` = the messages the
   teacher saw (rendered context: folded ranges as blocks, plus the status line), ``completion`` =
   the assistant turn with its tool calls as executed, ``tools`` = the JSON schemas (a JSON string,
   which TRL's SFTTrainer parses). Tool-call arguments are JSON strings so the Arrow schema stays
   uniform across tools; the Qwen/TRL templates render strings verbatim.
4. ``write_dataset``: ``train.jsonl``, ``trajectories.jsonl`` (all, with verdicts) and ``manifest.json``
   (source questions, teacher, acceptance rate, rejection reasons, fold/unfold counts, rows).

Loss masking: SFT trains with ``assistant_only_loss`` (and completion-only loss), so prompts and
tool results are never trained; ``training.sft.mask.assistant_mask_report`` checks this with the
tokenizer's training chat template.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agent.memory.trajectory import Step
from agent.plan import step_items
from agent.state import RunState
from agent.tools.search import normalize_query
from eventfold.llm.transformers_backend import hf_message, hf_messages, hf_tools
from eventfold.llm.types import ChatModel, Message, ToolCall
from training.rl.rewards import correctness
from training.sft.record import RecordingChatModel, TeacherCall


class TrainingQuestion(BaseModel):
    id: str
    question: str
    golds: list[str]
    # a long task (a request of numbered items): each item's gold answers, in order; judged per item
    items: list[list[str]] = Field(default_factory=list)


class AcceptConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_f1: float = Field(0.8, ge=0.0, le=1.0, description="kept when EM = 1 or F1 >= min_f1")
    max_tool_errors: int = Field(0, ge=0)
    allow_guard_folds: bool = False
    require_fold: bool = False
    # a long task is kept when this share of its items is right; the turns of a wrong item, its memory
    # calls (fold, unfold: decided by the budget, not by the item's answer) aside, are no rows
    min_items_right: float = Field(1.0, ge=0.0, le=1.0)


class TeacherTrajectory(BaseModel):
    question_id: str
    question: str
    golds: list[str]
    teacher: str
    calls: list[TeacherCall]
    run: RunState
    items: list[list[str]] = Field(default_factory=list)  # a long task's per-item golds (TrainingQuestion)
    llm_errors: list[str] = Field(default_factory=list)  # the run's failed model calls (the recorder's errors)


class Verdict(BaseModel):
    accepted: bool
    reason: str = "accepted"
    em: float = 0.0
    f1: float = 0.0
    wrong_items: list[int] = Field(default_factory=list)  # a kept long task's items whose turns are no rows


_FOLD_ID = re.compile(r"\binto (F\d+)")


def is_error_result(msg: Message) -> bool:
    """A tool result that reports a failed call (the agent's tools answer those with "error: ...")."""
    return msg.content.lstrip().lower().startswith("error")


def valid_turns(run: RunState) -> tuple[int, int]:
    """(model turns, turns whose call ran without error): the valid-call rate's terms (the plan's seed
    search and framework-forced answers are not model turns)."""
    turns = [s for s in run.steps if s.kind in ("action", "invalid")]
    valid = sum(1 for s in turns if s.kind == "action" and not any(is_error_result(m) for m in s.results))
    return len(turns), valid


def judge(traj: TeacherTrajectory, cfg: AcceptConfig | None = None) -> Verdict:
    """Keep or reject one trajectory, with the first reason that rejects it."""
    cfg = cfg or AcceptConfig()
    run = traj.run
    em, f1, wrong, bad = answer_scores(traj, cfg)

    def no(reason: str) -> Verdict:
        return Verdict(accepted=False, reason=reason, em=em, f1=f1, wrong_items=bad)

    if run.status != "answered" or not run.answer:
        return no(f"no answer: run ended with status {run.status!r} ({run.stop_reason or 'no reason given'})")
    if wrong:
        return no(wrong)
    turns = [s for s in run.steps if s.kind in ("action", "invalid")]
    if len(turns) != len(traj.calls):
        return no(f"recording mismatch: {len(traj.calls)} recorded agent calls for {len(turns)} steps")
    errors = 0
    last_fold: tuple[int, str] | None = None
    for step in run.steps:
        if step.kind == "invalid":
            return no(f"invalid turn at step {step.n} (no usable tool call)")
        for call, res in zip(step.assistant.tool_calls, step.results, strict=False):
            if call.name in ("fold", "unfold") and is_error_result(res):
                return no(f"invalid {call.name} at step {step.n}: {res.content[:160]}")
            if call.name == "unfold" and last_fold is not None and last_fold[0] == step.n - 1:
                fid = str(call.arguments.get("fold_id", "")).strip("[] ").upper()
                if fid == last_fold[1]:
                    return no(f"fold thrash: {fid} unfolded at step {step.n} right after folding it")
            if call.name == "fold" and not is_error_result(res):
                m = _FOLD_ID.search(res.content)
                last_fold = (step.n, m.group(1).upper() if m else "")
            errors += int(is_error_result(res))
    if errors > cfg.max_tool_errors:
        return no(f"{errors} tool errors (allowed {cfg.max_tool_errors})")
    if run.counters.guard_folds and not cfg.allow_guard_folds:
        return no(f"the budget guard folded {run.counters.guard_folds} time(s): the teacher let the context overflow")
    if cfg.require_fold and run.counters.folds == 0:
        return no("no fold used (require_fold)")
    return Verdict(accepted=True, em=em, f1=f1, wrong_items=bad)


def answer_scores(traj: TeacherTrajectory, cfg: AcceptConfig) -> tuple[float, float, str, list[int]]:
    """(EM, F1, why wrong or "", wrong items) of the run's answer; a long task's are the means over its
    items, and it is wrong when fewer than ``min_items_right`` of its items are right (EM 1 or F1 at least
    ``min_f1``)."""
    run = traj.run
    if not traj.items:
        _, em, f1 = correctness(run.answer, traj.golds, "f1")
        ok = em >= 1.0 or f1 >= cfg.min_f1
        why = f"wrong answer {run.answer!r} (gold {traj.golds[:3]!r}; EM 0, F1 {f1:.2f} < {cfg.min_f1:.2f})"
        return em, f1, "" if ok else why, []
    answers = {sq.id: sq.answer for sq in run.plan.sub_questions}
    scores = [correctness(answers.get(n), golds, "f1")[1:] for n, golds in enumerate(traj.items, 1)]
    bad = [n for n, (em, f1) in enumerate(scores, 1) if em < 1.0 and f1 < cfg.min_f1]
    em, f1 = (sum(x[i] for x in scores) / len(scores) for i in (0, 1))
    ok = 1 - len(bad) / len(scores) >= cfg.min_items_right - 1e-9
    why = f"wrong answer on items {bad} of {len(scores)} (F1 below {cfg.min_f1:.2f})"
    return em, f1, "" if ok else why, bad


def untrained_turn(step: Step, run: RunState) -> bool:
    """A turn that is no training target: a call failed, or a search re-ran a query that an earlier step
    ran (the run's own record of its queries, ``RunState.queries``, the plan's seed search included)."""

    def repeat(call: ToolCall) -> bool:
        steps = run.queries.get(normalize_query(str(call.arguments.get("query", ""))), [step.n])
        return call.name == "search" and steps[0] < step.n

    return any(map(repeat, step.assistant.tool_calls)) or any(is_error_result(r) for r in step.results)


def row_tools(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool specs a row was recorded with (stored as a JSON string or a list)."""
    return json.loads(row["tools"]) if isinstance(row["tools"], str) else row["tools"]


def trajectory_rows(traj: TeacherTrajectory, wrong_items: Sequence[int] = ()) -> list[dict[str, Any]]:
    """One prompt-completion row per trained agent turn (prompt = what the teacher saw, completion = its
    call); failed and repeated turns (``untrained_turn``) and the non-memory turns of ``wrong_items`` (a
    long task's items answered wrong) are left out."""
    turns = [s for s in traj.run.steps if s.kind in ("action", "invalid")]
    skipped = {n for n, item in step_items(traj.run.plan, traj.run.steps).items() if item in wrong_items}
    rows = []
    for i, (call, step) in enumerate(zip(traj.calls, turns, strict=True)):
        memory = bool(calls := step.assistant.tool_calls) and all(c.name in ("fold", "unfold") for c in calls)
        if untrained_turn(step, traj.run) or (step.n in skipped and not memory):
            continue
        rows.append(
            {
                "prompt": hf_messages(call.messages, arguments_as_json=True),
                "completion": [hf_message(step.assistant, arguments_as_json=True)],
                "tools": json.dumps(hf_tools(call.tools) or [], ensure_ascii=False),
                "id": f"{traj.question_id}/turn{i + 1}",
            }
        )
    return rows


# --- generation -----------------------------------------------------------------------------------

RunFn = Callable[[str, ChatModel], RunState]


class TrajectoryRecord(Protocol):
    """What ``collect`` asks of a record of finished trajectories (``training.sft.resume.TrajectoryLog``)."""

    def recorded(self, teacher: str, question_id: str) -> TeacherTrajectory | None: ...

    def expect(self, teacher: str, questions: Sequence[TrainingQuestion]) -> None: ...

    def add(self, traj: TeacherTrajectory) -> None: ...


def generate_trajectories(
    questions: Sequence[TrainingQuestion],
    run_fn: RunFn,
    teacher: ChatModel,
    *,
    workers: int = 1,
    on_done: Callable[[TeacherTrajectory], None] | None = None,
    log: TrajectoryRecord | None = None,
) -> list[TeacherTrajectory]:
    """Run the agent on each question with a recording wrapper around the teacher.

    ``run_fn(question, model)`` runs the real agent and returns its final `RunState` (see
    ``agent_run_fn``); ``on_done`` sees each finished trajectory (progress); ``log`` see ``collect``."""

    def one(q: TrainingQuestion) -> TeacherTrajectory:
        rec = RecordingChatModel(teacher)
        return recorded(q, teacher.name, rec.calls, run_fn(q.question, rec), rec.errors)

    return collect(questions, one, teacher=teacher.name, workers=workers, on_done=on_done, log=log)


def recorded(
    q: TrainingQuestion, teacher: str, calls: list[TeacherCall], run: RunState, errors: Sequence[str] = ()
) -> TeacherTrajectory:
    """The trajectory of one question's run from its recorded turns (and failed model calls)."""
    return TeacherTrajectory(question_id=q.id, question=q.question, golds=q.golds, teacher=teacher, calls=calls,
                             run=run, items=q.items, llm_errors=list(errors))  # fmt: skip


def collect(
    questions: Sequence[TrainingQuestion],
    one: Callable[[TrainingQuestion], TeacherTrajectory],
    *,
    teacher: str = "",
    workers: int = 1,
    on_done: Callable[[TeacherTrajectory], None] | None = None,
    log: TrajectoryRecord | None = None,
) -> list[TeacherTrajectory]:
    """``one(q)`` on each question (``workers`` threads), each finished trajectory shown to ``on_done``, in
    question order. With a ``log`` (``training.sft.resume``) the questions it holds for ``teacher`` are
    taken from it, not run, and each trajectory run is given to it (recorded, progress shown); an
    exception of a run stops the others (those already finished stay recorded)."""
    have = {q.id: t for q in questions if log is not None and (t := log.recorded(teacher, q.id)) is not None}
    if log is not None:
        log.expect(teacher, questions)

    def done(q: TrainingQuestion) -> TeacherTrajectory:
        traj = one(q)
        if log is not None:
            log.add(traj)
        if on_done is not None:
            on_done(traj)
        return traj

    todo = [q for q in questions if q.id not in have]
    if workers <= 1:
        new = [done(q) for q in todo]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(done, q) for q in todo]
            try:
                new = [f.result() for f in futures]
            except BaseException:
                pool.shutdown(cancel_futures=True)
                raise
    ran = iter(new)
    return [have[q.id] if q.id in have else next(ran) for q in questions]


def agent_run_fn(backend: Any, options: Any) -> RunFn:
    """A ``run_fn`` driving ``agent.runner.run_agent`` with ``backend`` and ``options`` (RunOptions)."""
    from agent.graph import AgentDeps
    from agent.runner import run_agent

    def run(question: str, model: ChatModel) -> RunState:
        return run_agent(question, AgentDeps(model=model, backend=backend), options.model_copy()).run

    return run


# --- dataset --------------------------------------------------------------------------------------


class Manifest(BaseModel):
    created: str
    source: str
    teacher: str
    questions: list[str]
    trajectories: int
    accepted: int
    acceptance_rate: float
    rejection_reasons: dict[str, int]
    rows: int
    folds: int
    unfolds: int
    folds_per_accepted: float
    accept_config: AcceptConfig
    per_teacher: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="per teacher: trajectories, accepted, yield, rejection reasons"
    )
    tool_rows: dict[str, int] = Field(
        default_factory=dict, description="every tool the rows offer -> rows whose completion calls it (0: never)"
    )


def _reason_kind(reason: str) -> str:
    return reason.split(":")[0].split(" (")[0].split(" '")[0]


def write_dataset(
    trajectories: Iterable[TeacherTrajectory], out_dir: Path, *, source: str = "", cfg: AcceptConfig | None = None
) -> Manifest:
    """Judge, convert and write ``train.jsonl``, ``trajectories.jsonl`` and ``manifest.json``."""
    cfg = cfg or AcceptConfig()
    out_dir.mkdir(parents=True, exist_ok=True)
    trajs = list(trajectories)
    verdicts = [judge(t, cfg) for t in trajs]
    kept = [t for t, v in zip(trajs, verdicts, strict=True) if v.accepted]
    rows = [r for t, v in zip(trajs, verdicts, strict=True) if v.accepted for r in trajectory_rows(t, v.wrong_items)]
    with (out_dir / "train.jsonl").open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with (out_dir / "trajectories.jsonl").open("w", encoding="utf-8") as f:
        for t, v in zip(trajs, verdicts, strict=True):
            f.write(json.dumps({"verdict": v.model_dump(), "trajectory": t.model_dump(mode="json")}) + "\n")
    folds = sum(t.run.counters.folds for t in kept)
    manifest = Manifest(
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        source=source,
        teacher=", ".join(sorted({t.teacher for t in trajs})) or "none",
        questions=[t.question_id for t in trajs],
        trajectories=len(trajs),
        accepted=len(kept),
        acceptance_rate=len(kept) / len(trajs) if trajs else 0.0,
        rejection_reasons=dict(Counter(_reason_kind(v.reason) for v in verdicts if not v.accepted)),
        rows=len(rows),
        folds=folds,
        unfolds=sum(t.run.counters.unfolds for t in kept),
        folds_per_accepted=folds / len(kept) if kept else 0.0,
        accept_config=cfg,
        per_teacher=_per_teacher(trajs, verdicts),
        tool_rows=tool_rows(rows),
    )
    (out_dir / "manifest.json").write_text(manifest.model_dump_json(indent=1), encoding="utf-8")
    return manifest


def _per_teacher(trajs: list[TeacherTrajectory], verdicts: list[Verdict]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for t, v in zip(trajs, verdicts, strict=True):
        d = out.setdefault(t.teacher, {"trajectories": 0, "accepted": 0, "rejection_reasons": Counter()})
        d["trajectories"] += 1
        d["accepted"] += int(v.accepted)
        if not v.accepted:
            d["rejection_reasons"][_reason_kind(v.reason)] += 1
    for d in out.values():
        d["yield"] = d["accepted"] / d["trajectories"]
        d["rejection_reasons"] = dict(d["rejection_reasons"])
    return out


def tool_rows(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Per tool offered in any row: how many rows' completions call it (a tool never called: 0)."""
    names = {t["function"]["name"] for r in rows for t in row_tools(r)}
    counts = Counter(n for r in rows for n in {c["function"]["name"] for m in r["completion"]
                                                for c in m.get("tool_calls") or []})  # fmt: skip
    return {n: counts.get(n, 0) for n in sorted(names | set(counts))}


def read_trajectories(path: Path) -> list[TeacherTrajectory]:
    """Trajectories back from a ``trajectories.jsonl`` (to re-judge with other acceptance settings)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(TeacherTrajectory.model_validate(json.loads(line)["trajectory"]))
    return out
