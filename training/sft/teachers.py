"""Teachers for SFT data: an LLM through the real agent (rejection-sampled by ``training.sft.data.judge``)
mixed with a privileged oracle where the LLM yields too few kept trajectories.

``OracleTeacher`` is scripted with privileged information (the gold supporting titles and the gold
answer): it searches each supporting title, folds all completed steps once the status line's context
passes ``FOLD_SHARE`` of the budget (``fold(target="all")``: the status line states the tokens and the
targets, never asks for a fold), then answers (and at the last step answers whatever is left). Its trajectories still go through the real agent,
tools and corpus (so the prompts, tool results, fold blocks and status lines are the real ones), and
its token counts use the student's tokenizer so the budget is in student tokens. It teaches the
format and *when* to fold, not how to research: that part comes from the LLM's kept trajectories.

On the questions in ``slips`` it makes the student's commonest mistake once: at its second step it
re-runs its first query (the agent allows one repeat and returns the same results). The slip turn is
never a training row (``training.sft.data.trajectory_rows`` drops repeated and failed turns); it puts
the states the student reaches after that mistake (one query searched, the fold cue on) into the data,
with the right next call. A student never shown those states re-runs its query into refusals.

``mixed_trajectories`` runs the LLM teacher on the first questions and the oracle on every question
the LLM did not produce a kept trajectory for (``fill="rejected"``) or on all (``fill="all"``).

The workflow teacher (``policy_trajectories`` with ``MemoryWorkflow``) is the scripted workflow policy
(``agent.policy.WorkflowPolicy``) run by the real agent, its turns recorded by ``RecordingPolicy`` as
the prompts the model policy is given alone (no suggestion line), its answers read by the run's model.
``MemoryWorkflow`` adds the memory decisions of a long task: at the start of an item, once the turn's
context (``RunState.counters.context_samples``) passes ``WORKFLOW_FOLD_SHARE`` of the budget, it
folds the item just answered (``itemN``: one block per item, so a later unfold restores that item
alone; "all" where no item target is valid); on a cross-reference item whose referred item's search
lies in a fold, it unfolds that fold before giving the workflow's answer, first folding the open
item's own finished steps when the context is past the share (room for what the unfold restores).
Single questions are unchanged.
``long_questions`` builds those long tasks from the training questions' own set
(``eval.longhorizon.tasks.build_tasks``) and judges them per item.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal

from agent.policy import Policy, PolicyContext, Turn, WorkflowPolicy
from agent.policy.workflow import item_steps
from agent.state import RunState
from agent.tools.fold import fold_targets
from eventfold.llm.types import ChatResponse, Message, ToolCall, ToolSpec
from training.sft.data import (
    AcceptConfig,
    RunFn,
    TeacherTrajectory,
    TrainingQuestion,
    TrajectoryRecord,
    collect,
    generate_trajectories,
    judge,
    recorded,
)
from training.sft.record import RecordingPolicy

_STEP = re.compile(r"\bstep (\d+) of (\d+)\b")  # the status line's head (agent.prompts.STATUS)
_CONTEXT = re.compile(r"\bcontext (\d+) of (\d+) tokens\b")
FOLD_SHARE = 0.6  # the oracle folds past this share of the budget
WORKFLOW_FOLD_SHARE = 0.5  # the workflow teacher folds at an item's start past this share


def fold_due(status: str) -> bool:
    """The status line shows the context past `FOLD_SHARE` of the budget and steps left to fold."""
    m = _CONTEXT.search(status)
    return m is not None and int(m.group(1)) > FOLD_SHARE * int(m.group(2)) and "fold targets: all (" in status


def _key(text: str) -> str:
    return " ".join(text.split())


class StudentTokens:
    """Token counts by ``counter`` (the student's tokenizer: a status line's budget in the tokens the
    student counts at inference)."""

    counter: Any

    def count_tokens(self, text: str) -> int:
        return int(self.counter.count_tokens(text))

    def count_message_tokens(self, messages: list[Message], tools: Any = None) -> int:
        return int(self.counter.count_message_tokens(messages, tools))


class OracleTeacher(StudentTokens):
    """Scripted teacher with the gold titles and answer (see module docstring)."""

    def __init__(self, counter: Any, plans: dict[str, tuple[list[str], str]], slips: Collection[str] = ()):
        self.name = "oracle-teacher"
        self.counter = counter
        self.plans = {_key(q): p for q, p in plans.items()}
        self.slips = {_key(q) for q in slips}
        self._done: dict[str, list[str]] = {}
        self._slipped: set[str] = set()

    def chat(self, messages: list[Message], *, tools: Any = None, **kw: Any) -> ChatResponse:
        key = self._question(messages)
        titles, gold = self.plans[key]
        if not tools:
            return ChatResponse(message=Message(role="assistant", content=gold), model=self.name)
        done = self._done.setdefault(key, [])
        blocks = [m for m in messages if m.role == "user" and m.content.startswith("## [F")]
        steps = sum(1 for m in messages if m.role == "assistant") + len(blocks)
        status = messages[-1].content if messages[-1].role == "user" else ""
        todo = [t for t in titles if t not in done]
        last = (m := _STEP.search(status)) is not None and m.group(1) == m.group(2)
        if last:  # the last step: answer with what is there (a fold or search would end without one)
            call = ToolCall(id=f"o{steps}", name="answer", arguments={"answer": gold})
        elif fold_due(status):  # past the share of the budget: the decision the student must learn
            call = ToolCall(id=f"o{steps}", name="fold", arguments={"target": "all"})
        elif key in self.slips and key not in self._slipped and len(done) == 1:
            self._slipped.add(key)
            call = ToolCall(id=f"o{steps}", name="search", arguments={"query": done[0]})
        elif todo:
            done.append(todo[0])
            call = ToolCall(id=f"o{steps}", name="search", arguments={"query": todo[0]})
        else:
            call = ToolCall(id=f"o{steps}", name="answer", arguments={"answer": gold})
        return ChatResponse(message=Message(role="assistant", content="", tool_calls=[call]), model=self.name)

    def _question(self, messages: list[Message]) -> str:
        """The plan key of the question: the first user message, or (the framework's reader prompt when
        a run ends without an answer) the planned question its text quotes."""
        first = _key(next(m.content for m in messages if m.role == "user"))
        if first in self.plans:
            return first
        text = _key(" ".join(m.content for m in messages if m.role == "user"))
        return next(k for k in self.plans if k in text)


def slip_questions(questions: Sequence[TrainingQuestion], share: float) -> list[str]:
    """``share`` of the questions, evenly spaced (question i when floor((i + 1) * share) steps up; at .5 every
    2nd, starting with the second), for ``OracleTeacher.slips``."""
    return [q.question for i, q in enumerate(questions) if math.floor((i + 1) * share) > math.floor(i * share)]


def oracle_plans(questions: Sequence[TrainingQuestion], dataset: Any = None) -> dict[str, tuple[list[str], str]]:
    """Gold titles (from a dataset folder; else the question itself as the one search) and answer."""
    titles = {e.qid: list(e.gold_titles) for e in dataset.examples} if dataset is not None else {}
    return {q.question: (titles.get(q.id) or [q.question], q.golds[0]) for q in questions}


def mixed_trajectories(
    questions: Sequence[TrainingQuestion],
    run_fn: RunFn,
    *,
    llm: Any | None,
    llm_n: int | None,
    oracle: OracleTeacher | None,
    fill: Literal["rejected", "all", "none"] = "rejected",
    accept: AcceptConfig | None = None,
    on_done: Callable[[TeacherTrajectory], None] | None = None,
    workers: int = 1,
    log: TrajectoryRecord | None = None,
) -> list[TeacherTrajectory]:
    """LLM trajectories on the first ``llm_n`` questions (all when None), then the oracle per ``fill``
    (``log``: the partial record, see ``training.sft.data.collect``)."""
    trajs: list[TeacherTrajectory] = []
    if llm is not None:
        first = list(questions if llm_n is None else questions[:llm_n])
        trajs += generate_trajectories(first, run_fn, llm, workers=workers, on_done=on_done, log=log)
    if oracle is None or fill == "none":
        return trajs
    kept = {t.question_id for t in trajs if judge(t, accept).accepted}
    todo = [q for q in questions if fill == "all" or q.id not in kept]
    return trajs + generate_trajectories(todo, run_fn, oracle, on_done=on_done, log=log)


# --- the workflow teacher -------------------------------------------------------------------------

PolicyRunFn = Callable[[str, Policy], RunState]


class MemoryWorkflow:
    """The workflow policy with a long task's fold and unfold decisions (see module docstring)."""

    def __init__(self, inner: Policy | None = None, share: float = WORKFLOW_FOLD_SHARE) -> None:
        self.inner = inner or WorkflowPolicy()
        self.name = self.inner.name
        self.share = share
        self._held: Turn | None = None  # the workflow's answer, given after the unfold it waited for

    def next_call(self, run: RunState, specs: list[ToolSpec], ctx: PolicyContext) -> Turn:
        offered = {s.name for s in specs if s.available}
        turn, self._held = self._held, None
        if turn is None:
            target = self.fold_due(run, ctx) if "fold" in offered else None
            if target is not None:
                return _fold(target, run)
            turn = self.inner.next_call(run, specs, ctx)
            if not any(c.name == "answer" for c in turn.calls):
                return turn
        fold_id = self.needed_fold(run) if "unfold" in offered else None  # a nested fold comes next
        if fold_id is None:
            return _numbered(turn, run)
        self._held = turn
        own = self.room_for_unfold(run, ctx) if "fold" in offered else None
        if own is not None:  # the open item's search and reads make way for the steps the unfold restores
            return _fold(own, run)
        return _numbered(Turn(calls=[ToolCall(id="", name="unfold", arguments={"fold_id": fold_id})]), run)

    def _past_share(self, run: RunState, ctx: PolicyContext) -> bool:
        used = run.counters.context_samples[-1] if run.counters.context_samples else 0
        return used > self.share * ctx.options.context_budget

    def fold_due(self, run: RunState, ctx: PolicyContext) -> str | None:
        """The target to fold when a long task's item starts (no step since the last answer) with this
        turn's context past the share of the budget: the item just answered, else all finished steps."""
        if not run.plan.sub_questions or item_steps(run) or not self._past_share(run, ctx):
            return None
        targets = fold_targets(run)
        answered = [sq.id for sq in run.plan.sub_questions if sq.done and f"item{sq.id}" in targets]
        last = max(answered, key=lambda i: targets[f"item{i}"][1], default=None)
        return f"item{last}" if last is not None else ("all" if "all" in targets else None)

    def room_for_unfold(self, run: RunState, ctx: PolicyContext) -> str | None:
        """The open item's own target, when the context is past the share before an unfold and the item
        has research steps still shown (once folded, its span holds only that fold)."""
        item = next(iter(run.plan.open()), None)
        span = fold_targets(run).get(f"item{item.id}") if item is not None else None
        if span is None or not self._past_share(run, ctx):
            return None
        shown = [s for s in run.steps[span[0] - 1 : span[1]] if run.memory.covering(s.n) is None
                 and not any(c.name in ("fold", "unfold") for c in s.assistant.tool_calls)]  # fmt: skip
        return f"item{item.id}" if shown else None

    @staticmethod
    def needed_fold(run: RunState) -> str | None:
        """The active fold holding the search of the item the open cross-reference item refers to."""
        from eval.longhorizon.crossref import referred_item

        item = next(iter(run.plan.open()), None)
        ref = run.plan.get(referred_item(item.text)) if item is not None else None
        folds = [run.memory.covering(n) for n in (ref.steps if ref is not None else [])]
        return next((f.fold_id for f in folds if f is not None), None)


def _fold(target: str, run: RunState) -> Turn:
    return _numbered(Turn(calls=[ToolCall(id="", name="fold", arguments={"target": target})]), run)


def _numbered(turn: Turn, run: RunState) -> Turn:
    for call in turn.calls:
        call.id = f"wf_{run.next_step}"
    return turn


def policy_trajectories(
    questions: Sequence[TrainingQuestion],
    run_fn: PolicyRunFn,
    policy: Callable[[], Policy],
    *,
    workers: int = 1,
    on_done: Callable[[TeacherTrajectory], None] | None = None,
    log: TrajectoryRecord | None = None,
) -> list[TeacherTrajectory]:
    """Run the agent with a fresh ``policy()`` per question, its turns recorded (``RecordingPolicy``);
    ``log``: the partial record (``training.sft.data.collect``)."""
    teacher = policy_teacher(policy)

    def one(q: TrainingQuestion) -> TeacherTrajectory:
        rec = RecordingPolicy(policy())
        return recorded(q, teacher, rec.calls, run_fn(q.question, rec), rec.errors)

    return collect(questions, one, teacher=teacher, workers=workers, on_done=on_done, log=log)


def policy_teacher(policy: Callable[[], Policy]) -> str:
    """The teacher name of a policy's trajectories."""
    return f"{policy().name}-teacher"


def policy_run_fn(backend: Any, model: Any, options: Any) -> PolicyRunFn:
    """A run of ``agent.runner.run_agent`` with the given policy and ``model`` (the reader's, and the token
    counts'); without suggestions, as the model policy runs alone."""
    from agent.graph import AgentDeps
    from agent.runner import run_agent

    def run(question: str, policy: Policy) -> RunState:
        opts = options.model_copy(update={"suggest": False})
        return run_agent(question, AgentDeps(model=model, backend=backend), opts, policy=policy).run

    return run


class CountedBy(StudentTokens):
    """A chat model (the workflow's reader) whose token counts are the student's."""

    def __init__(self, inner: Any, counter: Any) -> None:
        self.inner, self.counter, self.name = inner, counter, inner.name

    def chat(self, messages: list[Message], **kw: Any) -> ChatResponse:
        return self.inner.chat(messages, **kw)


def long_questions(dataset: Any, count: int, k: int, cross_refs: int, seed: int = 0) -> list[TrainingQuestion]:
    """``count`` long tasks of ``k`` items (plus ``cross_refs`` cross-reference items) from the training
    questions' dataset, each judged per item."""
    from eval.longhorizon.tasks import build_tasks

    if count < 1:
        return []
    tasks = build_tasks(dataset, [k], count, seed=seed, cross_refs=cross_refs)
    return [TrainingQuestion(id=t.task_id, question=t.request, golds=t.sub_questions[0].answers,
                             items=[sq.answers for sq in t.sub_questions]) for t in tasks]  # fmt: skip
