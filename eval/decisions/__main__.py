"""`python -m eval.decisions ROWS.jsonl [...]`: the decision table of the agent rows in the files
(a multihop set's results.jsonl, a long-horizon longhorizon.jsonl)."""

from __future__ import annotations

import argparse
from pathlib import Path

from eval.decisions.table import render_decisions
from eval.decisions.trace import load_rows, traces_from_rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.decisions", description=__doc__.splitlines()[0])
    ap.add_argument("rows", type=Path, nargs="+", help="JSONL files of result rows")
    args = ap.parse_args(argv)
    missing = [str(p) for p in args.rows if not p.is_file()]
    if missing:
        ap.error(f"no such file: {', '.join(missing)}")
    text = render_decisions(traces_from_rows(load_rows(args.rows)))
    print(text or "no agent rows with a decision trace in these files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
