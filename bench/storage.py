"""Storage benchmark (not a test): graph writes and 2-hop expansion, embedded SQLite vs Neo4j side by
side; top-10 vector search on Milvus Lite vs exact numpy search, with recall@10.

    python bench/storage.py                                  # 100k nodes, 1M edges, 100k 384-d vectors
    python bench/storage.py --neo4j-uri bolt://127.0.0.1:7687   # default: $EVENTFOLD_TEST_NEO4J_URI
    python bench/storage.py --nodes 20000 --edges 200000 --vectors 20000 --skip-neo4j   # quick look

Targets: 2-hop expansion p50 <= 20 ms on either graph store; vector search p50 <= 10 ms at
recall@10 >= 0.95. Vectors are clustered (2,000 centres + noise), closer to sentence embeddings than
uniform noise; ``--uniform`` gives the worst case. Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventrag.storage.base import EDGE_TYPES, Edge, GraphStore, Node  # noqa: E402


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1000.0, q))


def timed(fn: Callable[[], object], n: int, warmup: int = 5) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


# ----------------------------------------------------------------------------------------- graph
def node_batches(n: int, size: int) -> Iterator[list[Node]]:
    for start in range(0, n, size):
        yield [
            Node(
                id=f"n{i}",
                label="Event" if i % 3 else "Entity",
                props={"name": f"node {i}", "time_start": f"20{10 + i % 15}-01-01"},
                doc_ids=[f"d{i // 100}"],
            )
            for i in range(start, min(n, start + size))
        ]


def edge_batches(n_nodes: int, n_edges: int, size: int, seed: int = 7) -> Iterator[list[Edge]]:
    rng = np.random.default_rng(seed)
    seen: set[tuple[int, int, int]] = set()
    made = 0
    while made < n_edges:
        k = min(size, n_edges - made)
        src, dst, typ = (
            rng.integers(0, n_nodes, k),
            rng.integers(0, n_nodes, k),
            rng.integers(0, len(EDGE_TYPES), k),
        )
        batch = []
        for s, d, t in zip(src.tolist(), dst.tolist(), typ.tolist(), strict=True):
            if s == d or (s, t, d) in seen:
                continue
            seen.add((s, t, d))
            batch.append(Edge(src=f"n{s}", dst=f"n{d}", type=EDGE_TYPES[t], doc_ids=[f"d{s // 100}"]))
        made += len(batch)
        yield batch


def bench_graph(
    store: GraphStore, args: argparse.Namespace, node_batch: int, edge_batch: int
) -> dict[str, float]:
    res: dict[str, float] = {}
    t = time.perf_counter()
    for batch in node_batches(args.nodes, node_batch):
        store.upsert_nodes(batch)
    res["node_write_per_s"] = args.nodes / (time.perf_counter() - t)
    t, n = time.perf_counter(), 0
    for batch in edge_batches(args.nodes, args.edges, edge_batch):
        n += store.upsert_edges(batch)
        print(f"  {store!r}: {n:,} edges", end="\r", file=sys.stderr, flush=True)
    res["edge_write_per_s"] = n / (time.perf_counter() - t)
    print(file=sys.stderr)
    assert store.count() == (args.nodes, n), store.count()
    rng = random.Random(3)
    seeds = iter([f"n{rng.randrange(args.nodes)}" for _ in range(10_000)])
    sizes: list[int] = []

    def two_hop() -> None:
        sizes.append(len(store.expand([next(seeds)], hops=2).nodes))

    cpu0 = time.process_time()
    lat = timed(two_hop, args.queries, warmup=0)
    cpu_ms = (time.process_time() - cpu0) * 1000 / args.queries
    res.update(hop2_p50_ms=pct(lat, 50), hop2_p95_ms=pct(lat, 95), hop2_mean_client_cpu_ms=cpu_ms)
    res["hop2_nodes"] = float(np.mean(sizes))
    lat = timed(lambda: store.expand([next(seeds)], hops=2, limit=50), args.queries)
    res.update(hop2_lim50_p50_ms=pct(lat, 50), hop2_lim50_p95_ms=pct(lat, 95))
    lat = timed(lambda: store.expand([next(seeds)], hops=2, edge_types=["CAUSES", "BEFORE"]), args.queries)
    res.update(hop2_typed_p50_ms=pct(lat, 50), hop2_typed_p95_ms=pct(lat, 95))
    return res


# ---------------------------------------------------------------------------------------- vectors
def make_vectors(n: int, dim: int, uniform: bool, seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if uniform:
        v = rng.standard_normal((n, dim), dtype=np.float32)
    else:
        centres = rng.standard_normal((2000, dim), dtype=np.float32)
        v = centres[rng.integers(0, 2000, n)] + 0.35 * rng.standard_normal((n, dim), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _milvus_rows(
    store, label: str, queries: np.ndarray, truth: np.ndarray, batch: int, write_s: float, n: int
):
    hits: list[list[str]] = []
    order = iter(range(10**9))

    def one() -> None:
        i = next(order) % len(queries)
        hits.append([h.id for h in store.search("bench", queries[i], 10)[0]])

    lat = timed(one, len(queries), warmup=0)
    recall = np.mean([len({f"v{j}" for j in t} & set(h)) / 10 for t, h in zip(truth, hits, strict=True)])
    rows = [{"engine": label, "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95), "recall@10": float(recall),
             "write_per_s": n / write_s}]  # fmt: skip
    if batch > 1:  # Milvus Lite pays an O(rows) Python pass per search call: batching amortises it
        per_q = [t / batch for t in timed(lambda: store.search("bench", queries[:batch], 10), 20, warmup=1)]
        rows.append({"engine": f"{label} x{batch}/call", "p50_ms": pct(per_q, 50), "p95_ms": pct(per_q, 95),
                     "recall@10": float(recall), "write_per_s": n / write_s})  # fmt: skip
    return rows


def bench_vectors(args: argparse.Namespace, workdir: Path) -> list[dict[str, float | str]]:
    from eventrag.storage.vector_milvus import MilvusVectorStore

    data = make_vectors(args.vectors, args.dim, args.uniform)
    rng = np.random.default_rng(5)
    queries = data[rng.integers(0, args.vectors, args.queries)]
    queries = queries + 0.1 * rng.standard_normal(queries.shape, dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    ids = [f"v{i}" for i in range(args.vectors)]
    truth = np.argsort(-(queries @ data.T), axis=1)[:, :10]
    order = iter(range(10**9))
    exact = timed(
        lambda: np.argpartition(-(data @ queries[next(order) % args.queries]), 10)[:10], args.queries
    )
    rows: list[dict[str, float | str]] = [
        {
            "engine": "numpy exact (baseline)",
            "p50_ms": pct(exact, 50),
            "p95_ms": pct(exact, 95),
            "recall@10": 1.0,
        }
    ]
    for index_type in ("FLAT", "HNSW"):
        store = MilvusVectorStore(workdir / f"vec_{index_type.lower()}.db", index_type=index_type)
        store.create_collection("bench", dim=args.dim)
        t = time.perf_counter()
        for i in range(0, args.vectors, 10_000):
            store.upsert("bench", ids[i : i + 10_000], data[i : i + 10_000])
        store.flush("bench")  # waits for Lite's background compaction + index build
        write_s = time.perf_counter() - t
        print(
            f"  Milvus Lite {index_type}: {args.vectors:,} vectors written + indexed in {write_s:.0f} s",
            file=sys.stderr,
        )
        store.search("bench", queries[:1], top_k=10)
        for ef in args.ef if index_type == "HNSW" else [0]:
            store.search_ef = ef
            label = f"Milvus Lite HNSW ef={ef}" if ef else "Milvus Lite FLAT"
            rows += _milvus_rows(
                store,
                label,
                queries,
                truth,
                args.batch if ef in (0, args.ef[-1]) else 1,
                write_s,
                args.vectors,
            )
        store.close()
    return rows


# ------------------------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--vectors", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--ef", type=int, nargs="+", default=[64, 256, 512])
    ap.add_argument("--batch", type=int, default=32, help="queries per call for the batched rows")
    ap.add_argument("--uniform", action="store_true", help="uniform random vectors (worst case for HNSW)")
    ap.add_argument("--neo4j-uri", default=os.environ.get("EVENTFOLD_TEST_NEO4J_URI"))
    ap.add_argument("--skip-neo4j", action="store_true")
    ap.add_argument("--skip-graph", action="store_true")
    ap.add_argument("--skip-vectors", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    results: dict[str, object] = {"args": {k: str(v) for k, v in vars(args).items()}}
    with tempfile.TemporaryDirectory(prefix="eventfold-bench-") as tmp:
        work = Path(tmp)
        if not args.skip_graph:
            from eventrag.storage.graph_sqlite import SqliteGraphStore

            graphs: dict[str, dict[str, float]] = {}
            with SqliteGraphStore(work / "graph.sqlite", namespace="bench") as store:
                graphs["embedded (SQLite)"] = bench_graph(store, args, 10_000, 50_000)
            if args.neo4j_uri and not args.skip_neo4j:
                from eventrag.storage.graph_neo4j import Neo4jGraphStore

                with Neo4jGraphStore(args.neo4j_uri, namespace=f"bench{os.getpid()}") as store:
                    try:
                        graphs["Neo4j 5 (Bolt)"] = bench_graph(store, args, 10_000, 10_000)
                    finally:
                        store.clear()
            results["graph"] = graphs
            print_graph(graphs, args)
        if not args.skip_vectors:
            rows = bench_vectors(args, work)
            results["vectors"] = rows
            print_vectors(rows, args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


def print_graph(graphs: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    names = list(graphs)
    print(
        f"\nGraph: {args.nodes:,} nodes, {args.edges:,} edges (random, 10 types); {args.queries} queries each"
    )
    print(
        f"{'metric':<34}"
        + "".join(f"{n:>22}" for n in names)
        + ("   ratio (2nd / 1st)" if len(names) == 2 else "")
    )
    for key in graphs[names[0]]:
        vals = [graphs[n].get(key, float("nan")) for n in names]
        ratio = f"   {vals[1] / vals[0]:.2f}x" if len(vals) == 2 and vals[0] else ""
        print(f"{key:<34}" + "".join(f"{v:>22,.2f}" for v in vals) + ratio)
    print(
        "target: hop2_p50_ms <= 20 on either store (client CPU: this process only; Neo4j works server-side)"
    )


def print_vectors(rows: list[dict[str, float | str]], args: argparse.Namespace) -> None:
    base = float(rows[0]["p50_ms"])
    kind = "uniform" if args.uniform else "clustered"
    print(
        f"\nVectors: {args.vectors:,} x {args.dim}-d ({kind}), top-10, {args.queries} single-vector queries, COSINE"
    )
    print(f"{'engine':<28}{'p50 ms':>10}{'p95 ms':>10}{'recall@10':>11}{'p50 vs exact':>14}{'writes/s':>12}")
    for r in rows:
        print(
            f"{r['engine']:<28}{r['p50_ms']:>10.2f}{r['p95_ms']:>10.2f}{r['recall@10']:>11.3f}"
            f"{float(r['p50_ms']) / base:>13.2f}x{r.get('write_per_s', float('nan')):>12,.0f}"
        )
    print("target: p50 <= 10 ms at recall@10 >= 0.95")


if __name__ == "__main__":
    main()
