"""Score a policy the way it will be used: the real agent (``agent.runner.run_agent``) with the model
behind a ``ChatModel`` (the student through ``eventfold.llm.transformers_backend.HFChatModel``), over
held-out questions, with the RL reward.

Per question: the episode reward (``training.rl.rewards``: correctness - context cost + format),
EM/F1, whether ``answer()`` ended the run (not the framework's forced answer), the model's turns and
how many were valid tool calls (parsed and executed without error), folds/unfolds by the model,
safety-net folds of the budget guard, peak rendered context, and whether the run came under budget
pressure (its context passed ``pressure`` x budget at some turn, or the guard had to fold).
``summarize`` averages them; ``fold_rate_under_pressure`` is the share of pressured runs in which the
model folded on its own. ``evaluate_policy`` can append each score to a JSONL file and skip the
questions already there, so a long evaluation resumes where it stopped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.state import RunState
from eventfold.run_options import RunOptions
from training.rl.rewards import EpisodeOutcome, RewardConfig, episode_reward
from training.sft.data import TrainingQuestion, agent_run_fn


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


def score_run(
    qid: str, run: RunState, golds: list[str], cfg: RewardConfig, budget: int | None = None, pressure: float = 0.6
) -> EpisodeScore:
    c = run.counters
    out = EpisodeOutcome(
        answer=run.answer if run.status == "answered" else None, golds=golds, peak_context_tokens=c.peak_context_tokens,
        tool_calls=c.tool_calls, invalid_calls=c.tool_errors + c.invalid_turns, folds=c.folds, unfolds=c.unfolds,
    )
    r = episode_reward(out, cfg)
    turns = [s for s in run.steps if s.kind in ("action", "invalid")]
    valid = sum(
        1 for s in turns if s.kind == "action" and not any(m.content.lstrip().lower().startswith("error") for m in s.results)
    )
    budget = budget or cfg.context_budget
    pressured = c.guard_folds > 0 or any(t > pressure * budget for t in c.context_samples)
    return EpisodeScore(
        qid=qid, reward=r.total, em=r.em, f1=r.f1, answered=out.answer is not None, folds=c.folds, unfolds=c.unfolds,
        guard_folds=c.guard_folds, invalid_turns=c.invalid_turns, tool_errors=c.tool_errors, steps=len(run.steps),
        peak_context_tokens=c.peak_context_tokens, turns=len(turns), valid_calls=valid, pressure=pressured,
        answer=run.answer,
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


def write_scores(path: Path, scores: Sequence[EpisodeScore]) -> None:
    path.write_text("".join(json.dumps(s.model_dump()) + "\n" for s in scores), encoding="utf-8")
