"""The training story set (data/stories/carndubh) is apart from every benchmark story set and holds the
question kinds its README promises; on a real rules-mode index of it, each causal question's cause ranks
above the unrelated earlier event its report tells and above the effect told beside it (the tools carry
to a domain they were not written on)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
STORIES = ROOT / "data" / "stories" / "carndubh"
sys.path.insert(0, str(ROOT / "tests" / "agent"))
from test_tools_capability import _call, _open, cause_first  # noqa: E402

# subject a call names, words of its real cause, the unrelated earlier event its report tells, the effect
CAUSAL = {
    "c1": ("the withdrawal of Ben Aird from service in April 2010", ["boiler certificate"], ["tourism award"],
           ["diesel locomotive", "Passenger numbers"]),
    "c3": ("Isla Drummond resign as chair in September 2014", ["voted against her plan"], ["carriage shed"],
           ["sale was abandoned"]),
}  # fmt: skip


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def carndubh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    stack = _open(STORIES / "corpus", tmp_path_factory.mktemp("carndubh"))
    yield stack
    stack.close()


def test_the_story_set_is_apart_from_the_benchmark_story_sets():
    mine = _rows(STORIES / "questions.jsonl")
    bench = [r for p in (ROOT / "examples").rglob("questions.jsonl") for r in _rows(p)]
    assert bench and not {r["question"] for r in mine} & {r["question"] for r in bench}
    titles = {p.read_text(encoding="utf-8").splitlines()[0] for p in (STORIES / "corpus").glob("*.md")}
    bench_titles = {p.read_text(encoding="utf-8").splitlines()[0] for p in (ROOT / "examples").rglob("*.md")}
    assert len(titles) == 12 and not titles & bench_titles
    kinds = [r["type"] for r in mine]
    assert kinds.count("causal") >= 4 and kinds.count("temporal") >= 2 and kinds.count("bridge") >= 3
    for r in mine:  # every supporting report it names exists
        assert all((STORIES / "corpus" / d).is_file() for d in r["supporting_docs"]), r["id"]


@pytest.mark.parametrize("qid", sorted(CAUSAL))
def test_the_cause_ranks_above_the_earlier_event_and_the_effect(carndubh: Any, qid: str):
    subject, cause, earlier, effect = CAUSAL[qid]
    events = _call(carndubh, "timeline", subject=subject, relation="causes").data["events"]
    cause_first(events, qid, cause, earlier, effect)



def test_a_cause_that_refers_back_is_the_event_its_own_report_told(carndubh: Any):
    """"Because of the closure, the Santa specials ran only …": the closure the same report told (the
    landslip closed the line), not the boiler firm's closure another report dates better."""
    events = _call(carndubh, "timeline", subject="the December 2012 Santa specials running only between Kilbrack "
                   "and Glenarra", relation="causes").data["events"]  # fmt: skip
    assert events and "landslip" in events[0]["text"] and "Halloran" not in events[0]["text"], events
