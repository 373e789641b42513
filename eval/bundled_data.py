"""Where the public data sets shipped with the repository lie (`data/`; sources, licences and the
split between benchmark and training questions in data/README.md).

The folder ships with a clone, not with an installed wheel: code that reads it by default takes a
path too, so an installation elsewhere points at its own copy or at the official full files.
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
MULTIHOP_DIR = DATA_DIR / "multihop"
# DeepResearch Bench II: the tasks under CC BY 4.0 (and one CC0), and apart from them the two tasks
# whose source articles are CC BY-NC 4.0
DRB2_TASKS = DATA_DIR / "drb2" / "tasks_and_rubrics.jsonl"
DRB2_TASKS_NONCOMMERCIAL = DATA_DIR / "drb2" / "noncommercial" / "tasks_and_rubrics_noncommercial.jsonl"
# the first questions of each multi-hop set are the benchmarks' development questions; the training
# configs take theirs after them
BENCHMARK_QUESTIONS = 20
