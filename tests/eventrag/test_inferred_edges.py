"""Inferred edges are a function of the indexed documents, not of the order they came in: indexing in
one batch or one document at a time, and an incremental re-index after edits and deletions, give the
same inferred edges as a clean index of the same folder (an event's links depend on every event of
its participants, so a change must re-pick the links of the events it touches, old ones included)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import BACKENDS, stack_settings

PEOPLE = ["Ada Brandt", "Olav Kvist", "Sigrid Moe"]
PLACES = ["Tromso", "Bergen", "Narvik"]
VERBS = ["opened", "sold", "inspected", "closed"]
THINGS = ["mill", "harbour", "school", "bridge"]


def write_corpus(root: Path, docs: int, seed: int) -> None:
    """Each person takes part in ~15 events within one year: more than the 8 links an event keeps, so
    which events an event links to depends on every other event of its participants."""
    rng = random.Random(seed)
    for i in range(docs):
        lines = [
            f"On {rng.randint(1, 28)} {rng.choice(['March', 'May', 'July', 'October'])} 1900 "
            f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} the {rng.choice(THINGS)} in {rng.choice(PLACES)}."
            for _ in range(4)
        ]
        path = root / f"part{i % 2}" / f"doc{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Record {i}\n\n" + " ".join(lines) + "\n", encoding="utf-8")


def inferred(st: Any) -> set[tuple[str, str, str]]:
    events = [n.id for n in st.graph.find_nodes("Event", limit=100_000)]
    return {e.key for e in st.graph.get_edges(events, edge_types=["BEFORE", "RELATED_TO"]) if e.inferred}


@pytest.mark.parametrize("backend", BACKENDS)
def test_inferred_edges_do_not_depend_on_batching_or_history(
    backend: str, make_stack: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, docs=12, seed=3)
    uri = request.getfixturevalue("neo4j_uri") if backend == "neo4j" else None

    def fresh(name: str, batch_docs: int) -> Any:
        return make_stack(backend, settings=stack_settings(tmp_path / name, backend, uri), extract="rules",
                          batch_docs=batch_docs)  # fmt: skip

    whole = fresh("whole", 32)
    whole.indexer.index_paths([corpus])
    edges = inferred(whole)
    assert len(edges) > 40  # the corpus links events across documents
    one_by_one = fresh("one", 1)
    one_by_one.indexer.index_paths([corpus])
    assert inferred(one_by_one) == edges

    # history: edit two documents, delete two, add one, then re-index incrementally
    rng = random.Random(5)
    (corpus / "part0" / "doc0.md").write_text("# Record 0\n\nOn 2 May 1900 Ada Brandt sold the mill in Bergen.\n")
    (corpus / "part1" / "doc3.md").write_text("# Record 3\n\nOn 9 July 1900 Olav Kvist closed the school in Narvik.\n")
    for name in ("part0/doc4.md", "part1/doc7.md"):
        (corpus / name).unlink()
    write_corpus(tmp_path / "extra", docs=1, seed=rng.randint(0, 99))
    shutil.copy(tmp_path / "extra" / "part0" / "doc0.md", corpus / "part1" / "doc99.md")
    summary = whole.indexer.index_paths([corpus])
    assert summary.docs_pruned == 2 and summary.docs_indexed == 3
    clean = fresh("clean", 32)
    clean.indexer.index_paths([corpus])
    assert inferred(whole) == inferred(clean)
    assert inferred(clean) != edges  # the change did move links

    # deleting a document by id refreshes its neighbourhood too
    doomed = next(n.id for n in whole.graph.find_nodes("Document", limit=100) if n.id.endswith("doc5.md"))
    assert whole.indexer.delete(doomed)
    (corpus / "part1" / "doc5.md").unlink()
    clean_after = fresh("clean2", 32)
    clean_after.indexer.index_paths([corpus])
    assert inferred(whole) == inferred(clean_after)
