"""EventRAG benchmark on the shared multi-hop corpora (2Wiki, HotpotQA-100, MuSiQue-100).

Prints, side by side in one run: Recall@2/5/10 of gold passages for BM25, dense, dense+BM25 RRF and
the eventfold modes naive/graph/event/agentic (agentic without an LLM: rule-based reflection), the
extractor used, indexing cost (chunks/min, LLM calls per chunk, cache hit rate on re-index) and
retrieval latency p50/p95 without LLM calls.

    python bench/eventrag.py --dataset 2wiki --extract rules
    python bench/eventrag.py --dataset 2wiki --extract llm --subset 10 --distractors 40   # small LLM subset

`--subset N` keeps the first N questions and a corpus of all their gold passages plus a fixed random
sample (seed 0) of `--distractors` other passages: the documented subset for LLM extraction on a CPU.
Timings on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402

from cli.index_progress import index_progress_bar  # noqa: E402
from eval.bundled_data import MULTIHOP_DIR  # noqa: E402
from eventfold.settings import Settings  # noqa: E402
from eventrag.query.lexical import LexicalIndex  # noqa: E402
from eventrag.query.ranking import RetrievalConfig  # noqa: E402
from eventrag.schema import Document  # noqa: E402

DATA = MULTIHOP_DIR  # the repository's data/multihop; --data-dir points elsewhere
KS = (2, 5, 10)
MODES = ("naive", "graph", "event", "agentic")


@dataclass
class Question:
    text: str
    gold: set[str]  # doc ids
    hops: list[str] | None = None  # MuSiQue: the supporting passage of each hop, in order


def load(dataset: str, data_dir: Path) -> tuple[list[Document], list[Question]]:
    if dataset == "2wiki":
        corpus = json.loads((data_dir / "2wiki/2wikimultihopqa_corpus.json").read_text())
        docs = [Document(doc_id=f"p{i}", title=p["title"], text=p["text"]) for i, p in enumerate(corpus)]
        by_title: dict[str, set[str]] = {}
        for d in docs:
            by_title.setdefault(d.title, set()).add(d.doc_id)
        qs = [
            json.loads(line)
            for line in (data_dir / "2wiki/2wiki_retrieval101.jsonl").read_text().splitlines()
            if line
        ]
        return docs, [
            Question(q["question"], {i for t in q["gold_titles"] for i in by_title.get(t, ())}) for q in qs
        ]
    if dataset == "hotpotqa":
        corpus = json.loads((data_dir / "hotpotqa_train100/hotpotqa_train_corpus.json").read_text())
        docs = [
            Document(doc_id=f"p{i}", title=t, text="".join(s).strip())
            for i, (t, s) in enumerate(corpus.items())
        ]
        by_title = {d.title: {d.doc_id} for d in docs}
        qs = json.loads((data_dir / "hotpotqa_train100/hotpotqa_train.json").read_text())
        return docs, [
            Question(q["question"], {i for t, _ in q["supporting_facts"] for i in by_title.get(t, ())})
            for q in qs
        ]
    if dataset == "musique":
        corpus = json.loads((data_dir / "musique_train100/musique_train_corpus.json").read_text())
        docs = [Document(doc_id=f"p{i}", title=p["title"], text=p["text"]) for i, p in enumerate(corpus)]
        by_key = {(d.title, d.text.strip()): d.doc_id for d in docs}
        qs = json.loads((data_dir / "musique_train100/musique_train.json").read_text())
        out = []
        for q in qs:
            keys = [(p["title"], p["paragraph_text"].strip()) for p in q["paragraphs"]]
            gold = {by_key[k] for p, k in zip(q["paragraphs"], keys, strict=True) if p["is_supporting"] and k in by_key}
            steps = [s.get("paragraph_support_idx") for s in q.get("question_decomposition") or []]
            hops = [by_key.get(keys[i], "") if isinstance(i, int) and 0 <= i < len(keys) else "" for i in steps]
            out.append(Question(q["question"], gold, hops or None))
        return docs, out
    raise SystemExit(f"unknown dataset {dataset!r}")


def subset(
    docs: list[Document], qs: list[Question], n: int, distractors: int
) -> tuple[list[Document], list[Question]]:
    qs = qs[:n]
    gold = set().union(*(q.gold for q in qs))
    rest = sorted(d.doc_id for d in docs if d.doc_id not in gold)
    keep = gold | set(random.Random(0).sample(rest, min(distractors, len(rest))))
    return [d for d in docs if d.doc_id in keep], qs


def recall(ranked: list[str], gold: set[str], k: int) -> float:
    top = list(dict.fromkeys(ranked))[:k]
    return len(gold & set(top)) / len(gold) if gold else 0.0


def rrf(*rankings: list[str], k: int = 60) -> list[str]:
    score: dict[str, float] = {}
    for r in rankings:
        for i, d in enumerate(dict.fromkeys(r)):
            score[d] = score.get(d, 0.0) + 1.0 / (k + i + 1)
    return sorted(score, key=lambda d: -score[d])


class TimedEmbedder:
    """Wraps the real embedder to tell query-embedding time apart from the rest of retrieval."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.dim = inner.dim  # type: ignore[attr-defined]
        self.name = getattr(inner, "name", "embedder")
        self.seconds = 0.0

    def embed(self, texts: list[str]) -> np.ndarray:
        t0 = time.perf_counter()
        try:
            return self.inner.embed(texts)  # type: ignore[attr-defined]
        finally:
            self.seconds += time.perf_counter() - t0

    def __getattr__(self, name: str) -> object:  # e.g. embed_with_spans (late chunking) when the inner one has it
        return getattr(self.inner, name)


def retrieval_config(overrides: list[str]) -> RetrievalConfig:
    """`["w_ppr=0.5", "hops=2"]` -> a RetrievalConfig with those fields changed (types from the defaults)."""
    base = RetrievalConfig()
    changes: dict[str, object] = {}
    for item in overrides:
        key, _, value = item.partition("=")
        if not hasattr(base, key) or not value:
            raise SystemExit(f"--set {item!r}: expected FIELD=VALUE with a RetrievalConfig field")
        kind = type(getattr(base, key))
        changes[key] = value if kind is str else kind(float(value)) if kind is int else kind(value)
    return replace(base, **changes)  # type: ignore[arg-type]


def sweep(retriever: object, qs: list[Question], modes: list[str], base: RetrievalConfig, grid: list[str]) -> None:
    """R@2/5/10 per mode for each combination of the grid's values (one process, one index)."""
    import itertools

    axes = [(k, v.split(",")) for k, _, v in (g.partition("=") for g in grid)]
    print(f"{'config':<60}{'mode':<9}" + "".join(f"R@{k:<6}" for k in KS), flush=True)
    for combo in itertools.product(*(vals for _, vals in axes)):
        items = [f"{k}={v}" for (k, _), v in zip(axes, combo, strict=True)]
        cfg = replace(base, **{f: getattr(retrieval_config(items), f) for f, _ in axes})
        retriever.config = cfg  # type: ignore[attr-defined]
        for mode in modes:
            got: dict[int, list[float]] = {k: [] for k in KS}
            hops: dict[int, list[float]] = {}
            for q in qs:
                ranked = [c.doc_id for c in retriever.retrieve(q.text, mode=mode, top_k=10).chunks]  # type: ignore[attr-defined]
                for k in KS:
                    got[k].append(recall(ranked, q.gold, k))
                for i, doc in enumerate(q.hops or []):
                    hops.setdefault(i + 1, []).append(float(doc in ranked[:5]))
            per_hop = " ".join(f"h{h}:{np.mean(v):.2f}" for h, v in sorted(hops.items()))
            print(f"{' '.join(items):<60}{mode:<9}" + "".join(f"{np.mean(got[k]):<8.3f}" for k in KS) + per_hop,
                  flush=True)


@dataclass
class EventragBench:
    """The benchmark's options (see ``parse_args``)."""

    dataset: str
    data_dir: Path
    extract: str
    model: str
    model_path: Path | None
    threads: int
    subset: int
    distractors: int
    graph: str
    home: Path | None
    json: Path | None
    modes: str
    set: list[str]
    limit: int
    grid: list[str]


def parse_args(argv: list[str] | None = None) -> EventragBench:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=["2wiki", "hotpotqa", "musique"], default="2wiki")
    ap.add_argument("--data-dir", type=Path, default=DATA)
    ap.add_argument("--extract", choices=["rules", "llm"], default="rules")
    ap.add_argument("--model", default="qwen2.5-coder-0.5b", help="packaged GGUF used for --extract llm")
    ap.add_argument(
        "--model-path", type=Path, default=None, help="GGUF file (default: the pulled packaged model)"
    )
    ap.add_argument(
        "--threads", type=int, default=1, help="llama.cpp threads (1 is fastest on a contended CPU)"
    )
    ap.add_argument("--subset", type=int, default=0, help="first N questions + their gold + distractors")
    ap.add_argument("--distractors", type=int, default=40)
    ap.add_argument("--graph", choices=["embedded", "neo4j"], default="embedded")
    ap.add_argument(
        "--home", type=Path, default=None, help="where indexes and the LLM cache go (default: temp)"
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated eventfold modes to run")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a RetrievalConfig field (repeatable), e.g. --set w_ppr=0")
    ap.add_argument("--limit", type=int, default=0, help="first N questions only")
    ap.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                    help="tuning sweep: recall of --modes for every combination of these RetrievalConfig values")
    return EventragBench(**vars(ap.parse_args(argv)))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from eventrag.embed import make_embedder
    from eventrag.stack import open_stack

    docs, qs = load(args.dataset, args.data_dir)
    if args.subset:
        docs, qs = subset(docs, qs, args.subset, args.distractors)
    qs = [q for q in qs if q.gold]
    if args.limit:
        qs = qs[: args.limit]
    modes = [m for m in args.modes.split(",") if m]
    if any(m not in MODES for m in modes):
        raise SystemExit(f"--modes: choose from {', '.join(MODES)}")
    retrieval = retrieval_config(args.set)
    home = args.home or Path(tempfile.mkdtemp(prefix="eventrag-bench-"))
    settings = bench_settings(args, home, len(docs))
    print(
        f"dataset={args.dataset} passages={len(docs)} questions={len(qs)} extract={args.extract}"
        f"{' model=' + args.model if args.extract == 'llm' else ''} graph={args.graph} home={home}",
        flush=True,
    )
    res: dict[str, object] = {"dataset": args.dataset, "passages": len(docs), "questions": len(qs),
                              "extract": args.extract, "model": args.model if args.extract == "llm" else None}  # fmt: skip
    embedder = TimedEmbedder(make_embedder(settings))
    with open_stack(settings, embedder=embedder, extract=args.extract, retrieval=retrieval) as stack:
        res |= index_numbers(stack, docs, settings, home)
        if args.extract == "llm":  # re-index every chunk into a second namespace: all calls from the cache
            stack2_settings = settings.model_copy(update={"index": settings.index + "-re"})
            with open_stack(stack2_settings, extract="llm") as stack2:
                s2 = stack2.indexer.index_documents(docs)
            res["reindex_cache_hit_rate"] = s2.cache_hit_rate
            res["reindex_s"] = s2.elapsed_s
        # baselines over the same chunks
        stack.retriever.chat_model = None  # latency and recall below are measured without LLM calls
        t0 = time.perf_counter()
        stack.retriever.cache.get()
        res["query_cache_build_s"] = time.perf_counter() - t0
        print(f"query cache (BM25, lexicon, passage graph, vector matrices) built in {res['query_cache_build_s']:.1f}s")
        if args.grid:
            sweep(stack.retriever, qs, modes, retrieval, args.grid)
            return
        scores = measure(stack, embedder, qs, modes)
    res["config_overrides"] = args.set
    scores.report(res)
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))


def bench_settings(args: EventragBench, home: Path, n_docs: int) -> Settings:
    """Settings of a fresh index under ``home`` (one per dataset, extractor and corpus size)."""
    from eventfold.settings import default_home

    model_path = args.model_path or default_home() / "models" / f"{args.model}.gguf"
    llm = {"packaged_model": args.model, "model_path": str(model_path), "n_ctx": 4096, "concurrency": 1,
           "n_threads": args.threads}  # fmt: skip
    return Settings(
        home=home, index=f"{args.dataset}-{args.extract}-{n_docs}", llm=llm, graph={"backend": args.graph}
    )


def index_numbers(stack: Any, docs: list[Document], settings: Settings, home: Path) -> dict[str, object]:
    """Index ``docs`` (or reuse the index) and return the build's numbers: from this run, or recorded by
    the run that built it."""
    with index_progress_bar(Console(stderr=True)) as progress:
        s = stack.indexer.index_documents(docs, progress=progress)
    print(f"index: {s.docs_indexed} docs, {s.chunks} chunks, {s.events} events, {s.entities} entities, "
          f"{s.entity_merges} merges, {s.edges} edges ({s.inferred_edges} inferred), {s.chunks_failed} failed, "
          f"{s.llm_calls} LLM calls, {s.elapsed_s:.1f}s", flush=True)  # fmt: skip
    record = home / f"{settings.index}.index.json"  # the build's own numbers, for reruns on the same index
    if s.docs_indexed:
        record.write_text(json.dumps(s.model_dump(exclude={"skipped", "failures"}), indent=2))
    elif record.is_file():
        s = s.model_validate(json.loads(record.read_text()))
        print(f"(index reused: indexing numbers below are from its build, {record})")
    else:
        print("(index reused from an earlier run: indexing numbers above are not a measurement)")
    return {"index": s.model_dump(exclude={"skipped", "failures"}),
            "chunks_per_min": s.chunks / s.elapsed_s * 60 if s.elapsed_s and s.chunks else 0.0,
            "llm_calls_per_chunk": s.llm_calls_per_chunk}  # fmt: skip


@dataclass
class Scores:
    """Recall@k per system, per-hop hits (MuSiQue) and retrieval latency per mode."""

    table: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    hop_hits: dict[str, dict[int, list[float]]] = field(default_factory=dict)  # system -> hop -> found in top 5
    lat: dict[str, list[float]] = field(default_factory=dict)
    lat_noemb: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, ranked_docs: list[str], q: Question) -> None:
        for k in KS:
            self.table.setdefault(name, {}).setdefault(k, []).append(recall(ranked_docs, q.gold, k))
        top5 = set(list(dict.fromkeys(ranked_docs))[:5])
        for i, doc in enumerate(q.hops or []):
            if doc:
                self.hop_hits.setdefault(name, {}).setdefault(i + 1, []).append(float(doc in top5))

    def report(self, res: dict[str, object]) -> None:
        """Print the recall, per-hop and latency tables and the indexing cost; add them to ``res``."""
        rows = {name: {k: float(np.mean(v)) for k, v in ks.items()} for name, ks in self.table.items()}
        best_base = max(rows[b][5] for b in ("BM25", "dense", "dense+BM25 RRF"))
        print(f"\n{'system':<22}" + "".join(f"R@{k:<7}" for k in KS) + "R@5 vs best baseline")
        for name, r in rows.items():
            print(f"{name:<22}" + "".join(f"{r[k]:<9.3f}" for k in KS) + f"{r[5] - best_base:+.3f}")
        if self.hop_hits:  # which hop is lost: recall@5 of each hop's supporting passage
            n_hops = max(h for v in self.hop_hits.values() for h in v)
            print("\nper hop (MuSiQue decomposition): R@5 of the hop's supporting passage")
            print(f"{'system':<22}" + "".join(f"hop {h:<5}" for h in range(1, n_hops + 1)))
            for name, hv in self.hop_hits.items():
                print(f"{name:<22}" + "".join(f"{np.mean(hv[h]):<9.3f}" if h in hv else f"{'-':<9}" for h in range(1, n_hops + 1)))
            res["per_hop_r5"] = {name: {h: float(np.mean(v)) for h, v in hv.items()} for name, hv in self.hop_hits.items()}
        print("\nlatency (no LLM calls; shared 2-core machine, noisy):")
        for mode, v in self.lat.items():
            w = self.lat_noemb[mode]
            print(
                f"  {mode:<8} p50 {np.percentile(v, 50) * 1000:7.1f} ms   p95 {np.percentile(v, 95) * 1000:7.1f} ms"
                f"   | without query embedding: p50 {np.percentile(w, 50) * 1000:6.1f} ms  p95 {np.percentile(w, 95) * 1000:6.1f} ms"
            )
        hit = res.get("reindex_cache_hit_rate")
        print(f"\nindexing: {res['chunks_per_min']:.0f} chunks/min, {res['llm_calls_per_chunk']:.2f} LLM calls/chunk"
              + (f", re-index cache hit rate {hit:.0%}" if hit is not None else ""))  # fmt: skip
        res["recall"] = rows
        res["latency_ms"] = {
            m: {"p50": float(np.percentile(v, 50) * 1000), "p95": float(np.percentile(v, 95) * 1000),
                "p50_no_embed": float(np.percentile(self.lat_noemb[m], 50) * 1000),
                "p95_no_embed": float(np.percentile(self.lat_noemb[m], 95) * 1000)}  # fmt: skip
            for m, v in self.lat.items()
        }


def measure(stack: Any, embedder: TimedEmbedder, qs: list[Question], modes: list[str]) -> Scores:
    """BM25, dense, dense+BM25 RRF and each eventfold mode on every question, with latencies."""
    lex = LexicalIndex.build(stack.graph)
    chunk_doc = {n.id: n.props["doc_id"] for n in stack.graph.find_nodes("Chunk", limit=10_000_000)}
    scores = Scores()
    for qi, q in enumerate(qs, 1):
        if qi % 20 == 0:
            print(f"  retrieval: {qi}/{len(qs)} questions", flush=True)
        bm25 = [chunk_doc[c] for c, _ in lex.search(q.text, 30)]
        scores.add("BM25", bm25, q)
        for mode in ["naive", *modes] if "naive" not in modes else modes:
            stack.retriever.query_vectors.clear()  # every latency below includes embedding the query
            t0, e0 = time.perf_counter(), embedder.seconds
            r = stack.retriever.retrieve(q.text, mode=mode, top_k=10)
            scores.lat.setdefault(mode, []).append(time.perf_counter() - t0)
            scores.lat_noemb.setdefault(mode, []).append(time.perf_counter() - t0 - (embedder.seconds - e0))
            ranked = [c.doc_id for c in r.chunks]
            if mode == "naive":
                scores.add("dense", ranked, q)
                scores.add("dense+BM25 RRF", rrf(ranked, bm25), q)
            else:
                scores.add(f"eventfold {mode}", ranked, q)
    return scores


if __name__ == "__main__":
    main()
