"""DeepResearch Bench II run: write a report per task, judge it against the rubric, aggregate.

Layout of `out_dir`:
- `reports/<idx>.md` and `reports.jsonl` (one record per written report);
- `judgments.jsonl` (one record per (task, judge): every item's score and reason, and the task scores);
- `summary.json`, `table.md` (overall, per language, per theme, per task), `plot.png`, `themes.png`.
Both stages resume: a task with a report is not rewritten, a (task, judge) pair already judged is not
judged again; failed tasks (recorded with an error) are retried on the next run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from eval.agent_call import AgentCaller
from eval.deepresearch_bench.judge import RubricJudge
from eval.deepresearch_bench.loader import DIMENSIONS, DRBTask
from eval.deepresearch_bench.scoring import aggregate, task_scores
from eval.report import grouped_bar_plot, markdown_table
from eval.results import ResultsStore, write_json


class WrittenReport(BaseModel):
    report: str
    stats: dict[str, Any] = Field(default_factory=dict)


class ReportWriter(Protocol):
    name: str

    def write(self, task: DRBTask) -> WrittenReport: ...


class AgentReportWriter:
    """The research agent writes the report from the task's prompt (which names the blocked source).

    Prompts longer than `max_prompt_chars` (the agent refuses questions over 4000 characters; two DRB
    tasks are longer) are replaced by the judge's task text plus a one-line blocked-source notice.
    The agent's report opens with the question as its title; that heading is replaced by a plain
    one, so the judge never reads the blocked source's URLs as part of the report."""

    def __init__(self, caller: AgentCaller, max_prompt_chars: int = 4000) -> None:
        self.caller = caller
        self.name = caller.name
        self.max_prompt_chars = max_prompt_chars

    def prompt_for(self, task: DRBTask) -> str:
        if len(" ".join(task.prompt.split())) <= self.max_prompt_chars:
            return task.prompt
        notice = f"\n\nDo not rely on or cite: {task.blocked.title}." if task.blocked else ""
        return (task.task + notice)[: self.max_prompt_chars]

    def write(self, task: DRBTask) -> WrittenReport:
        prompt = self.prompt_for(task)
        out = self.caller(prompt)
        report = out.report or out.answer
        first, _, rest = report.partition("\n")
        if first.startswith("# ") and " ".join(first[2:].split()) == " ".join(prompt.split()):
            report = f"# Research report\n{rest}"
        return WrittenReport(report=report, stats=out.stats)


class FolderReportWriter:
    """Reports written elsewhere (by any system), read from `<folder>/<idx>.md`, to be judged here."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise FileNotFoundError(f"report folder {self.folder} does not exist")
        self.name = f"folder:{self.folder.name}"

    def write(self, task: DRBTask) -> WrittenReport:
        path = self.folder / f"{task.idx}.md"
        if not path.is_file():
            raise FileNotFoundError(f"no report {path} for task idx {task.idx}")
        return WrittenReport(report=path.read_text(encoding="utf-8"))


def _task_meta(task: DRBTask) -> dict[str, Any]:
    return {"idx": task.idx, "id": task.id, "language": task.language, "theme": task.theme}


def _write_one(writer: ReportWriter, task: DRBTask, reports_dir: Path) -> dict[str, Any]:
    rec = {**_task_meta(task), "writer": writer.name}
    t0 = time.perf_counter()
    try:
        written = writer.write(task)
        path = reports_dir / f"{task.idx}.md"
        path.write_text(written.report, encoding="utf-8")
        rec.update(report_path=str(path.name), chars=len(written.report), stats=written.stats)
    except Exception as exc:  # noqa: BLE001 - a failed task is recorded and retried on resume
        rec["error"] = f"{type(exc).__name__}: {exc}"
    rec["elapsed_s"] = round(time.perf_counter() - t0, 3)
    return rec


def _judge_one(judge: RubricJudge, task: DRBTask, report: str) -> dict[str, Any]:
    rec = {**_task_meta(task), "judge": judge.name}
    t0 = time.perf_counter()
    try:
        j = judge.judge_task(task, report)
        items = [it.model_dump() for it in j.items]
        rec.update(
            items=items, scores=task_scores(items), calls=j.calls, retries=j.retries, repaired=j.repaired
        )
    except Exception as exc:  # noqa: BLE001
        rec["error"] = f"{type(exc).__name__}: {exc}"
    rec["elapsed_s"] = round(time.perf_counter() - t0, 3)
    return rec


def _parallel(
    fn: Callable[..., dict[str, Any]],
    jobs: list[tuple],
    store: ResultsStore,
    workers: int,
    on_record: Callable[[dict[str, Any]], None] | None,
) -> None:
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for fut in as_completed([pool.submit(fn, *job) for job in jobs]):
            rec = fut.result()
            store.append(rec)
            if on_record is not None:
                on_record(rec)


def run_drb(
    tasks: list[DRBTask],
    writer: ReportWriter,
    judge: RubricJudge | None,
    out_dir: str | Path,
    *,
    concurrency: int = 1,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    judge_warning: str | None = None,
) -> dict[str, Any] | None:
    """Write the missing reports, judge the unjudged ones (when a judge is given), summarise;
    `judge_warning` (the judge cannot give a valid score: a small local model) heads the table."""
    out_dir = Path(out_dir)
    reports_dir = out_dir / "reports"
    reports_dir.mkdir(parents=True, exist_ok=True)
    reports = ResultsStore(out_dir / "reports.jsonl", key_fn=lambda r: (str(r.get("idx")),))
    done = reports.done_keys()
    _parallel(
        _write_one,
        [(writer, t, reports_dir) for t in tasks if (str(t.idx),) not in done],
        reports,
        concurrency,
        on_record,
    )
    if judge is None:
        return None
    judgments = ResultsStore(
        out_dir / "judgments.jsonl", key_fn=lambda r: (str(r.get("idx")), str(r.get("judge")))
    )
    judged = judgments.done_keys()
    written = reports.done_keys()
    jobs = [
        (judge, t, (reports_dir / f"{t.idx}.md").read_text(encoding="utf-8"))
        for t in tasks
        if (str(t.idx),) in written and (str(t.idx), judge.name) not in judged
    ]
    _parallel(_judge_one, jobs, judgments, concurrency, on_record)
    return summarize_drb(out_dir, judge.name, idxs={t.idx for t in tasks}, warning=judge_warning)


def summarize_drb(
    out_dir: str | Path, judge_name: str, idxs: set[int] | None = None, warning: str | None = None
) -> dict[str, Any]:
    """summary.json, table.md and plot.png from `judgments.jsonl` (this judge, the selected tasks);
    a `warning` about the judge is stated under the table's heading and in the summary."""
    out_dir = Path(out_dir)
    store = ResultsStore(
        out_dir / "judgments.jsonl", key_fn=lambda r: (str(r.get("idx")), str(r.get("judge")))
    )
    recs = [
        r for r in store.records()
        if r.get("judge") == judge_name and not r.get("error") and (idxs is None or r.get("idx") in idxs)
    ]  # fmt: skip
    recs.sort(key=lambda r: r["idx"])
    agg = aggregate(recs)
    summary = {
        "judge": judge_name,
        "valid_judge": warning is None,
        **({"judge_warning": warning} if warning else {}),
        **agg,
        "tasks": [{k: r[k] for k in ("idx", "id", "language", "theme")} | r["scores"] for r in recs],
        "judge_calls": sum(r.get("calls", 0) for r in recs),
        "judge_retries": sum(r.get("retries", 0) for r in recs),
        "judge_repaired_batches": sum(r.get("repaired", 0) for r in recs),
    }
    write_json(out_dir / "summary.json", summary)
    cols = ["n_tasks", *DIMENSIONS, "total", "blocked_rate", "unjudged"]
    text = f"## DeepResearch Bench II (judge: {judge_name})\n\n"
    if warning:
        text += f"> **Not a valid DRB II score.** {warning}\n\n"
    text += markdown_table([{"slice": "overall", **agg["overall"]}], ["slice", *cols])
    text += "\n### By language\n\n" + markdown_table(
        [{"language": k, **v} for k, v in agg["by_language"].items()], ["language", *cols]
    )
    text += "\n### By theme\n\n" + markdown_table(
        [{"theme": k, **v} for k, v in agg["by_theme"].items()], ["theme", *cols]
    )
    text += "\n### Per task\n\n" + markdown_table(
        summary["tasks"],
        ["idx", "language", "theme", *DIMENSIONS, "total", "blocked_rate", "n_items", "unjudged"],
    )
    (out_dir / "table.md").write_text(text, encoding="utf-8")
    if recs:
        series = {"overall": agg["overall"], **{f"lang: {k}": v for k, v in agg["by_language"].items()}}
        grouped_bar_plot(
            series,
            [*DIMENSIONS, "total", "blocked_rate"],
            out_dir / "plot.png",
            title=f"DRB II (judge: {judge_name}{', NOT A VALID SCORE' if warning else ''})",
        )
        themes = {"total": {k: v["total"] for k, v in agg["by_theme"].items()}}
        grouped_bar_plot(
            themes, list(agg["by_theme"]), out_dir / "themes.png", title="DRB II total score by theme"
        )
    return summary
