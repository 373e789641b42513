"""Run a `QASystem` over a `QADataset`: concurrent, resumable, with summary, table and plot.

Layout of `out_dir` (one folder per dataset; every run — mode, fold or not — lands in the same files,
so the table and plot compare them):
- `results.jsonl`: one record per (run, question), appended as soon as the question is done;
- `summary.json`: per run, the metric means overall and per question type (and the judge named);
- `table.md`, `by_type.md` and `plot.png`.
A rerun skips the (run, question) pairs already recorded without an error.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from eval.multihop.judge import AnswerJudge
from eval.multihop.metrics import RECALL_KS, aggregate, answer_metrics, multihoprag_retrieval, recall_at_k
from eval.multihop.schema import QADataset, QAExample
from eval.multihop.systems import Prediction, QASystem
from eval.report import grouped_bar_plot, markdown_table
from eval.results import ResultsStore, write_json

TABLE_METRICS = (
    "hits@4", "hits@10", "map@10", "mrr@10",
    *(f"recall@{k}" for k in RECALL_KS),
    "em", "f1", "acc",
    "judge_correctness", "judge_relevancy", "judge_similarity",
)  # fmt: skip


def score(example: QAExample, prediction: Prediction) -> dict[str, float | None]:
    """Every metric the example's gold supports; None where it does not apply (e.g. null queries)."""
    metrics: dict[str, float | None] = {}
    texts = [c.text for c in prediction.retrieved]
    if example.gold_facts and not example.is_null:
        metrics.update(multihoprag_retrieval(texts, example.gold_facts))
    if example.gold_titles and not example.is_null:
        metrics.update(recall_at_k([c.title for c in prediction.retrieved], example.gold_titles))
    if example.has_answer and prediction.answer is not None:
        metrics.update(answer_metrics(prediction.answer, example.answers))
    return metrics


def store_for(out_dir: str | Path) -> ResultsStore:
    return ResultsStore(
        Path(out_dir) / "results.jsonl", key_fn=lambda r: (str(r.get("run")), str(r.get("qid")))
    )


def _record(dataset: str, system: QASystem, example: QAExample) -> dict[str, Any]:
    return {
        "dataset": dataset,
        "run": system.name,
        "qid": example.qid,
        "question": example.question,
        "question_type": example.question_type,
        "gold_answers": example.answers,
    }


def run_one(dataset: str, system: QASystem, example: QAExample, judge: AnswerJudge | None) -> dict[str, Any]:
    rec = _record(dataset, system, example)
    t0 = time.perf_counter()
    try:
        pred = system.predict(example)
        metrics = score(example, pred)
        if judge is not None and example.has_answer and pred.answer is not None:
            metrics.update(judge.judge(example.question, pred.answer, example.answers))
        rec.update(
            answer=pred.answer,
            retrieved=[
                {"chunk_id": c.chunk_id, "doc_id": c.doc_id, "title": c.title, "score": round(c.score, 5)}
                for c in pred.retrieved[:10]
            ],
            metrics=metrics,
            stats=pred.stats,
        )
    except Exception as exc:  # noqa: BLE001 - one failing question must not stop the run; it is retried on resume
        rec.update(error=f"{type(exc).__name__}: {exc}", metrics={})
    rec["elapsed_s"] = round(time.perf_counter() - t0, 3)
    return rec


def run_multihop(
    dataset: QADataset,
    system: QASystem,
    out_dir: str | Path,
    *,
    concurrency: int = 1,
    judge: AnswerJudge | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Answer and score every question not yet done for this run, then rewrite the summary."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    out_dir = Path(out_dir)
    store = store_for(out_dir)
    done = store.done_keys()
    todo = [ex for ex in dataset.examples if (system.name, ex.qid) not in done]
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(run_one, dataset.name, system, ex, judge) for ex in todo]
        for fut in as_completed(futures):
            rec = fut.result()
            store.append(rec)
            if on_record is not None:
                on_record(rec)
    return summarize(
        out_dir, judge_name=judge.name if judge else None, qids={ex.qid for ex in dataset.examples}
    )


def summarize(
    out_dir: str | Path, *, judge_name: str | None = None, qids: set[str] | None = None
) -> dict[str, Any]:
    """Aggregate `results.jsonl` per run into summary.json, table.md, by_type.md and plot.png.

    `qids` restricts the summary to the questions of the current selection (so a `--limit 10` run
    compares modes on the same ten questions even when the folder holds more)."""
    out_dir = Path(out_dir)
    records = [r for r in store_for(out_dir).records() if qids is None or r.get("qid") in qids]
    runs: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        runs.setdefault(str(r["run"]), []).append(r)
    summary: dict[str, Any] = {"dataset": records[0]["dataset"] if records else None, "runs": {}}
    if judge_name:
        summary["judge"] = judge_name
    for run, recs in sorted(runs.items()):
        ok = [r for r in recs if not r.get("error")]
        agg = aggregate(ok)
        agg["n_errors"] = len(recs) - len(ok)
        agg["mean_elapsed_s"] = sum(r.get("elapsed_s", 0.0) for r in ok) / len(ok) if ok else None
        agg["stats"] = _mean_stats(ok)
        summary["runs"][run] = agg
    write_json(out_dir / "summary.json", summary)
    _write_tables(out_dir, summary)
    return summary


STAT_COLUMNS = {  # per-question stats worth a column (means per question), as "table header": stats key
    "LLM calls": "llm_calls",
    "prompt tok": "prompt_tokens",
    "eval prompt tok": "evaluated_prompt_tokens",
    "gen tok": "completion_tokens",
    "tool calls": "tool_calls",
    "distinct tools": "distinct_tools",
    "tool err %": "tool_error_pct",  # derived: 100 * mean tool errors / mean tool calls
    "invalid turns": "invalid_turns",
    "answers by model": "model_answer",  # share of final answers from the model policy's answer action
    "model folds": "folds",
    "guard folds": "guard_folds",
    "unfolds": "unfolds",
    "reader answers": "reader_calls",
    "peak ctx": "peak_context_tokens",
}


def _mean_stats(records: list[dict[str, Any]]) -> dict[str, float]:
    """Mean of each numeric per-question stat (LLM calls, tokens, folds, peak context…)."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for r in records:
        for key, value in (r.get("stats") or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                sums[key] = sums.get(key, 0.0) + float(value)
                counts[key] = counts.get(key, 0) + 1
    means = {k: sums[k] / counts[k] for k in sums}
    if means.get("tool_calls"):
        means["tool_error_pct"] = 100.0 * means.get("tool_errors", 0.0) / means["tool_calls"]
    return means


def _write_tables(out_dir: Path, summary: dict[str, Any]) -> None:
    runs: dict[str, Any] = summary["runs"]
    present = [m for m in TABLE_METRICS if any(m in agg["overall"] for agg in runs.values())]
    stat_cols = [
        h for h, key in STAT_COLUMNS.items() if any(key in agg.get("stats", {}) for agg in runs.values())
    ]
    rows = [
        {
            "run": run,
            "n": agg["n"],
            "errors": agg["n_errors"],
            "s/q": agg["mean_elapsed_s"],
            **agg["overall"],
            **{h: agg.get("stats", {}).get(STAT_COLUMNS[h]) for h in stat_cols},
        }
        for run, agg in runs.items()
    ]
    title = f"{summary.get('dataset') or 'multihop'}"
    text = f"## {title}\n\n" + markdown_table(
        rows, ["run", "n", "errors", *present, "s/q", *stat_cols], digits=2
    )
    if summary.get("judge"):
        text += f"\nLLM judge: {summary['judge']}\n"
    (out_dir / "table.md").write_text(text, encoding="utf-8")
    by_type_rows = [
        {"run": run, "type": qtype, **vals}
        for run, agg in runs.items()
        for qtype, vals in agg["by_type"].items()
    ]
    (out_dir / "by_type.md").write_text(
        f"## {title} by question type\n\n" + markdown_table(by_type_rows, ["run", "type", "n", *present]),
        encoding="utf-8",
    )
    if present:
        grouped_bar_plot(
            {run: agg["overall"] for run, agg in runs.items()}, present, out_dir / "plot.png", title=title
        )
