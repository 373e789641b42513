"""One large document in rules mode (not a unit test): rate, progress and memory against a small one.

Generates a `--mb` MB Markdown document (default 5) and a `--small-kb` KB one (default 200) of the same
prose (people, places, dated events, causal cues), indexes each alone into a fresh temporary home with
the rule extractor (no LLM), the embedded SQLite graph and Milvus Lite, each in its own process, and
prints one row per document: chunks, seconds, chunks/min, events, progress reports and the longest
gap between two of them, peak resident memory; then the large/small ratios of rate and memory.

    flock /tmp/eventfold-bench.lock python bench/large_doc.py            # 5 MB vs 200 KB
    python bench/large_doc.py --mb 1 --small-kb 100                      # a quicker look

The target: the large document indexes at the small one's rate (at least 500 chunks/min), reports
progress every slice of chunks, and its peak memory grows with its chunks only (not with their square).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FIRST = ["Alba", "Bram", "Cora", "Dag", "Eva", "Fritz", "Greta", "Hugo", "Ines", "Jonas", "Kaja", "Lior"]
LAST = ["Reed", "Holt", "Wynn", "Lind", "Oss", "Vance", "Marsh", "Quill", "Stroud", "Tarn"]
PLACES = ["Kestrel Mill", "Varna", "Tours", "the Old Harbour", "Lake Ferrow", "Castle Dunmere", "Port Ellis",
          "the Greywater Bridge", "Saint Aubin", "Hollow Fen"]
VERBS = ["founded", "repaired", "sold", "visited", "painted", "rebuilt", "surveyed", "defended", "left"]
MONTHS = ["January", "March", "May", "July", "September", "November"]
FILLER = ["The weather was cold and the river ran high that year.", "Few records of the work survive.",
          "Most of the town agreed with the decision.", "The accounts of that winter differ in the details."]


def prose(n_bytes: int, seed: int = 0) -> str:
    """About `n_bytes` of deterministic Markdown prose: dated events, people, places and causal cues."""
    r = random.Random(seed)
    parts, size, i = ["# The Ferrow Chronicle\n\nDate: 1901-05-04\n\n"], 0, 0
    while size < n_bytes:
        who = f"{r.choice(FIRST)} {r.choice(LAST)}"
        s = f"In {r.choice(MONTHS)} {1800 + r.randrange(150)}, {who} {r.choice(VERBS)} {r.choice(PLACES)}."
        if r.random() < 0.3:
            s += f" Because of the flood, {r.choice(FIRST)} {r.choice(LAST)} met {who} in {r.choice(PLACES)}."
        if r.random() < 0.5:
            s += " " + r.choice(FILLER)
        s += "\n\n" if i % 6 == 5 else " "
        parts.append(s)
        size += len(s)
        i += 1
    return "".join(parts)


def run_one(path: Path, home: Path) -> dict[str, float]:
    """Index `path` into a fresh index under `home` (this process); the numbers of the run."""
    from eventfold.settings import Settings
    from eventrag.stack import open_stack

    reports: list[float] = []
    with open_stack(Settings(home=home, index="large"), extract="rules") as stack:
        stack.embedder.embed(["warm up"])  # the model's load is not indexing time
        t0 = time.perf_counter()
        summary = stack.indexer.index_paths([path], progress=lambda p: reports.append(time.perf_counter()))
        elapsed = time.perf_counter() - t0
    gaps = [b - a for a, b in zip([t0, *reports], reports, strict=False)]
    return {"bytes": path.stat().st_size, "chunks": summary.chunks, "events": summary.events, "seconds": elapsed,
            "chunks_per_min": summary.chunks / elapsed * 60 if elapsed else 0.0, "reports": len(reports),
            "longest_gap_s": max(gaps, default=elapsed),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure(n_bytes: int, work: Path) -> dict[str, float]:
    """`run_one` in a child process, so each document's peak memory is its own."""
    doc = work / f"doc_{n_bytes}" / "chronicle.md"
    doc.parent.mkdir(parents=True)
    doc.write_text(prose(n_bytes), encoding="utf-8")
    out = subprocess.run([sys.executable, __file__, "--one", str(doc), "--home", str(work / f"home_{n_bytes}")],
                         capture_output=True, text=True, check=False, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if out.returncode != 0:
        raise SystemExit(f"indexing {doc} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=5.0, help="size of the large document (MB)")
    ap.add_argument("--small-kb", type=float, default=200.0, help="size of the small document (KB)")
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one is not None:
        print(json.dumps(run_one(a.one, a.home)))
        return
    with tempfile.TemporaryDirectory(prefix="eventfold-large-doc-") as tmp:
        rows = {"small": measure(int(a.small_kb * 1000), Path(tmp)), "large": measure(int(a.mb * 1_000_000), Path(tmp))}
    print(f"{'document':>10} {'MB':>6} {'chunks':>7} {'events':>8} {'s':>8} {'chunks/min':>11} {'reports':>8} "
          f"{'max gap s':>10} {'peak RSS MB':>12}")
    for name, r in rows.items():
        print(f"{name:>10} {r['bytes'] / 1e6:>6.2f} {r['chunks']:>7,.0f} {r['events']:>8,.0f} {r['seconds']:>8.1f} "
              f"{r['chunks_per_min']:>11,.0f} {r['reports']:>8,.0f} {r['longest_gap_s']:>10.1f} {r['peak_rss_mb']:>12,.0f}")
    s, big = rows["small"], rows["large"]
    print(f"large/small: rate x{big['chunks_per_min'] / max(s['chunks_per_min'], 1e-9):.2f}, "
          f"peak RSS x{big['peak_rss_mb'] / s['peak_rss_mb']:.2f} for x{big['chunks'] / max(s['chunks'], 1):.1f} chunks")


if __name__ == "__main__":
    main()
