"""Score a policy the way it will be used: the real agent (``agent.runner.run_agent``) with the model
behind a ``ChatModel`` (the student through ``eventfold.llm.transformers_backend.HFChatModel``), over
held-out questions, with the RL reward.

Per question: the episode reward (``training.rl.rewards``: correctness - context cost + format),
EM/F1, whether ``answer()`` ended the run (not the framework's forced answer), the model's turns and
how many were valid tool calls (parsed and executed without error), folds/unfolds by the model,
safety-net folds of the budget guard, peak rendered context, and whether the run came under budget
pressure (its context passed ``pressure`` x budget at some turn, or the guard had to fold), and the
model's turns in order (``calls``: each call's tool name, ``!`` marking one that failed, ``invalid`` a turn
without a usable call, ``forced`` the framework's forced answer) with what each failure said (``errors``).
``summarize`` averages them; ``fold_rate_under_pressure`` is the share of pressured runs in which the
model folded on its own. ``evaluate_policy`` can append each score to a JSONL file and skip the
questions already there, so a long evaluation resumes where it stopped.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent.state import RunState
from eventfold.run_options import RunOptions
from training.rl.rewards import EpisodeOutcome, RewardConfig, episode_reward
from training.sft.data import TrainingQuestion, agent_run_fn, is_error_result, valid_turns

PRESSURE = 0.6  # a run whose context passed this share of the budget was under budget pressure


class EpisodeScore(BaseModel):
    qid: str
    reward: float
    em: float
    f1: float
    answered: bool
    folds: int
    unfolds: int
    guard_folds: int
    invalid_turns: int
    tool_errors: int
    steps: int
    peak_context_tokens: int
    turns: int = 0
    valid_calls: int = 0
    pressure: bool = False
    answer: str | None = None
    seconds: float = 0.0
    calls: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)


_ERROR_CHARS = 160


def turn_calls(run: RunState) -> tuple[list[str], list[str]]:
    """The model's turns in order as tool names (``!``: the call failed; ``invalid``: no usable call;
    ``forced``: the framework answered for it) and, for each failure, the first characters of what
    the tool (or the turn's text) said. The plan's seed search is not a model turn and is skipped."""
    calls: list[str] = []
    errors: list[str] = []
    for step in run.steps:
        if step.kind == "seed":
            continue
        if step.kind in ("invalid", "forced"):
            calls.append(step.kind)
            if step.kind == "invalid":
                errors.append("invalid: " + step.assistant.content.strip()[:_ERROR_CHARS])
            continue
        for i, call in enumerate(step.assistant.tool_calls):  # results come in call order (as `judge` reads them)
            result = step.results[i] if i < len(step.results) else None
            bad = result is not None and is_error_result(result)
            calls.append(call.name + ("!" if bad else ""))
            if bad:
                errors.append(f"{call.name}: " + result.content.strip()[:_ERROR_CHARS])
    return calls, errors


def score_run(
    qid: str, run: RunState, golds: list[str], cfg: RewardConfig, budget: int | None = None, pressure: float = PRESSURE
) -> EpisodeScore:
    c = run.counters
    out = EpisodeOutcome(
        answer=run.answer if run.status == "answered" else None, golds=golds, peak_context_tokens=c.peak_context_tokens,
        tool_calls=c.tool_calls, invalid_calls=c.tool_errors + c.invalid_turns, folds=c.folds, unfolds=c.unfolds,
    )
    r = episode_reward(out, cfg)
    turns, valid = valid_turns(run)
    calls, errors = turn_calls(run)
    budget = budget or cfg.context_budget
    pressured = c.guard_folds > 0 or any(t > pressure * budget for t in c.context_samples)
    return EpisodeScore(
        qid=qid, reward=r.total, em=r.em, f1=r.f1, answered=out.answer is not None, folds=c.folds, unfolds=c.unfolds,
        guard_folds=c.guard_folds, invalid_turns=c.invalid_turns, tool_errors=c.tool_errors, steps=len(run.steps),
        peak_context_tokens=c.peak_context_tokens, turns=turns, valid_calls=valid, pressure=pressured,
        answer=run.answer, calls=calls, errors=errors,
    )


def evaluate_policy(
    model: Any,
    questions: Sequence[TrainingQuestion],
    backend: Any,
    options: RunOptions,
    reward: RewardConfig,
    *,
    log_path: Path | None = None,
    deadline: float | None = None,
    on_score: Any = None,
) -> list[EpisodeScore]:
    """Run the agent with ``model`` (a ChatModel) on each question and score the episodes.

    With ``log_path`` every score is appended as one JSON line and questions already there are not
    run again; ``deadline`` (a ``time.time()`` value) stops before starting a question after it."""
    run = agent_run_fn(backend, options)
    done: dict[str, EpisodeScore] = {}
    if log_path is not None and log_path.is_file():
        for line in log_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                s = EpisodeScore.model_validate_json(line)
                done[s.qid] = s
    scores = []
    for q in questions:
        if q.id in done:
            scores.append(done[q.id])
            continue
        if deadline is not None and time.time() > deadline:
            break
        t = time.perf_counter()
        score = score_run(q.id, run(q.question, model), q.golds, reward, options.context_budget)
        score.seconds = time.perf_counter() - t
        scores.append(score)
        if log_path is not None:
            with log_path.open("a", encoding="utf-8") as f:
                f.write(score.model_dump_json() + "\n")
        if on_score is not None:
            on_score(score)
    return scores


def summarize(scores: Sequence[EpisodeScore]) -> dict[str, float]:
    if not scores:
        return {}
    n = len(scores)
    keys = ("reward", "em", "f1", "folds", "unfolds", "guard_folds", "invalid_turns", "tool_errors", "steps",
            "peak_context_tokens", "seconds")
    out = {k: sum(float(getattr(s, k)) for s in scores) / n for k in keys}
    out["answered"] = sum(s.answered for s in scores) / n
    turns = sum(s.turns for s in scores)
    out["valid_call_rate"] = sum(s.valid_calls for s in scores) / turns if turns else 0.0
    pressured = [s for s in scores if s.pressure]
    out["pressured_runs"] = float(len(pressured))
    out["fold_rate_under_pressure"] = sum(s.folds > 0 for s in pressured) / len(pressured) if pressured else 0.0
    out["n"] = float(n)
    return out


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _error_kind(error: str) -> str:
    """``search: error: you already searched '…' (step N)…`` for every repeated query, whatever it was;
    a turn without a usable call keeps its text (``invalid: <tool_call> {"name": "fold", …``)."""
    flat = " ".join(error.split())
    if flat.startswith("invalid:"):
        return flat[:72]
    return re.sub(r"\d+", "N", _QUOTED.sub("'…'", flat))[:72]


def call_profile(scores: Sequence[EpisodeScore]) -> dict[str, Any]:
    """What the model did with its turns over ``scores``: how often each tool was called (``name!``:
    failed), the tool sequence each run opened with most often, and the commonest kinds of failure
    (quoted values and numbers masked, first 72 characters). Scores written before ``calls`` existed
    count as no turns."""
    names = Counter(c for s in scores for c in s.calls)
    openings = Counter(" ".join(s.calls[:4]) for s in scores if s.calls)
    errors = Counter(_error_kind(e) for s in scores for e in s.errors)
    return {"calls": dict(names.most_common()), "openings": dict(openings.most_common(3)),
            "errors": dict(errors.most_common(5))}


def write_scores(path: Path, scores: Sequence[EpisodeScore]) -> None:
    path.write_text("".join(json.dumps(s.model_dump()) + "\n" for s in scores), encoding="utf-8")
