"""LLM event extraction: the in-process llama.cpp model against an OpenAI-compatible server.

A local llama.cpp server (`python -m llama_cpp.server`, from the same llama-cpp-python package; the
`server` extra installs its web dependencies) stands in for vLLM: the indexer's extraction goes through
eventfold's OpenAI backend exactly as it would against a GPU server, with `concurrency` requests in
flight. Every system indexes the same passages with the same model and threads, each into a fresh home
(no LLM cache), and the table prints chunks/min, LLM calls and repairs per chunk, failed chunks, events
per chunk and the throughput ratio against the in-process baseline, side by side in one run.

    pip install -e '.[server]'
    python bench/extract_server.py --dataset 2wiki --subset 4 --distractors 6 --concurrency 1,2

llama_cpp.server serves one request at a time from one model (no continuous batching), so on a CPU
concurrency only overlaps the client's own work; against vLLM the same client batches on the GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.eventrag import DATA, load, subset  # noqa: E402
from eventfold.settings import Settings, default_home  # noqa: E402
from eventrag.schema import Document  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(model: Path, threads: int, n_ctx: int, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--n_ctx", str(n_ctx),
           "--n_threads", str(threads), "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited ({proc.returncode}); see {log} (pip install -e '.[server]')")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(1)
    proc.terminate()
    raise SystemExit(f"llama_cpp.server did not answer within 180 s; see {log}")


def index_once(docs: list[Document], llm: dict, label: str) -> dict:
    from eventrag.stack import open_stack

    home = Path(tempfile.mkdtemp(prefix="extract-bench-"))
    settings = Settings(home=home, index="extract", llm=llm)
    t0 = time.perf_counter()
    with open_stack(settings, extract="llm") as stack:
        s = stack.indexer.index_documents(docs)
    wall = time.perf_counter() - t0
    row = {"system": label, "chunks": s.chunks, "events": s.events, "failed": s.chunks_failed,
           "llm_calls": s.llm_calls, "wall_s": round(wall, 1), "index_s": round(s.elapsed_s, 1),
           "chunks_per_min": round(s.chunks / s.elapsed_s * 60, 2) if s.elapsed_s else 0.0}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=["2wiki", "hotpotqa", "musique"], default="2wiki")
    ap.add_argument("--data-dir", type=Path, default=DATA)
    ap.add_argument("--subset", type=int, default=4, help="first N questions: their gold passages ...")
    ap.add_argument("--distractors", type=int, default=6, help="... plus this many random others (seed 0)")
    ap.add_argument("--model", default="qwen2.5-coder-0.5b", help="packaged GGUF name")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--concurrency", default="1,2", help="requests in flight against the server, comma-separated")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    docs, qs = load(args.dataset, args.data_dir)
    docs, _ = subset(docs, [q for q in qs if q.gold], args.subset, args.distractors)
    model = default_home() / "models" / f"{args.model}.gguf"
    if not model.is_file():
        raise SystemExit(f"{model} is missing: eventfold model pull {args.model}")
    print(f"dataset={args.dataset} passages={len(docs)} model={args.model} threads={args.threads} "
          f"load={os.getloadavg()[0]:.2f}", flush=True)
    local = {"backend": "local", "packaged_model": args.model, "model_path": str(model), "n_ctx": args.n_ctx,
             "n_threads": args.threads, "concurrency": 1, "cache": False}
    rows = [index_once(docs, local, "in-process llama.cpp")]
    log = Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"
    proc, url = start_server(model, args.threads, args.n_ctx, log)
    try:
        for c in [int(x) for x in args.concurrency.split(",") if x]:
            remote = {"backend": "openai", "base_url": url, "model": args.model, "concurrency": c, "cache": False,
                      "timeout_s": 600}
            rows.append(index_once(docs, remote, f"llama_cpp.server, concurrency {c}"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    base = rows[0]["chunks_per_min"] or 1.0
    table = Table(title=f"LLM extraction, {args.dataset} {len(docs)} passages, {args.model}, {args.threads} threads "
                        f"(load at end {os.getloadavg()[0]:.2f})")
    for col in ("system", "chunks", "events/chunk", "LLM calls/chunk", "failed", "chunks/min", "vs in-process"):
        table.add_column(col)
    for r in rows:
        n = max(r["chunks"], 1)
        table.add_row(r["system"], str(r["chunks"]), f"{r['events'] / n:.2f}", f"{r['llm_calls'] / n:.2f}",
                      str(r["failed"]), f"{r['chunks_per_min']:.2f}", f"{r['chunks_per_min'] / base:.2f}x")
    Console(width=160).print(table)
    if args.json:
        args.json.write_text(json.dumps({"dataset": args.dataset, "passages": len(docs), "model": args.model,
                                         "threads": args.threads, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
