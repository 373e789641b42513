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
`--home` (default <temp dir>/eventfold-soak). The clean index re-uses embeddings of unchanged texts from a cache
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
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventfold.settings import Settings  # noqa: E402

MODES = ("naive", "graph", "event", "agentic")
FIRST = [
    "Alba", "Bram", "Cora", "Dmitri", "Elin", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Lev",
    "Mara", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sven", "Tala", "Udo", "Vera", "Wim", "Xenia",
    "Yusuf", "Zora"
]  # fmt: skip
LAST = [
    "Reed", "Holt", "Wynn", "Oss", "Lind", "Quill", "Berg", "Vance", "Marsh", "Kell", "Dunn", "Rask",
    "Sorel"
]  # fmt: skip
PLACES = [
    "Tarn", "Vrana", "Millbrook", "Kestrel", "Oslo", "Split", "Graz", "Linz", "Basel", "Varna", "Riga",
    "Bergen"
]  # fmt: skip
THINGS = [
    "mill", "bridge", "harbour wall", "lighthouse", "library", "pumping station", "ferry", "tower",
    "archive"
]  # fmt: skip
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
@dataclass(frozen=True)
class SoakArgs:
    docs: int
    rounds: int
    calls: int
    seed: int
    home: Path
    out: Path | None
    deadline_s: float


def parse_args(argv: list[str] | None = None) -> SoakArgs:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--home", type=Path, default=Path(tempfile.gettempdir()) / "eventfold-soak")
    ap.add_argument("--out", type=Path, default=None, help="write the result JSON here")
    ap.add_argument(
        "--deadline-s", type=float, default=float("inf"), help="stop after the round passing this"
    )
    return SoakArgs(**vars(ap.parse_args(argv)))


class Soak:
    """The incremental index under test, the corpus it follows, and what the rounds saw."""

    def __init__(self, args: SoakArgs, embedder: Any, rng: random.Random) -> None:
        self.args, self.embedder, self.rng = args, embedder, rng
        self.corpus = args.home / "corpus"
        self.counter = [args.docs]
        self.errors: list[str] = []
        self.mismatches: list[str] = []
        self.latency: dict[str, list[float]] = {m: [] for m in MODES}
        self.index_s: list[float] = []
        self.calls = 0
        self.pool = QUERIES + [f"What did {person(rng)} do in {rng.choice(PLACES)}?" for _ in range(40)]
        self.inc: Any = None

    def start(self) -> None:
        """Index the corpus once and warm every mode up (before the first memory reading)."""
        self.inc = open_index(self.args.home, "soak-incremental", self.embedder)
        first = self.inc.indexer.index_paths([self.corpus])
        print(f"initial index: {first.brief()}", flush=True)
        for q in QUERIES:
            for m in MODES:
                self.inc.retriever.retrieve(q, mode=m, top_k=5)

    def round(self, r: int, n_random: int, t_start: float) -> None:
        """Edit the corpus, re-index incrementally, make ``n_random`` retrieve calls, compare with a clean
        index. A soak reports failures, it does not stop at the first one."""
        change = mutate(self.corpus, self.rng, self.counter)
        t0 = time.perf_counter()
        try:
            s = self.inc.indexer.index_paths([self.corpus])
        except Exception as exc:
            self.errors.append(f"round {r} incremental index: {type(exc).__name__}: {exc}")
            traceback.print_exc()
            return
        self.index_s.append(time.perf_counter() - t0)
        self.random_calls(r, n_random)
        self.calls += n_random + len(QUERIES) * len(MODES)
        found = self.compare(r)
        if found is None:
            return
        self.mismatches += [f"round {r}: {m}" for m in found]
        print(
            f"round {r + 1}/{self.args.rounds}: {change}, pruned {s.docs_pruned}, indexed {s.docs_indexed}, "
            f"{len(found)} mismatches, {self.calls} calls, rss {rss_mib():.0f} MiB, "
            f"{time.perf_counter() - t_start:.0f} s",
            flush=True,
        )
        if found:
            print("  " + "\n  ".join(found[:5]), flush=True)

    def random_calls(self, r: int, n: int) -> None:
        for i in range(n):
            mode = MODES[(self.calls + i) % len(MODES)]
            q = self.rng.choice(self.pool)
            t1 = time.perf_counter()
            try:
                self.inc.retriever.retrieve(q, mode=mode, top_k=5)
            except Exception as exc:
                self.errors.append(f"round {r} retrieve {mode} {q!r}: {type(exc).__name__}: {exc}")
            self.latency[mode].append(time.perf_counter() - t1)

    def compare(self, r: int) -> list[str] | None:
        """Mismatches between the incremental index and a clean one of the same folder (None: failed)."""
        clean_dir = self.args.home / "indexes" / "soak-clean"
        if clean_dir.exists():
            shutil.rmtree(clean_dir)
        try:
            clean = open_index(self.args.home, "soak-clean", self.embedder)
            try:
                clean.indexer.index_paths([self.corpus])
                return diff(snapshot(self.inc, self.latency), snapshot(clean))
            finally:
                clean.close()
        except Exception as exc:
            self.errors.append(f"round {r} clean index/compare: {type(exc).__name__}: {exc}")
            traceback.print_exc()
            return None

    def result(self, rounds_done: int, rss_start: float, rss_end: float, t_start: float) -> dict[str, Any]:
        lat = self.latency
        return {
            "docs": self.args.docs,
            "rounds": rounds_done,
            "rounds_asked": self.args.rounds,
            "calls": sum(len(v) for v in lat.values()),
            "errors": len(self.errors),
            "mismatches": len(self.mismatches),
            "rss_start_mib": round(rss_start, 1),
            "rss_end_mib": round(rss_end, 1),
            "rss_growth": round(rss_end / rss_start - 1, 4),
            "reindex_p50_s": round(statistics.median(self.index_s), 3) if self.index_s else None,
            "latency_ms": {
                m: {"n": len(v), "p50": round(pct(v, 50) * 1000, 1), "p95": round(pct(v, 95) * 1000, 1)}
                for m, v in lat.items()
            },
            "wall_s": round(time.perf_counter() - t_start, 1),
            "load_avg": os.getloadavg(),
            "first_errors": self.errors[:10],
            "first_mismatches": self.mismatches[:10],
        }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from eventrag.embed import make_embedder

    rng = random.Random(args.seed)
    if args.home.exists():
        shutil.rmtree(args.home)
    make_corpus(args.home / "corpus", args.docs, rng)
    soak = Soak(args, CachedEmbedder(make_embedder(Settings(home=args.home))), rng)
    t_start = time.perf_counter()
    soak.start()
    rss_start = rss_mib()
    random_calls = max(0, args.calls - args.rounds * len(QUERIES) * len(MODES))
    rounds_done = 0
    for r in range(args.rounds):
        if time.perf_counter() - t_start > args.deadline_s:
            print(f"deadline reached after {rounds_done} rounds", flush=True)
            break
        rounds_done = r + 1
        soak.round(r, random_calls // args.rounds + (1 if r < random_calls % args.rounds else 0), t_start)
    soak.inc.close()
    result = soak.result(rounds_done, rss_start, rss_mib(), t_start)
    print(json.dumps(result, indent=2))
    print(table(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return 1 if soak.errors or soak.mismatches else 0


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
