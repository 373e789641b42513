"""Long-horizon benchmark: fold/unfold vs plain ReAct (`--no-fold`) on composite research tasks.

Each task bundles k multi-hop questions of one set into one request ("Write a briefing that answers:
1. … 2. …", eval/longhorizon/tasks.py, seeded); both systems run it with the same model, retriever
(the EventRAG stack over the set's corpus, rule extraction), step cap and window; the report is scored
per sub-question (EM/F1 of the stated answer, citations resolving to gold passages) with no judge.

    flock /tmp/eventfold-bench.lock timeout 6h python bench/longhorizon.py --dataset musique --k 4 8 \\
        --max-steps 30 --window 8192 --budget 3000 --model ~/.cache/eventfold/models/qwen2.5-coder-1.5b.gguf

Runs unchanged against an OpenAI-compatible server: set EVENTFOLD_LLM__BACKEND=openai,
EVENTFOLD_LLM__BASE_URL=..., EVENTFOLD_LLM__MODEL=... and leave out --model (--window is then the
server model's window, used to count overflows). Output in --out: tasks.jsonl (the tasks built),
longhorizon.jsonl (one row per task and system; a rerun skips what is there), runs/<system>/<task>/
(report.md, trajectory.json) and longhorizon.md (the table, with the load average).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
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

from agent.graph import AgentDeps  # noqa: E402
from agent.runner import run_agent, save_run  # noqa: E402
from agent.search_backend import ModeBackend  # noqa: E402
from eval.bundled_data import DATA_DIR  # noqa: E402
from eval.longhorizon.runs import run_row  # noqa: E402
from eval.longhorizon.table import SYSTEMS, render_table  # noqa: E402
from eval.longhorizon.tasks import CompositeTask, build_tasks, save_tasks  # noqa: E402
from eval.multihop.corpus_index import open_indexed_stack  # noqa: E402
from eval.multihop.loaders import resolve_dataset  # noqa: E402
from eval.multihop.schema import Passage, QADataset  # noqa: E402
from eventfold.llm.factory import make_chat_model  # noqa: E402
from eventfold.run_options import RunOptions  # noqa: E402
from eventfold.settings import Settings  # noqa: E402

console = Console(stderr=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="musique", help="hotpotqa, musique, or a set's folder")
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--k", type=int, nargs="+", default=[4, 8], help="questions per task")
    ap.add_argument("--tasks-per-k", type=int, default=10, help="tasks built per k")
    ap.add_argument("--first", type=int, default=None, help="run only the first N tasks of each k")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--yes-no", action="store_true", help="allow yes/no questions in tasks")
    ap.add_argument("--max-steps", type=int, default=30)
    ap.add_argument("--window", type=int, default=8192, help="the model's context window (tokens)")
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
    ap.add_argument("--table-only", action="store_true", help="print the table of the rows in --out")
    return ap.parse_args(argv)


def make_settings(args: argparse.Namespace) -> Settings:
    settings = Settings()
    llm = settings.llm.model_dump()
    if args.model:
        llm["model_path"] = args.model
    if settings.llm.backend == "local":
        llm["n_ctx"] = args.window  # the same window for both systems: ReAct overflows it, fold should not
    return Settings(**{**settings.model_dump(), "llm": llm})


def system_options(args: argparse.Namespace, settings: Settings) -> dict[str, RunOptions]:
    common = {
        "max_steps": args.max_steps,
        "search_top_k": args.top_k,
        "result_chars": args.result_chars,
        "fold_summary": args.fold_summary,
        "report_mode": "long",
        "report_max_tokens": args.report_max_tokens,
        "context_window": args.window,
        "context_budget": args.budget,  # ReAct has no guard: the budget never changes what it sees
    }
    # the research scaffold of `ask` and `eval` (plan of sub-questions, opening searches, verified
    # answers, reader fallback) for both systems: only fold/unfold differs
    return {
        "fold": RunOptions.for_research(settings, fold=True, **common),
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
        f"top-k {options.search_top_k} · snippet {options.result_chars} chars · plan {options.plan} · "
        f"report {options.report_mode} · fold summary {options.fold_summary}"
        if options is not None
        else "options as in the runs' trajectory.json"
    )
    return (
        f"Long-horizon benchmark · {args.dataset} · k {', '.join(map(str, args.k))} · seed {args.seed} · "
        f"model {model} · max_steps {args.max_steps} · window {args.window} · fold budget {args.budget} · "
        f"{detail} · corpus {n_passages} passages · load average (1/5/15 min) at table time {load}"
    )


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


def run_all(
    args: argparse.Namespace,
    tasks: list[CompositeTask],
    deps: AgentDeps,
    options: dict[str, RunOptions],
    out: Path,
) -> list[dict[str, Any]]:
    path = out / "longhorizon.jsonl"
    rows = read_rows(path)
    done = {(r["task_id"], r["system"]) for r in rows}
    todo = [(t, s) for t in tasks for s in SYSTEMS if (t.task_id, s) not in done]  # interleaved: same load
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with path.open("a") as fh, Progress(*columns, console=console) as bar:
        job = bar.add_task("runs", total=len(todo))
        for task, system in todo:
            gauge = Gauge(bar, job, f"{task.task_id} {system}", args.max_steps)
            result = run_agent(task.request, deps, options[system], on_event=gauge)
            row = run_row(task, system, result, window=args.window, lookup=deps.backend.get_chunk)
            meta = {
                "model": result.model,
                "options": options[system].model_dump(mode="json"),
                "task": task.task_id,
            }
            save_run(result.run, result.report, out / "runs" / system / task.task_id, meta)
            rows.append(row)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            bar.console.log(
                f"{task.task_id} {system:5s} F1 {row['f1']:.2f} found {row['found']:.2f} peak {row['peak_ctx']} "
                f"folds {row['model_folds']}+{row['guard_folds']} unfolds {row['unfolds']} "
                f"{row['status']} {row['wall_s']:.0f}s"
            )
            bar.advance(job)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = make_settings(args)
    out = args.out or settings.home / "bench" / "longhorizon"
    out.mkdir(parents=True, exist_ok=True)
    model_name = Path(args.model).stem if args.model else settings.llm.model
    if args.table_only:
        text = render_table(read_rows(out / "longhorizon.jsonl"), table_title(args, model_name, "?", None))
        (out / "longhorizon.md").write_text(text)
        print(text)
        return 0
    dataset = resolve_dataset(args.dataset, args.data_dir)
    tasks = build_tasks(dataset, args.k, args.tasks_per_k, seed=args.seed, include_yes_no=args.yes_no)
    save_tasks(tasks, out / "tasks.jsonl")
    if args.first is not None:
        tasks = [t for k in dict.fromkeys(args.k) for t in [t for t in tasks if t.k == k][: args.first]]
    passages = corpus(dataset, tasks, args.corpus, args.distractors)
    chat = make_chat_model(settings, cache=False)  # no response cache: wall times are real
    t0 = time.perf_counter()
    stack, _ = open_indexed_stack(settings, dataset, passages, extract="rules", chat_model=None)
    console.log(
        f"index: {len(passages)} passages ready in {time.perf_counter() - t0:.1f} s; {len(tasks)} tasks"
    )
    try:
        deps = AgentDeps(model=chat, backend=ModeBackend(stack.retriever, args.mode))
        options = system_options(args, settings)
        rows = run_all(args, tasks, deps, options, out)
    finally:
        stack.close()
    text = render_table(rows, table_title(args, chat.name, len(passages), options["fold"]))
    (out / "longhorizon.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
