"""Agent benchmark: naive RAG, event retrieval, the workflow policy and the model policy with and without
fold/unfold, side by side.

One process, one model, one index per set (rule extraction, the set's whole corpus), the LLM response
cache off so times are real. Questions run in batches: every system answers a batch before the next one
starts, so a run cut short still compares all systems on the same questions.

    flock /tmp/eventfold-bench.lock python bench/agent.py --sets all --limit 20

Systems (`--systems`): `naive`, `event` (retrieve + reader), `workflow` (the scripted policy),
`model` (the model policy, fold/unfold on), `model-nofold` (the model policy as plain ReAct).
Sets (`--sets`, comma-separated, or `all`): `sample` (examples/questions.jsonl over examples/corpus), every
folder `examples/<name>/` holding a questions.jsonl (over its corpus/ folder, else its own .md files),
`origin` (bench/data/origin_questions.jsonl over examples/corpus), `hotpotqa` and `musique` (the first
`--limit` questions of `<data-dir>/multihop/<name>_train100` over the set's whole corpus), and any
`--set name=corpus_dir,questions_file`. Per set, `<out>/<set>/` gets results.jsonl (a rerun skips the
questions already answered), summary.json, table.md (the systems side by side, the load average) and
by_type.md (per question type, the model policy's gap to the workflow policy); `<out>/agent.md` collects
them. After each set's table comes its decision table (`eval.decisions`): the model policy's steps record
the workflow policy's call at each turn unless `--no-trace`.
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

from eval.agent_call import AgentCaller, run_eventfold_agent  # noqa: E402
from eval.agent_table import render_by_type, render_table  # noqa: E402
from eval.bundled_data import DATA_DIR  # noqa: E402
from eval.decisions.table import render_decisions  # noqa: E402
from eval.decisions.trace import traces_from_rows  # noqa: E402
from eval.local_sets import SHARED_SETS, SetError, load_set, local_sets, parse_set  # noqa: E402
from eval.multihop.corpus_index import open_indexed_stack  # noqa: E402
from eval.multihop.runner import run_multihop, store_for, summarize  # noqa: E402
from eval.multihop.schema import QADataset  # noqa: E402
from eval.multihop.systems import AgentSystem, QASystem, RetrieveAndRead  # noqa: E402
from eventfold.llm.factory import make_chat_model  # noqa: E402
from eventfold.settings import Settings  # noqa: E402

SYSTEMS = ("naive", "event", "workflow", "model", "model-nofold")
AGENTS = {"workflow": ("workflow", True), "model": ("model", True), "model-nofold": ("model", False)}


def set_names(spec: str, extra: dict[str, tuple[Path, Path]]) -> list[str]:
    if spec.strip() == "all":
        return [n for n in local_sets(ROOT) if n != "origin"] + [*extra, *SHARED_SETS]
    return [s.strip() for s in spec.split(",") if s.strip()]


def make_system(name: str, retriever: Any, chat: Any, settings: Settings, trace: bool = True) -> QASystem:
    """A system by name; the model policy's steps record the workflow policy's call when `trace`."""
    if name in ("naive", "event"):
        return RetrieveAndRead(retriever, name, chat, top_k=10, read_k=10)  # type: ignore[arg-type]
    policy, fold = AGENTS[name]
    return AgentSystem(AgentCaller(run_eventfold_agent, settings, retriever, chat, fold=fold, policy=policy,
                                   trace_workflow=trace and policy == "model"))  # fmt: skip


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def progress(name: str):
    def show(r: dict[str, Any]) -> None:
        stats = r.get("stats") or {}
        print(f"[{name}] {r['run']} {r['qid']}: {str(r.get('answer'))[:60]!r} em={r.get('metrics', {}).get('em')} "
              f"calls={stats.get('tool_calls', '–')} by={stats.get('answer_source', '–')} "
              f"{r.get('elapsed_s', 0):.0f}s {r.get('error', '')}", flush=True)  # fmt: skip

    return show


def run_batches(name: str, full: QADataset, systems: list[QASystem], args: argparse.Namespace) -> list[str]:
    """Every system answers each batch of the first `--limit` questions; the qids done (a batch is
    started only before the deadline)."""
    examples = full.examples[: args.limit]
    done: list[str] = []
    for i in range(0, len(examples), args.batch):
        if args.deadline and time.time() > args.deadline:
            print(f"[{name}] deadline reached after {len(done)} questions", flush=True)
            break
        batch = full.model_copy(update={"examples": examples[i : i + args.batch]})
        for system in systems:
            run_multihop(batch, system, args.out / name, on_record=progress(name))
        done += [ex.qid for ex in batch.examples]
    return done


def write_tables(name: str, out_dir: Path, done: list[str], note: str, systems: list[str]) -> str:
    """summary.json (the harness's), table.md and by_type.md over the questions done; the set's text."""
    summarize(out_dir, qids=set(done))
    records = [r for r in store_for(out_dir).records() if r.get("qid") in set(done)]
    table = f"## {name}\n\n{render_table(records, systems)}\n{note}\n"
    decisions = render_decisions(traces_from_rows(records), systems)
    if decisions:
        table += f"\n### {name}: decisions against the workflow policy\n\n{decisions}"
    by_type = f"## {name} by question type\n\n{render_by_type(records, systems)}"
    (out_dir / "table.md").write_text(table, encoding="utf-8")
    (out_dir / "by_type.md").write_text(by_type, encoding="utf-8")
    return f"{table}\n{by_type}"


def run_set(name: str, args: argparse.Namespace, settings: Settings, chat: Any) -> str:
    full = load_set(name, ROOT, args.data_dir, args.extra_sets)
    started, load_start = time.time(), load()
    stack, summary = open_indexed_stack(settings, full, full.passages, extract="rules", chat_model=None)
    print(f"[{name}] index ready ({len(full.passages)} passages): {str(summary)[:200]}", flush=True)
    try:
        systems = [make_system(s, stack.retriever, chat, settings, not args.no_trace) for s in args.systems]
        done = run_batches(name, full, systems, args)
    finally:
        stack.close()
    minutes = (time.time() - started) / 60
    note = (f"questions: {len(done)} of the first {args.limit} ({', '.join(done)}); {minutes:.0f} min; "
            f"model {chat.name}, rules index, {len(full.passages)} passages; "
            f"load average (1/5/15 min) at start {load_start}, at end {load()}")  # fmt: skip
    return write_tables(name, args.out / name, done, note, args.systems)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="all", help="comma-separated set names, or all")
    ap.add_argument(
        "--set", dest="set_specs", action="append", default=[], metavar="NAME=CORPUS_DIR,QUESTIONS"
    )
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR, help="holds multihop/<set>_train100")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "agent")
    ap.add_argument("--no-trace", action="store_true",
                    help="the model policy's steps do not record the workflow policy's call (no agreement measures)")
    ap.add_argument("--minutes", type=float, default=0.0, help="stop starting new batches after this long")
    ap.add_argument(
        "--home", type=Path, default=None, help="EVENTFOLD_HOME for the indexes (default: settings)"
    )
    args = ap.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        ap.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    try:
        args.extra_sets = dict(parse_set(s) for s in args.set_specs)
    except SetError as exc:
        ap.error(str(exc))
    args.deadline = time.time() + args.minutes * 60 if args.minutes else 0.0
    return args


def model_identity(settings: Settings, chat: Any) -> dict[str, Any]:
    """What the rows in ``--out`` were answered with: the model's name, its files (size, mtime) and the
    run options. A retrained model saved to the same folder has the same name but other files."""
    files: dict[str, list[int]] = {}
    for root in (settings.llm.hf_model_dir, settings.llm.model_path):
        path = Path(root).expanduser() if root is not None else None
        found = [path] if path and path.is_file() else sorted(path.iterdir()) if path and path.is_dir() else []
        for f in found:
            if f.is_file() and f.suffix in (".safetensors", ".gguf", ".json", ".bin"):
                files[f.name] = [f.stat().st_size, f.stat().st_mtime_ns]
    return {"model": chat.name, "files": files, "run": settings.run.model_dump(mode="json")}


def claim_out(out: Path, identity: dict[str, Any]) -> None:
    """Rows already in ``out`` are resumed, not answered again: only when the same model and options
    wrote them (else the table would mix two models under one name)."""
    path = out / "model.json"
    if path.is_file() and json.loads(path.read_text(encoding="utf-8")) != identity:
        raise SystemExit(f"error: {out} holds rows of another model or other run options ({path}); "
                         "pass another --out, or remove the folder to answer again")  # fmt: skip
    path.write_text(json.dumps(identity, indent=1), encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = Settings(home=args.home) if args.home else Settings()
    names = set_names(args.sets, args.extra_sets)
    for name in names:  # every set is read once before any model or index work: a bad name fails fast
        load_set(name, ROOT, args.data_dir, args.extra_sets)
    chat = make_chat_model(settings, cache=False)
    print(f"model {chat.name}; load average {load()}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    claim_out(args.out, model_identity(settings, chat))
    parts = []
    for name in names:
        parts.append(run_set(name, args, settings, chat))
        (args.out / "agent.md").write_text(
            f"# Agent benchmark ({chat.name}, rules index)\n\n" + "\n".join(parts)
        )
        print(parts[-1], flush=True)


if __name__ == "__main__":
    main()
