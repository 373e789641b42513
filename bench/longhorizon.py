"""Long-horizon benchmark: fold with unfold, fold with the unfold tool removed, and plain ReAct (`--no-fold`)
on composite research tasks with cross-reference items.

Each task bundles k multi-hop questions of one set into one request ("Write a briefing that answers:
1. … 2. …", eval/longhorizon/tasks.py, seeded), followed by `--cross-refs` cross-reference items: questions
on a detail (a year, a number, a name) that only an earlier item's gold passage holds, naming that item
(eval/longhorizon/crossref.py). Every system runs each task with the same model, policy, retriever (the
EventRAG stack over the set's corpus, rule extraction), step cap and window; the report is scored per item
(EM/F1 of the stated answer, citations resolving to gold passages) with no judge, plain and cross-reference
items apart.

    flock /tmp/eventfold-bench.lock timeout 8h python bench/longhorizon.py --dataset hotpotqa --k 8 16

Runs unchanged against an OpenAI-compatible server: set EVENTFOLD_LLM__BACKEND=openai,
EVENTFOLD_LLM__BASE_URL=..., EVENTFOLD_LLM__MODEL=... and leave out --model (--window is then the
server model's window, used to count overflows). Output in --out: tasks.jsonl (the tasks built),
longhorizon.jsonl (one row per task and system; a rerun skips what is there), runs/<system>/<task>/
(report.md, trajectory.json) and longhorizon.md (the table, with the load average, then the decision
table of `eval.decisions`; the model policy's steps record the workflow policy's call unless `--no-trace`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.progress import (  # noqa: E402
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

from agent.briefing import MAX_QUESTIONS  # noqa: E402
from agent.graph import AgentDeps  # noqa: E402
from agent.runner import run_agent, save_run  # noqa: E402
from agent.search_backend import ModeBackend  # noqa: E402
from eval.bundled_data import DATA_DIR  # noqa: E402
from eval.decisions.table import render_decisions  # noqa: E402
from eval.decisions.trace import traces_from_rows  # noqa: E402
from eval.local_sets import load_set  # noqa: E402
from eval.longhorizon.runs import run_row  # noqa: E402
from eval.longhorizon.table import SYSTEMS, render_table  # noqa: E402
from eval.longhorizon.tasks import CompositeTask, build_tasks, save_tasks  # noqa: E402
from eval.multihop.corpus_index import open_indexed_stack  # noqa: E402
from eval.multihop.schema import Passage, QADataset  # noqa: E402
from eventfold.llm.factory import make_chat_model  # noqa: E402
from eventfold.run_options import RunOptions  # noqa: E402
from eventfold.settings import Settings  # noqa: E402

console = Console(stderr=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--dataset", default="hotpotqa", help="hotpotqa, musique, a project set (sample…), or a folder"
    )
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR, help="holds multihop/<set>_train100")
    ap.add_argument("--k", type=int, nargs="+", default=[8, 16], help="questions per task")
    ap.add_argument("--cross-refs", type=int, default=1, help="cross-reference items at the end of each task")
    ap.add_argument("--tasks-per-k", type=int, default=10, help="tasks built per k")
    ap.add_argument("--first", type=int, default=None, help="run only the first N tasks of each k")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--yes-no", action="store_true", help="allow yes/no questions in tasks")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help=f"any of {', '.join(SYSTEMS)}")
    ap.add_argument("--policy", choices=["model", "workflow"], default="model", help="who picks each call")
    ap.add_argument("--steps-per-item", type=int, default=4, help="step cap: this many per item, plus 4")
    ap.add_argument("--window", type=int, default=16384, help="the model's context window (tokens)")
    ap.add_argument("--budget", type=int, default=3000, help="context budget of the fold agent (tokens)")
    ap.add_argument("--top-k", type=int, default=None, help="chunks per search (default: settings)")
    ap.add_argument("--result-chars", type=int, default=None, help="per snippet (default: the agent's)")
    ap.add_argument("--report-max-tokens", type=int, default=1024)
    ap.add_argument("--fold-summary", choices=["llm", "deterministic"], default="llm")
    ap.add_argument("--mode", default=None, help="retrieval mode (default: the stack's)")
    ap.add_argument(
        "--corpus",
        choices=["full", "tasks"],
        default="full",
        help="the set's whole corpus, or the run tasks' own passages plus --distractors",
    )
    ap.add_argument("--distractors", type=int, default=100)
    ap.add_argument("--model", default=None, help="GGUF path for the local backend")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--no-trace", action="store_true",
                    help="the model policy's steps do not record the workflow policy's call (no agreement measures)")
    ap.add_argument("--table-only", action="store_true", help="print the table of the rows in --out")
    args = ap.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if set(args.systems) - set(SYSTEMS):
        ap.error(
            f"unknown systems {sorted(set(args.systems) - set(SYSTEMS))}; choose from {', '.join(SYSTEMS)}"
        )
    return args


def make_settings(args: argparse.Namespace) -> Settings:
    settings = Settings()
    llm = settings.llm.model_dump()
    if args.model:
        llm["model_path"] = args.model
    if settings.llm.backend == "local":
        llm["n_ctx"] = args.window  # the same window for every system: ReAct may overflow it, fold should not
    return Settings(**{**settings.model_dump(), "llm": llm})


def max_steps(args: argparse.Namespace, task: CompositeTask) -> int:
    """The step cap of a task: `--steps-per-item` per item (search, read, answer…) plus room for folds."""
    return args.steps_per_item * len(task.sub_questions) + 4


def system_options(args: argparse.Namespace, settings: Settings, steps: int) -> dict[str, RunOptions]:
    """The options of each system for a task of `steps` steps: only fold and unfold differ."""
    common = {
        "policy": args.policy,
        "max_steps": steps,
        "search_top_k": args.top_k,
        "result_chars": args.result_chars,
        "fold_summary": args.fold_summary,
        "report_mode": "long",
        "report_max_tokens": args.report_max_tokens,
        "context_window": args.window,
        "context_budget": args.budget,  # ReAct has no guard: the budget never changes what it sees
        "trace_workflow": args.policy == "model" and not args.no_trace,  # the decision measures' reference
    }
    return {
        "fold": RunOptions.for_research(settings, fold=True, **common),
        "fold-nounfold": RunOptions.for_research(settings, fold=True, unfold=False, **common),
        "react": RunOptions.for_research(settings, fold=False, **common),
    }


def corpus(dataset: QADataset, tasks: list[CompositeTask], scope: str, distractors: int) -> list[Passage]:
    if scope == "full":
        return dataset.passages
    qids = {q for t in tasks for q in t.qids}
    return dataset.corpus_for([ex for ex in dataset.examples if ex.qid in qids], extra=distractors)


def table_title(
    args: argparse.Namespace, model: str, n_passages: int | str, options: RunOptions | None
) -> str:
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    detail = (
        f"policy {options.policy} · top-k {options.search_top_k} · snippet {options.result_chars} chars · "
        f"report {options.report_mode} · fold summary {options.fold_summary}"
        if options is not None
        else "options as in the runs' trajectory.json"
    )
    return (
        f"Long-horizon benchmark · {args.dataset} · k {', '.join(map(str, args.k))} + {args.cross_refs} "
        f"cross-reference item(s) · seed {args.seed} · model {model} · step cap {args.steps_per_item} per item "
        f"+ 4 · window {args.window} · fold budget {args.budget} · {detail} · corpus {n_passages} passages · "
        f"load average (1/5/15 min) at table time {load}"
    )


def decision_section(rows: list[dict[str, Any]]) -> str:
    """The decision table of the rows (`eval.decisions`), as a section after the main table."""
    table = render_decisions(traces_from_rows(rows), SYSTEMS)
    return f"\n## Decisions against the workflow policy\n\n{table}" if table else ""


def read_rows(path: Path) -> list[dict[str, Any]]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []
    )


class Gauge:
    """The agent's stream events as the bar's description: step, context tokens, folds, unfolds."""

    def __init__(self, bar: Progress, job: Any, label: str, max_steps: int):
        self.bar, self.job, self.label, self.max_steps = bar, job, label, max_steps
        self.step, self.tokens, self.folds, self.unfolds = 0, 0, 0, 0
        self.show()

    def show(self) -> None:
        self.bar.update(
            self.job,
            description=f"{self.label} step {self.step}/{self.max_steps} ctx {self.tokens} "
            f"folds {self.folds} unfolds {self.unfolds}",
        )

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "context":
            self.step, self.tokens = int(event.get("step", 0)), int(event.get("tokens", 0))
        elif kind in ("fold", "guard_fold"):
            self.folds += 1
        elif kind == "unfold":
            self.unfolds += 1
        self.show()


OptionsFor = Callable[[CompositeTask], dict[str, RunOptions]]


def run_one(task: CompositeTask, system: str, deps: AgentDeps, options: RunOptions, out: Path, gauge: Gauge,
            window: int | None) -> dict[str, Any]:  # fmt: skip
    """One system on one task: its scored row; the run's report and trajectory saved under `out`."""
    result = run_agent(task.request, deps, options, on_event=gauge)
    row = run_row(task, system, result, window=window, lookup=deps.backend.get_chunk)
    meta = {"model": result.model, "options": options.model_dump(mode="json"), "task": task.task_id}
    save_run(result.run, result.report, out / "runs" / system / task.task_id, meta)
    return row


def log_line(task: CompositeTask, system: str, row: dict[str, Any]) -> str:
    xref = (
        f" x-ref F1 {row['f1_xref']:.2f} unfolded on {row['xref_unfold_items']}" if row["xref_items"] else ""
    )
    return (f"{task.task_id} {system:13s} F1 {row['f1']:.2f}{xref} found {row['found']:.2f} peak {row['peak_ctx']} "
            f"folds {row['model_folds']}+{row['guard_folds']} unfolds {row['unfolds']} "
            f"{row['status']} {row['wall_s']:.0f}s")  # fmt: skip


def run_all(
    args: argparse.Namespace,
    tasks: list[CompositeTask],
    deps: AgentDeps,
    options_for: OptionsFor,
    out: Path,
) -> list[dict[str, Any]]:
    """Every selected system on every task not yet in longhorizon.jsonl, interleaved (the same load for
    each system); all rows of the file, new ones appended as they finish."""
    path = out / "longhorizon.jsonl"
    rows = read_rows(path)
    done = {(r["task_id"], r["system"]) for r in rows}
    todo = [(t, s) for t in tasks for s in args.systems if (t.task_id, s) not in done]
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with path.open("a") as fh, Progress(*columns, console=console) as bar:
        job = bar.add_task("runs", total=len(todo))
        for task, system in todo:
            options = options_for(task)[system]
            gauge = Gauge(bar, job, f"{task.task_id} {system}", options.max_steps)
            row = run_one(task, system, deps, options, out, gauge, args.window)
            rows.append(row)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            bar.console.log(log_line(task, system, row))
            bar.advance(job)
    return rows


def select_tasks(args: argparse.Namespace, dataset: QADataset, out: Path) -> list[CompositeTask]:
    """The tasks built (all saved to tasks.jsonl), then the first `--first` of each k."""
    tasks = build_tasks(
        dataset,
        args.k,
        args.tasks_per_k,
        seed=args.seed,
        include_yes_no=args.yes_no,
        cross_refs=args.cross_refs,
    )
    save_tasks(tasks, out / "tasks.jsonl")
    longest = max((len(t.sub_questions) for t in tasks), default=0)
    if longest > MAX_QUESTIONS:  # the items past the cap would be scored as unanswered, not researched
        raise SystemExit(
            f"a task holds {longest} items (k + cross-references) but the agent researches at most "
            f"{MAX_QUESTIONS} items of a briefing (agent.briefing.MAX_QUESTIONS): lower --k or --cross-refs"
        )
    if args.first is not None:
        tasks = [t for k in dict.fromkeys(args.k) for t in [t for t in tasks if t.k == k][: args.first]]
    return tasks


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = make_settings(args)
    out = args.out or settings.home / "bench" / "longhorizon"
    out.mkdir(parents=True, exist_ok=True)
    model_name = Path(args.model).stem if args.model else settings.llm.model
    if args.table_only:
        rows = read_rows(out / "longhorizon.jsonl")
        text = render_table(rows, table_title(args, model_name, "?", None)) + decision_section(rows)
        (out / "longhorizon.md").write_text(text)
        print(text)
        return 0
    dataset = load_set(args.dataset, ROOT, args.data_dir)
    tasks = select_tasks(args, dataset, out)
    passages = corpus(dataset, tasks, args.corpus, args.distractors)
    chat = make_chat_model(settings, cache=False)  # no response cache: wall times are real
    t0 = time.perf_counter()
    stack, _ = open_indexed_stack(settings, dataset, passages, extract="rules", chat_model=None)
    console.log(
        f"index: {len(passages)} passages ready in {time.perf_counter() - t0:.1f} s; {len(tasks)} tasks"
    )
    try:
        deps = AgentDeps(model=chat, backend=ModeBackend(stack.retriever, args.mode))
        rows = run_all(args, tasks, deps, lambda t: system_options(args, settings, max_steps(args, t)), out)
    finally:
        stack.close()
    shown = system_options(args, settings, max_steps(args, tasks[0])) if tasks else {}
    text = render_table(rows, table_title(args, chat.name, len(passages), shown.get("fold"))) + decision_section(rows)
    (out / "longhorizon.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
