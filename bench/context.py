"""Context benchmark: the fold/unfold agent vs plain ReAct (`--no-fold`), side by side.

Same questions (the first N of a multi-hop set, default HotpotQA-100 with its own passages), same
model, same retriever (the EventRAG stack over the questions' passages, rule extraction, indexed
once and cached). Per system: EM/F1, peak and mean context tokens, LLM tokens processed, wall time,
folds (agent + budget guard) and unfolds per question, and the fold/ReAct ratio.

    python bench/context.py --n 20 --max-steps 3 --budget 1200 --model ~/.cache/eventfold/models/qwen2.5-coder-0.5b.gguf

Runs unchanged against an OpenAI-compatible server: set EVENTFOLD_LLM__BACKEND=openai,
EVENTFOLD_LLM__BASE_URL=..., EVENTFOLD_LLM__MODEL=... (and leave out --model). Results go to
`<out>/context.jsonl` (one line per question and system; a rerun skips what is there) and
`<out>/context.md`. The LLM response cache is off so wall times are real.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.graph import AgentDeps  # noqa: E402
from agent.runner import run_agent  # noqa: E402
from agent.search_backend import ModeBackend  # noqa: E402
from eval.bundled_data import DATA_DIR  # noqa: E402
from eval.multihop.corpus_index import open_indexed_stack, select_passages  # noqa: E402
from eval.multihop.loaders import resolve_dataset  # noqa: E402
from eval.multihop.metrics import exact_match, f1_score  # noqa: E402
from eventfold.llm.factory import make_chat_model  # noqa: E402
from eventfold.run_options import RunOptions  # noqa: E402
from eventfold.settings import Settings  # noqa: E402

SYSTEMS = {"fold": True, "react": False}


def one(question: str, golds: list[str], deps: AgentDeps, options: RunOptions) -> dict[str, Any]:
    t0 = time.perf_counter()
    res = run_agent(question, deps, options)
    c = res.run.counters
    answer = res.run.answer or ""
    return {
        "answer": answer,
        "em": exact_match(answer, golds),
        "f1": f1_score(answer, golds),
        "peak_ctx": c.peak_context_tokens,
        "mean_ctx": statistics.fmean(c.context_samples) if c.context_samples else 0.0,
        "llm_tokens": c.prompt_tokens + c.completion_tokens,
        "llm_calls": c.llm_calls,
        "wall_s": time.perf_counter() - t0,
        "folds": c.folds + c.guard_folds,
        "guard_folds": c.guard_folds,
        "unfolds": c.unfolds,
        "steps": len(res.run.steps),
        "status": res.run.status,
    }


def table(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    by = {s: [r for r in rows if r["system"] == s] for s in SYSTEMS}
    qids = set.intersection(*(set(r["qid"] for r in v) for v in by.values())) if all(by.values()) else set()
    keys = [
        ("EM", "em", 3),
        ("F1", "f1", 3),
        ("peak context tokens", "peak_ctx", 0),
        ("mean context tokens", "mean_ctx", 0),
        ("LLM tokens processed", "llm_tokens", 0),
        ("LLM calls", "llm_calls", 1),
        ("wall time / q (s)", "wall_s", 1),
        ("folds / q", "folds", 2),
        ("guard folds / q", "guard_folds", 2),
        ("unfolds / q", "unfolds", 2),
        ("steps / q", "steps", 1),
    ]
    lines = [
        f"Context benchmark · {meta['dataset']} · {len(qids)} questions · model {meta['model']} · "
        f"max_steps {meta['max_steps']} · budget {meta['budget']} · fold summary {meta['fold_summary']}",
        "",
        "| metric | fold/unfold | plain ReAct (--no-fold) | fold / ReAct |",
        "|---|---:|---:|---:|",
    ]
    for label, key, nd in keys:
        vals = {
            s: statistics.fmean(r[key] for r in v if r["qid"] in qids) if qids else 0.0 for s, v in by.items()
        }
        ratio = f"{vals['fold'] / vals['react']:.2f}" if vals["react"] else "–"
        lines.append(f"| {label} | {vals['fold']:.{nd}f} | {vals['react']:.{nd}f} | {ratio} |")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ContextBench:
    """The benchmark's options (see ``parse_args``)."""

    dataset: str
    data_dir: str
    n: int
    max_steps: int
    budget: int
    top_k: int
    result_chars: int
    fold_summary: str
    mode: str | None
    distractors: int
    model: str | None
    out: Path | None
    table_only: bool

    def meta(self, dataset: str, model: str) -> dict[str, Any]:
        """What the table's title line reports."""
        return {"dataset": dataset, "model": model, "max_steps": self.max_steps, "budget": self.budget,
                "fold_summary": self.fold_summary}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> ContextBench:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="hotpotqa")
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--max-steps", type=int, default=4)
    ap.add_argument("--budget", type=int, default=1500, help="context budget (tokens) of the fold agent")
    ap.add_argument("--top-k", type=int, default=3)
    ap.add_argument("--result-chars", type=int, default=400)
    ap.add_argument("--fold-summary", choices=["llm", "deterministic"], default="llm")
    ap.add_argument("--mode", default=None, help="retrieval mode (default: the stack's)")
    ap.add_argument("--distractors", type=int, default=100)
    ap.add_argument("--model", default=None, help="GGUF path for the local backend")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--table-only", action="store_true", help="print the table of the rows already in --out")
    return ContextBench(**vars(ap.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = Settings()
    if args.model:
        settings = Settings(
            **{**settings.model_dump(), "llm": {**settings.llm.model_dump(), "model_path": args.model}}
        )
    out = args.out or settings.home / "bench" / "context"
    out.mkdir(parents=True, exist_ok=True)
    if args.table_only:
        rows = [json.loads(line) for line in (out / "context.jsonl").read_text().splitlines()]
        model = Path(args.model).stem if args.model else settings.llm.model
        _write_table(rows, args.meta(args.dataset, model), out)
        return 0
    dataset = resolve_dataset(args.dataset, args.data_dir).select(args.n)
    examples = [ex for ex in dataset.examples if ex.answers]
    passages = select_passages(dataset, examples, "questions", args.distractors)
    chat = make_chat_model(settings, cache=False)
    t0 = time.perf_counter()
    stack, summary = open_indexed_stack(settings, dataset, passages, extract="rules", chat_model=None)
    print(f"index: {len(passages)} passages in {time.perf_counter() - t0:.1f} s", flush=True)
    deps = AgentDeps(model=chat, backend=ModeBackend(stack.retriever, args.mode))
    try:
        rows = _run(examples, deps, _options(settings, args), out / "context.jsonl")
    finally:
        stack.close()
    _write_table(rows, args.meta(dataset.name, chat.name), out)
    return 0


def _options(settings: Settings, args: ContextBench) -> dict[str, RunOptions]:
    common = dict(
        max_steps=args.max_steps,
        search_top_k=args.top_k,
        result_chars=args.result_chars,
        fold_summary=args.fold_summary,
    )
    return {
        "fold": settings.run_options(fold=True, context_budget=args.budget, **common),
        # ReAct gets the same budget value but has no guard: the budget never changes what it sees
        "react": settings.run_options(fold=False, context_budget=args.budget, **common),
    }


def _run(examples: list, deps: AgentDeps, options: dict[str, RunOptions], path: Path) -> list[dict[str, Any]]:
    """Every (question, system) not yet in ``path``, appended to it as it finishes; returns all rows."""
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
    done = {(r["qid"], r["system"]) for r in rows}
    with path.open("a") as fh:
        for i, ex in enumerate(examples, 1):
            for system in SYSTEMS:  # interleaved: both systems see the same machine load
                if (ex.qid, system) in done:
                    continue
                row = {
                    "qid": ex.qid,
                    "system": system,
                    **one(ex.question, ex.answers, deps, options[system]),
                }
                rows.append(row)
                fh.write(json.dumps(row) + "\n")
                fh.flush()
                print(
                    f"[{i}/{len(examples)}] {system:5s} em={row['em']:.0f} peak={row['peak_ctx']} "
                    f"folds={row['folds']} {row['wall_s']:.0f}s  {row['answer'][:40]!r}",
                    flush=True,
                )
    return rows


def _write_table(rows: list[dict[str, Any]], meta: dict[str, Any], out: Path) -> None:
    text = table(rows, meta)
    (out / "context.md").write_text(text)
    print(text)


if __name__ == "__main__":
    raise SystemExit(main())
