"""DeepResearch Bench II tasks (`tasks_and_rubrics.jsonl`, imlrz/DeepResearch-Bench-II).

Each line: {id, idx, language (zh|en), theme, description, prompt, content: {task, rubric:
{info_recall: [str], analysis: [str], presentation: [str]}, blocked?: {title, authors, urls}}}.
`prompt` is what the writer receives (the task plus a notice not to use the blocked source);
`content.task` is what the judge sees. One task has no blocked source. Newer releases add a
per-task `license` (the licence of the task's source article: CC BY 4.0 for most, CC BY-NC 4.0 for
idx 26 and 110, CC0 for idx 119); it is kept when present.

The repository ships the tasks in data/drb2/ (`eval.bundled_data`): the CC BY-NC ones in a file of
their own; the official file from the upstream repository loads the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

DIMENSIONS = ("info_recall", "analysis", "presentation")


class BlockedSource(BaseModel):
    title: str = ""
    authors: list[str] = Field(default_factory=list)
    urls: list[str] = Field(default_factory=list)


class Rubric(BaseModel):
    info_recall: list[str] = Field(default_factory=list)
    analysis: list[str] = Field(default_factory=list)
    presentation: list[str] = Field(default_factory=list)

    def items(self) -> list[tuple[str, str]]:
        """(dimension, item) pairs in dimension order, the order the judge sees them in."""
        return [(dim, item) for dim in DIMENSIONS for item in getattr(self, dim)]


class DRBTask(BaseModel):
    id: str
    idx: int
    language: str
    theme: str
    description: str = ""
    prompt: str
    task: str
    rubric: Rubric
    blocked: BlockedSource | None = None
    license: str = ""

    @property
    def n_items(self) -> int:
        return len(self.rubric.items())


class TaskFormatError(ValueError):
    """The tasks file is missing or a line is not a DeepResearch Bench II task."""


def _parse(row: dict, where: str) -> DRBTask:
    content = row.get("content")
    if not isinstance(content, dict):
        raise TaskFormatError(f"{where}: missing 'content' object")
    try:
        return DRBTask(
            id=str(row["id"]),
            idx=int(row["idx"]),
            language=row.get("language", ""),
            theme=row.get("theme", ""),
            description=row.get("description", ""),
            prompt=row.get("prompt") or content["task"],
            task=content["task"],
            rubric=Rubric(**content["rubric"]),
            blocked=BlockedSource(**content["blocked"]) if content.get("blocked") else None,
            license=row.get("license") or "",
        )
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise TaskFormatError(f"{where}: not a DeepResearch Bench II task ({exc})") from exc


def load_tasks(
    path: str | Path,
    *,
    language: str | None = None,
    themes: Iterable[str] | None = None,
    idx: Iterable[int] | None = None,
    limit: int | None = None,
) -> list[DRBTask]:
    """Tasks in file order, filtered by language, theme(s) (case-insensitive) and idx; then `limit`."""
    path = Path(path)
    if not path.is_file():
        raise TaskFormatError(f"{path} does not exist")
    wanted_themes = {t.lower() for t in themes} if themes else None
    wanted_idx = set(idx) if idx else None
    tasks: list[DRBTask] = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskFormatError(f"{path}:{n} is not valid JSON: {exc}") from exc
            task = _parse(row, f"{path}:{n}")
            if language and task.language != language:
                continue
            if wanted_themes is not None and task.theme.lower() not in wanted_themes:
                continue
            if wanted_idx is not None and task.idx not in wanted_idx:
                continue
            tasks.append(task)
    if wanted_idx:
        missing = wanted_idx - {t.idx for t in tasks}
        if missing and not (language or wanted_themes):
            raise TaskFormatError(f"no task with idx {sorted(missing)} in {path}")
    return tasks[:limit] if limit else tasks
