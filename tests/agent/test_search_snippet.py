"""What a search result shows of a chunk longer than its snippet: the head (what the passage is about),
then the sentence past the head sharing most of the query's words, once across the results."""

from __future__ import annotations

from pathlib import Path

from agent_doubles import MemoryBackend

from agent.state import RunState
from agent.tools.context import ToolContext
from agent.tools.search import focused_snippet, run_search, snippet
from eventfold.run_options import RunOptions

DOC = (Path(__file__).resolve().parents[2] / "examples/riverside/corpus/10-pritchard-resigns.md").read_text()
BODY = DOC.split("\n", 3)[3]  # past the title and date lines
LED = "Pritchard's resignation led the board to appoint Elena Marsh as chief executive from 1 April 2016."


def test_the_sentence_naming_what_the_query_names_follows_the_head():
    out = focused_snippet(BODY, "Elena Marsh appointed chief executive 1 April", 220)
    head = snippet(BODY, 220)
    assert out.startswith(head) and out.endswith(LED) and LED not in head
    assert focused_snippet(BODY, "Westmere Business Award leak app", 220) == head  # the head holds it already
    assert focused_snippet("A short passage.", "passage", 220) == "A short passage."
    assert focused_snippet(BODY, "zebra", 220) == head  # no sentence shares a word


def test_a_sentence_is_added_once_across_the_results_of_one_search():
    first, second = f"{'Filler words. ' * 20}{LED}", f"{'Other words here. ' * 15}{LED}"
    backend = MemoryBackend({"a": ("A", first), "b": ("B", second)})
    ctx = ToolContext(run=RunState(question="q"), backend=backend, model=None, options=RunOptions())  # type: ignore[arg-type]
    content = run_search(ctx, "Elena Marsh appointed chief executive").content
    assert content.count("appoint Elena Marsh") == 1, content
