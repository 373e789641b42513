"""Rubric judge for DeepResearch Bench II: items in batches to any `ChatModel`, strict JSON schema.

Each item is scored 1 (met), 0 (not met) or -1 (met only by relying on the blocked source). Items are
numbered and the judge answers by number (the official script makes the judge echo each item's text;
numbers are cheaper and cannot be mis-copied). Malformed output is repaired (`eventfold.llm.json_repair`,
plus salvage of the complete items of a truncated reply);
items still missing are asked again, up to `max_retries` times; items never judged are kept with
score None, counted as `unjudged`, and left out of the shares rather than guessed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from eval.deepresearch_bench import prompts
from eval.deepresearch_bench.loader import DRBTask
from eventfold.llm.json_repair import JSONRepairError, parse_json_lenient
from eventfold.llm.types import ChatModel, LLMError, Message

_FLAT_OBJECT = re.compile(r"\{[^{}\[\]]*\}")
_WORD_SCORES = {"met": 1, "yes": 1, "true": 1, "not met": 0, "no": 0, "false": 0, "blocked": -1}


class ItemJudgment(BaseModel):
    id: int
    dimension: str
    item: str
    score: int | None = None  # None: the judge never gave a valid score
    reason: str = ""


class TaskJudgment(BaseModel):
    idx: int
    judge: str
    items: list[ItemJudgment]
    calls: int = 0
    retries: int = 0
    repaired: int = 0  # batches whose output needed repair or salvage


def normalize_score(value: Any) -> int | None:
    """1, 0 or -1 from the forms judges actually produce (ints, floats, numeric strings, words)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and float(value) in (1.0, 0.0, -1.0):
        return int(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "+1", "0", "-1", "1.0", "0.0", "-1.0"):
            return int(float(text))
        return _WORD_SCORES.get(text)
    return None


def _as_id(value: Any) -> int | None:
    try:
        return int(str(value).strip().lstrip("#"))
    except (TypeError, ValueError):
        return None


def salvage_objects(text: str | None) -> list[dict[str, Any]]:
    """The complete flat `{...}` objects in a reply that broke off mid-list (each parsed leniently)."""
    out: list[dict[str, Any]] = []
    for match in _FLAT_OBJECT.finditer(text or ""):
        try:
            value = parse_json_lenient(match.group(0))
        except JSONRepairError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def parse_batch(parsed: Any, text: str, ids: list[int]) -> tuple[dict[int, tuple[int, str]], bool]:
    """Scores by item id from a judge reply, and whether repair was needed.

    Accepts the schema's {"results": [...]}, a bare list, fenced or chatty JSON, and (as salvage) the
    complete objects of a truncated reply; ignores ids outside the batch and invalid scores; the first
    valid result for an id wins."""
    repaired = False
    results: Any = None
    if isinstance(parsed, dict):
        results = parsed.get("results")
    if not isinstance(results, list):
        repaired = True
        try:
            value = parse_json_lenient(text)
        except JSONRepairError:
            value = None
        results = value.get("results") if isinstance(value, dict) else value
        if not isinstance(results, list):
            results = salvage_objects(text)
    wanted = set(ids)
    out: dict[int, tuple[int, str]] = {}
    for r in results:
        if not isinstance(r, dict):
            continue
        item_id = _as_id(r.get("id", r.get("item", r.get("rubric_item"))))
        score = normalize_score(r.get("score"))
        if item_id in wanted and score is not None and item_id not in out:
            out[item_id] = (score, str(r.get("reason", ""))[:500])
    return out, repaired


class RubricJudge:
    def __init__(
        self,
        chat_model: ChatModel,
        *,
        batch_size: int = 50,
        max_retries: int = 3,
        max_report_chars: int = 150_000,
        with_reason: bool = True,
        tokens_per_item: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.chat_model = chat_model
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.max_report_chars = max_report_chars
        self.with_reason = with_reason
        self.tokens_per_item = tokens_per_item or (60 if with_reason else 16)

    @property
    def name(self) -> str:
        return getattr(self.chat_model, "name", type(self.chat_model).__name__)

    def _messages(self, task: DRBTask, report: str, batch: list[ItemJudgment]) -> list[Message]:
        blocked = (
            json.dumps(task.blocked.model_dump(), ensure_ascii=False) if task.blocked else prompts.NO_BLOCKED
        )
        items = "\n".join(f"{j.id}. {j.item}" for j in batch)
        user = prompts.JUDGE_USER.format(
            report=report[: self.max_report_chars] or "(empty report)",
            task=task.task,
            blocked=blocked,
            items=items,
            first=batch[0].id,
            last=batch[-1].id,
        )
        return [Message(role="system", content=prompts.JUDGE_SYSTEM), Message(role="user", content=user)]

    def _ask(self, task: DRBTask, report: str, batch: list[ItemJudgment], judgment: TaskJudgment) -> None:
        ids = [j.id for j in batch]
        judgment.calls += 1
        try:
            resp = self.chat_model.chat(
                self._messages(task, report, batch),
                json_schema=prompts.judge_schema(ids, self.with_reason),
                temperature=0.0,
                max_tokens=self.tokens_per_item * len(batch) + 32,
            )
        except LLMError:
            return
        scores, repaired = parse_batch(resp.parsed, resp.text, ids)
        judgment.repaired += int(repaired)
        for j in batch:
            if j.id in scores:
                j.score, j.reason = scores[j.id]

    def judge_task(self, task: DRBTask, report: str) -> TaskJudgment:
        items = [
            ItemJudgment(id=i, dimension=dim, item=text)
            for i, (dim, text) in enumerate(task.rubric.items(), 1)
        ]
        judgment = TaskJudgment(idx=task.idx, judge=self.name, items=items)
        for start in range(0, len(items), self.batch_size):
            batch = items[start : start + self.batch_size]
            self._ask(task, report, batch, judgment)
            for _ in range(self.max_retries):
                missing = [j for j in batch if j.score is None]
                if not missing:
                    break
                judgment.retries += 1
                self._ask(task, report, missing, judgment)
        return judgment
