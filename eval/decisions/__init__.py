"""Decision measures: each decision of the agent (tool choice, when to answer, fold, unfold) measured
against the workflow policy's call at the same turn and against what the evidence held.

`trace` builds and reads the per-turn traces in result rows, `measures` defines each measure as a pure
function, `table` renders them per system; `python -m eval.decisions ROWS.jsonl [...]` prints the table.
"""
