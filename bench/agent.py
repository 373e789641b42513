"""Agent benchmark: naive RAG, event retrieval, the agent without and with fold/unfold, side by side.

One process, one model, one index per set (rule extraction, full corpus), the LLM response cache off
so times are real. Questions are run in batches: every system answers a batch before the next one
starts, so a run cut short still compares all systems on the same questions.

    flock /tmp/eventfold-bench.lock python bench/agent.py --sets sample,hotpotqa,musique --limit 20

Sets: `sample` (examples/questions.jsonl over examples/corpus), `origin` (bench/data/origin_questions.jsonl:
"what event led to X" over the same corpus, the README's demo question first), `hotpotqa`, `musique` (the first
`--limit` questions of data/multihop/*_train100 over the set's whole corpus). Per set, the
eval harness writes results.jsonl / summary.json / table.md under `<out>/<set>/` (a rerun skips the
questions already answered); `<out>/agent.md` collects the tables with the load average.
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
from eval.bundled_data import DATA_DIR  # noqa: E402
from eval.multihop.corpus_index import open_indexed_stack  # noqa: E402
from eval.multihop.loaders import resolve_dataset  # noqa: E402
from eval.multihop.runner import run_multihop, summarize  # noqa: E402
from eval.multihop.schema import Passage, QADataset, QAExample  # noqa: E402
from eval.multihop.systems import AgentSystem, QASystem, RetrieveAndRead  # noqa: E402
from eventfold.llm.factory import make_chat_model  # noqa: E402
from eventfold.settings import Settings  # noqa: E402
from eventrag.index.documents import load_file  # noqa: E402

SYSTEMS = ("naive", "event", "agent-nofold", "agent")


def sample_set(root: Path, questions: Path | None = None, name: str = "sample") -> QADataset:
    """The sample corpus and its eight questions (or those of `questions`) as a QA set (one passage per
    file), each titled as `ask --corpus` titles it (its Markdown heading, `load_file`): with file names
    for titles the readers saw "(10-seaguard-s3)" where a user's run shows "(SeaGuard S3 and the HT-Core
    Element)", and the bench answered sample q6 otherwise than `ask`."""
    docs = {f.name: load_file(f)[0] for f in sorted((root / "examples" / "corpus").glob("*.md"))}  # each file read once
    titles = {name: doc.title for name, doc in docs.items()}
    passages = [Passage(passage_id=name, title=doc.title, text=doc.text) for name, doc in docs.items()]
    examples = []
    for line in (questions or root / "examples" / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        examples.append(
            QAExample(qid=row["id"], question=row["question"], answers=[row["answer"]],
                      question_type=row.get("type", "unknown"),
                      gold_titles=[titles[Path(d).name] for d in row.get("supporting_docs", [])])  # fmt: skip
        )
    return QADataset(name=name, examples=examples, passages=passages)


def load_set(name: str, data_dir: Path) -> QADataset:
    if name == "origin":  # origin questions over the sample corpus ("what event led to X"; the README's demo first)
        return sample_set(ROOT, ROOT / "bench" / "data" / "origin_questions.jsonl", name="origin")
    return sample_set(ROOT) if name == "sample" else resolve_dataset(name, data_dir)


def make_system(name: str, retriever: Any, chat: Any, settings: Settings) -> QASystem:
    if name in ("naive", "event"):
        return RetrieveAndRead(retriever, name, chat, top_k=10, read_k=10)  # type: ignore[arg-type]
    return AgentSystem(AgentCaller(run_eventfold_agent, settings, retriever, chat, fold=name == "agent"))


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def run_set(name: str, args: argparse.Namespace, settings: Settings, chat: Any) -> str:
    full = load_set(name, args.data_dir)
    examples = full.examples[: args.limit]
    out_dir = args.out / name
    started, load_start = time.time(), load()
    stack, summary = open_indexed_stack(settings, full, full.passages, extract="rules", chat_model=None)
    print(f"[{name}] index ready ({len(full.passages)} passages): {str(summary)[:200]}", flush=True)
    done: list[str] = []
    try:
        systems = [make_system(s, stack.retriever, chat, settings) for s in args.systems]
        for i in range(0, len(examples), args.batch):
            if args.deadline and time.time() > args.deadline:
                print(f"[{name}] deadline reached after {len(done)} questions", flush=True)
                break
            batch = full.model_copy(update={"examples": examples[i : i + args.batch]})
            for system in systems:
                run_multihop(batch, system, out_dir, on_record=lambda r: print(
                    f"[{name}] {r['run']} {r['qid']}: {str(r.get('answer'))[:60]!r} em={r.get('metrics', {}).get('em')}"
                    f" {r.get('elapsed_s', 0):.0f}s", flush=True))  # fmt: skip
            done += [ex.qid for ex in batch.examples]
    finally:
        stack.close()
    summary_all = summarize(out_dir, qids=set(done))
    table = (out_dir / "table.md").read_text(encoding="utf-8")
    minutes = (time.time() - started) / 60
    return (f"{table}\nquestions: {len(done)} of the first {args.limit} ({', '.join(done)}); "
            f"{minutes:.0f} min; load average at start {load_start}, at end {load()}; "
            f"runs: {', '.join(summary_all['runs'])}\n")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="sample,hotpotqa,musique")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "agent")
    ap.add_argument("--minutes", type=float, default=0.0, help="stop starting new batches after this long")
    ap.add_argument("--home", type=Path, default=None, help="EVENTFOLD_HOME for the indexes (default: settings)")
    args = ap.parse_args()
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        ap.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    args.deadline = time.time() + args.minutes * 60 if args.minutes else 0.0
    settings = Settings(home=args.home) if args.home else Settings()
    chat = make_chat_model(settings, cache=False)
    print(f"model {chat.name}; load average {load()}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    parts = []
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        parts.append(run_set(name, args, settings, chat))
        (args.out / "agent.md").write_text(f"# Agent benchmark ({chat.name}, rules index)\n\n" + "\n".join(parts))
        print(parts[-1], flush=True)


if __name__ == "__main__":
    main()
