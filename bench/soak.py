"""Soak test of indexing and retrieval (not a unit test): nothing lost, nothing crashes.

On a generated corpus of `--docs` Markdown files (people, places, dated events, in sub-folders with
repeated file names) it runs `--rounds` incremental re-indexes, each after random edits, deletions and
additions, and after each one compares the incremental index with a clean index of the same folder:
graph counts by label and edge type, vector counts, and the top-5 chunk ids of fixed queries in every
mode. Between re-indexes it makes `--calls` retrieve calls in total (modes mixed, rule-based agentic).
The comparison's own retrieve calls on the incremental index (fixed queries x 4 modes per round) count
toward `--calls`; the rest are random questions in rotating modes. It reports errors, mismatches,
p50/p95 latency per mode and resident memory at start and end. `--deadline-s` stops after the round
that passes it and reports the rounds done (a scaled-down run says so in its first line).

    flock /tmp/eventfold-bench.lock timeout 3000 python bench/soak.py --docs 300 --rounds 50 --calls 1000

Indexing uses the rule extractor (no LLM), the embedded SQLite graph and Milvus Lite under
`--home` (default /tmp/eventfold-soak). The clean index re-uses embeddings of unchanged texts from a cache
(the embedder is deterministic), so it is rebuilt from scratch in the graph and vector stores without
paying for the model again. Exit status 1 when any error or mismatch was seen.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventfold.settings import Settings  # noqa: E402

MODES = ("naive", "graph", "event", "agentic")
FIRST = [
    "Alba",
    "Bram",
    "Cora",
    "Dmitri",
    "Elin",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kira",
    "Lev",
    "Mara",
    "Nils",
    "Olga",
    "Pavel",
    "Quinn",
    "Rosa",
    "Sven",
    "Tala",
    "Udo",
    "Vera",
    "Wim",
    "Xenia",
    "Yusuf",
    "Zora",
]
LAST = [
    "Reed",
    "Holt",
    "Wynn",
    "Oss",
    "Lind",
    "Quill",
    "Berg",
    "Vance",
    "Marsh",
    "Kell",
    "Dunn",
    "Rask",
    "Sorel",
]
PLACES = [
    "Tarn",
    "Vrana",
    "Millbrook",
    "Kestrel",
    "Oslo",
    "Split",
    "Graz",
    "Linz",
    "Basel",
    "Varna",
    "Riga",
    "Bergen",
]
THINGS = [
    "mill",
    "bridge",
    "harbour wall",
    "lighthouse",
    "library",
    "pumping station",
    "ferry",
    "tower",
    "archive",
]
VERBS = ["built", "repaired", "closed", "reopened", "sold", "flooded", "painted", "moved", "inspected"]
QUERIES = [
    "Who built the mill in Kestrel?",
    "What happened to the bridge in Tarn after the flood?",
    "Why was the pumping station in Millbrook closed?",
    "What did Olga Oss inspect in Riga?",
]


# --- corpus ----------------------------------------------------------------------------------------
def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def sentence(rng: random.Random) -> str:
    day, month, year = (
        rng.randint(1, 28),
        rng.choice(["January", "March", "May", "July", "October"]),
        rng.randint(1850, 2020),
    )
    s = f"On {day} {month} {year} {person(rng)} {rng.choice(VERBS)} the {rng.choice(THINGS)} in {rng.choice(PLACES)}."
    if rng.random() < 0.3:
        s += f" Because of this, {person(rng)} {rng.choice(VERBS)} the {rng.choice(THINGS)} in {rng.choice(PLACES)}."
    return s


def document(rng: random.Random, n: int) -> str:
    title = f"{rng.choice(THINGS).title()} of {rng.choice(PLACES)} ({n})"
    return f"# {title}\n\n" + " ".join(sentence(rng) for _ in range(rng.randint(3, 9))) + "\n"


def make_corpus(root: Path, n: int, rng: random.Random) -> None:
    if root.exists():
        shutil.rmtree(root)
    for i in range(n):
        path = root / f"part{i % 7}" / f"sub{i % 3}" / f"notes{i // 21}.md"  # same names in several folders
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(document(rng, i), encoding="utf-8")


def mutate(root: Path, rng: random.Random, counter: list[int]) -> dict[str, int]:
    files = sorted(root.rglob("*.md"))
    edits = rng.sample(files, k=min(len(files), rng.randint(1, 6)))
    for p in edits:
        text = p.read_text(encoding="utf-8")
        p.write_text(
            text + sentence(rng) + "\n" if rng.random() < 0.7 else document(rng, counter[0]), encoding="utf-8"
        )
        counter[0] += 1
    rest = [p for p in files if p not in edits]
    deletes = rng.sample(rest, k=min(len(rest), rng.randint(0, 3)))
    for p in deletes:
        p.unlink()
    adds = rng.randint(0, 3)
    for _ in range(adds):
        p = root / f"part{rng.randint(0, 9)}" / f"new{counter[0]}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(document(rng, counter[0]), encoding="utf-8")
        counter[0] += 1
    return {"edited": len(edits), "deleted": len(deletes), "added": adds}


# --- stores ----------------------------------------------------------------------------------------
class CachedEmbedder:
    """The real embedder with a text -> vector cache (deterministic model: same vectors as uncached)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.dim, self.cache = inner, inner.dim, {}
        self.name = getattr(inner, "name", "embedder")

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in self.cache))
        if missing:
            for t, v in zip(missing, np.asarray(self.inner.embed(missing), dtype=np.float32), strict=True):
                self.cache[hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest()] = v
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.cache[k] for k in keys])


def open_index(home: Path, name: str, embedder: Any) -> Any:
    from eventrag.stack import open_stack

    return open_stack(Settings(home=home, index=name), embedder=embedder, extract="rules")


def snapshot(st: Any, latency: dict[str, list[float]] | None = None) -> dict[str, Any]:
    stats = st.graph.stats()
    vectors = {k: st.vectors.count(c) for k, c in st.indexer.collections.items()}
    docs = sorted(n.id for n in st.graph.find_nodes("Document", limit=10_000_000))
    status = sorted({n.props.get("status") for n in st.graph.find_nodes("Document", limit=10_000_000)})
    top = {}
    for q in QUERIES:
        for m in MODES:
            t0 = time.perf_counter()
            top[f"{m}:{q}"] = [c.chunk_id for c in st.retriever.retrieve(q, mode=m, top_k=5).chunks]
            if latency is not None:
                latency[m].append(time.perf_counter() - t0)
    return {
        "labels": stats.nodes_by_label,
        "edges": stats.edges_by_type,
        "vectors": vectors,
        "docs": docs,
        "status": status,
        "top5": top,
    }


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    for key in ("labels", "edges", "vectors", "status"):
        if a[key] != b[key]:
            out.append(f"{key}: incremental {a[key]} != clean {b[key]}")
    if a["docs"] != b["docs"]:
        out.append(
            f"docs: only incremental {sorted(set(a['docs']) - set(b['docs']))[:5]}, "
            f"only clean {sorted(set(b['docs']) - set(a['docs']))[:5]}"
        )
    for q, ids in a["top5"].items():
        if ids != b["top5"][q]:
            out.append(f"top5 {q}: {ids} != {b['top5'][q]}")
    return out


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values), q))


# --- run -------------------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--home", type=Path, default=Path("/tmp/eventfold-soak"))
    ap.add_argument("--out", type=Path, default=None, help="write the result JSON here")
    ap.add_argument(
        "--deadline-s", type=float, default=float("inf"), help="stop after the round passing this"
    )
    args = ap.parse_args()
    from eventrag.embed import make_embedder

    rng = random.Random(args.seed)
    if args.home.exists():
        shutil.rmtree(args.home)
    corpus = args.home / "corpus"
    make_corpus(corpus, args.docs, rng)
    embedder = CachedEmbedder(make_embedder(Settings(home=args.home)))
    errors: list[str] = []
    mismatches: list[str] = []
    latency: dict[str, list[float]] = {m: [] for m in MODES}
    index_s: list[float] = []
    counter = [args.docs]
    t_start = time.perf_counter()
    inc = open_index(args.home, "soak-incremental", embedder)
    first = inc.indexer.index_paths([corpus])
    print(f"initial index: {first.brief()}", flush=True)
    for q in QUERIES:  # warm-up before the first memory reading
        for m in MODES:
            inc.retriever.retrieve(q, mode=m, top_k=5)
    rss_start = rss_mib()
    random_calls = max(0, args.calls - args.rounds * len(QUERIES) * len(MODES))
    per_round = [
        random_calls // args.rounds + (1 if r < random_calls % args.rounds else 0) for r in range(args.rounds)
    ]
    pool = QUERIES + [f"What did {person(rng)} do in {rng.choice(PLACES)}?" for _ in range(40)]
    calls = 0
    rounds_done = 0
    for r in range(args.rounds):
        if time.perf_counter() - t_start > args.deadline_s:
            print(f"deadline reached after {rounds_done} rounds", flush=True)
            break
        rounds_done = r + 1
        change = mutate(corpus, rng, counter)
        t0 = time.perf_counter()
        try:
            s = inc.indexer.index_paths([corpus])
        except Exception as exc:  # a soak reports, it does not stop at the first failure
            errors.append(f"round {r} incremental index: {type(exc).__name__}: {exc}")
            traceback.print_exc()
            continue
        index_s.append(time.perf_counter() - t0)
        for i in range(per_round[r]):
            mode = MODES[(calls + i) % len(MODES)]
            q = rng.choice(pool)
            t1 = time.perf_counter()
            try:
                inc.retriever.retrieve(q, mode=mode, top_k=5)
            except Exception as exc:
                errors.append(f"round {r} retrieve {mode} {q!r}: {type(exc).__name__}: {exc}")
            latency[mode].append(time.perf_counter() - t1)
        calls += per_round[r] + len(QUERIES) * len(MODES)
        clean_dir = args.home / "indexes" / "soak-clean"
        if clean_dir.exists():
            shutil.rmtree(clean_dir)
        try:
            clean = open_index(args.home, "soak-clean", embedder)
            try:
                clean.indexer.index_paths([corpus])
                found = diff(snapshot(inc, latency), snapshot(clean))
            finally:
                clean.close()
        except Exception as exc:
            errors.append(f"round {r} clean index/compare: {type(exc).__name__}: {exc}")
            traceback.print_exc()
            continue
        mismatches += [f"round {r}: {m}" for m in found]
        print(
            f"round {r + 1}/{args.rounds}: {change}, pruned {s.docs_pruned}, indexed {s.docs_indexed}, "
            f"{len(found)} mismatches, {calls} calls, rss {rss_mib():.0f} MiB, "
            f"{time.perf_counter() - t_start:.0f} s",
            flush=True,
        )
        if found:
            print("  " + "\n  ".join(found[:5]), flush=True)
    inc.close()
    rss_end = rss_mib()
    result = {
        "docs": args.docs,
        "rounds": rounds_done,
        "rounds_asked": args.rounds,
        "calls": sum(len(v) for v in latency.values()),
        "errors": len(errors),
        "mismatches": len(mismatches),
        "rss_start_mib": round(rss_start, 1),
        "rss_end_mib": round(rss_end, 1),
        "rss_growth": round(rss_end / rss_start - 1, 4),
        "reindex_p50_s": round(statistics.median(index_s), 3) if index_s else None,
        "latency_ms": {
            m: {"n": len(v), "p50": round(pct(v, 50) * 1000, 1), "p95": round(pct(v, 95) * 1000, 1)}
            for m, v in latency.items()
        },
        "wall_s": round(time.perf_counter() - t_start, 1),
        "load_avg": os.getloadavg(),
        "first_errors": errors[:10],
        "first_mismatches": mismatches[:10],
    }
    print(json.dumps(result, indent=2))
    print(table(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return 1 if errors or mismatches else 0


def table(r: dict[str, Any]) -> str:
    rows = [f"| {m} | {v['n']} | {v['p50']} | {v['p95']} |" for m, v in r["latency_ms"].items()]
    return "\n".join(
        [
            f"docs {r['docs']}, rounds {r['rounds']}/{r['rounds_asked']}, retrieve calls {r['calls']}: errors {r['errors']}, "
            f"mismatches {r['mismatches']}, RSS {r['rss_start_mib']} -> {r['rss_end_mib']} MiB "
            f"({r['rss_growth'] * 100:+.1f}%), re-index p50 {r['reindex_p50_s']} s, wall {r['wall_s']} s, "
            f"load avg {', '.join(f'{x:.2f}' for x in r['load_avg'])}",
            "",
            "| mode | calls | p50 ms | p95 ms |",
            "|---|---|---|---|",
            *rows,
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
