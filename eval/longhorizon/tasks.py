"""Deterministic builder of composite research tasks from a multi-hop set.

A task bundles k questions of one set (HotpotQA-100, MuSiQue-100) into one request over that set's
corpus: "Write a briefing that answers: 1. … 2. …". Each sub-question carries its gold answers (with
aliases), gold passage ids and titles, so a report can be scored per sub-question without a judge.

Selection, for each k: the eligible questions (a gold answer; yes/no answers left out unless asked for,
since a guess scores half of them; one copy of each question text) are shuffled by a generator seeded
with (seed, set, k) and dealt into tasks in order, reshuffling only when the pool runs out, so tasks of
one k share no question while the pool lasts and no task ever holds the same question twice. The same
(set files, seed, ks, tasks per k, cross-references) always gives the same tasks, independent of the
other ks asked for.

With `cross_refs` > 0 each task ends with that many cross-reference items (eval/longhorizon/crossref.py):
questions on a detail that only an earlier item's gold passage holds, each naming the item it refers to.
They are numbered after the k questions; `k` stays the number of plain questions.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from eval.longhorizon.crossref import CROSS_REFERENCE, CrossRef, Item, cross_refs
from eval.multihop.metrics import normalize_answer
from eval.multihop.schema import QADataset, QAExample

MIN_K, MAX_K = 2, 24
YES_NO = frozenset({"yes", "no"})

REQUEST_TEMPLATE = (
    "Write a briefing that answers the {k} questions below from the document collection. "
    "Give one section per question, in the order given, headed with its number and the question "
    '("## 1. <question>"); the first line of each section is "Answer: <short answer>", then the '
    "evidence for it, citing the chunks it comes from as [c:<chunk id>].\n\n{questions}"
)


class TaskError(ValueError):
    """The set cannot supply the tasks asked for (too few eligible questions, bad k)."""


class SubQuestion(BaseModel):
    n: int  # 1-based position in the request
    qid: str
    question: str
    answers: list[str]  # gold answer first, then aliases
    gold_passage_ids: list[str] = Field(default_factory=list)
    gold_titles: list[str] = Field(default_factory=list)
    question_type: str = "unknown"
    refers_to: int | None = None  # a cross-reference item: the earlier item whose evidence holds its answer

    @property
    def cross_reference(self) -> bool:
        return self.refers_to is not None


class CompositeTask(BaseModel):
    task_id: str
    dataset: str
    k: int
    seed: int
    request: str
    sub_questions: list[SubQuestion]

    @property
    def gold_passage_ids(self) -> set[str]:
        return {pid for sq in self.sub_questions for pid in sq.gold_passage_ids}

    @property
    def qids(self) -> list[str]:
        """The set's questions in the task (cross-reference items are built, not the set's)."""
        return [sq.qid for sq in self.sub_questions if not sq.cross_reference]


def render_request(questions: Sequence[str]) -> str:
    listing = "\n".join(f"{i}. {' '.join(q.split())}" for i, q in enumerate(questions, 1))
    return REQUEST_TEMPLATE.format(k=len(questions), questions=listing)


def eligible(dataset: QADataset, *, include_yes_no: bool = False) -> list[QAExample]:
    """Questions that can be scored: a gold answer, gold passages, first copy of each question text."""
    seen: set[str] = set()
    out: list[QAExample] = []
    for ex in dataset.examples:
        key = normalize_answer(ex.question)
        if not ex.answers or not (ex.gold_passage_ids or ex.gold_titles) or key in seen:
            continue
        if not include_yes_no and normalize_answer(ex.answers[0]) in YES_NO:
            continue
        seen.add(key)
        out.append(ex)
    return out


def _sub(n: int, ex: QAExample) -> SubQuestion:
    return SubQuestion(
        n=n,
        qid=ex.qid,
        question=" ".join(ex.question.split()),
        answers=list(ex.answers),
        gold_passage_ids=list(ex.gold_passage_ids),
        gold_titles=list(ex.gold_titles),
        question_type=ex.question_type,
    )


def _cross_sub(n: int, task_id: str, ref: CrossRef) -> SubQuestion:
    return SubQuestion(
        n=n, qid=f"{task_id}-x{ref.refers_to}", question=ref.question, answers=[ref.answer],
        gold_passage_ids=[ref.passage_id], gold_titles=[ref.title], question_type=CROSS_REFERENCE,
        refers_to=ref.refers_to,
    )  # fmt: skip


def with_cross_refs(
    task_id: str, subs: list[SubQuestion], dataset: QADataset, count: int
) -> list[SubQuestion]:
    """`subs` followed by up to `count` cross-reference items on them."""
    passages = {p.passage_id: p for p in dataset.passages}
    items = [Item(s.n, s.question, s.answers, s.gold_passage_ids) for s in subs]
    refs = cross_refs(task_id, items, passages, count)
    return subs + [_cross_sub(len(subs) + i, task_id, ref) for i, ref in enumerate(refs, 1)]


def _deal(pool: list[QAExample], k: int, count: int, rng: random.Random) -> list[list[QAExample]]:
    """`count` groups of k distinct questions: deal a shuffled pool in order, reshuffle when it runs out."""
    deck: list[QAExample] = []
    groups: list[list[QAExample]] = []
    for _ in range(count):
        group: list[QAExample] = []
        held: list[QAExample] = []  # already in this group (after a reshuffle): dealt to the next one
        while len(group) < k:
            if not deck:
                deck = pool[:]
                rng.shuffle(deck)
            ex = deck.pop()
            (held if any(ex.qid == g.qid for g in group) else group).append(ex)
        deck.extend(reversed(held))
        groups.append(group)
    return groups


def build_tasks(
    dataset: QADataset,
    ks: Iterable[int],
    per_k: int = 10,
    *,
    seed: int = 0,
    include_yes_no: bool = False,
    cross_refs: int = 0,
) -> list[CompositeTask]:
    """`per_k` composite tasks for each k, deterministic in (dataset, seed, k, cross_refs)."""
    if per_k < 1:
        raise TaskError(f"tasks per k must be at least 1 (got {per_k})")
    if cross_refs < 0:
        raise TaskError(f"cross-reference items per task cannot be negative (got {cross_refs})")
    pool = eligible(dataset, include_yes_no=include_yes_no)
    tasks: list[CompositeTask] = []
    for k in dict.fromkeys(ks):
        if not MIN_K <= k <= MAX_K:
            raise TaskError(f"k must be between {MIN_K} and {MAX_K} (got {k})")
        if len(pool) < k:
            raise TaskError(f"{dataset.name}: {len(pool)} eligible questions, fewer than k = {k}")
        rng = random.Random(f"{seed}:{dataset.name}:{k}")
        for i, group in enumerate(_deal(pool, k, per_k, rng), 1):
            task_id = f"{dataset.name}-k{k}-s{seed}-{i:02d}" + (f"-x{cross_refs}" if cross_refs else "")
            subs = with_cross_refs(
                task_id, [_sub(n, ex) for n, ex in enumerate(group, 1)], dataset, cross_refs
            )
            tasks.append(
                CompositeTask(
                    task_id=task_id,
                    dataset=dataset.name,
                    k=k,
                    seed=seed,
                    request=render_request([s.question for s in subs]),
                    sub_questions=subs,
                )  # fmt: skip
            )
    return tasks


def save_tasks(tasks: Sequence[CompositeTask], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")


def load_tasks(path: Path) -> list[CompositeTask]:
    if not path.is_file():
        raise TaskError(f"{path} does not exist")
    out: list[CompositeTask] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(CompositeTask.model_validate(json.loads(line)))
            except (json.JSONDecodeError, ValueError) as exc:
                raise TaskError(f"{path}:{n} is not a composite task: {exc}") from exc
    return out
