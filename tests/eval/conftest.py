"""Paths for the evaluation tests: small fixtures in the official formats, and the shared real data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def shared_data() -> Path:
    """The team's read-only benchmark data (EVENTFOLD_SHARED_DATA, default ../shared/data beside the clone).

    Skipped where the folder is absent (it is never copied into the repository)."""
    root = Path(os.environ.get("EVENTFOLD_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
    if not root.is_dir():
        pytest.skip(f"shared data folder {root} is not on this machine")
    return root


@pytest.fixture(scope="session")
def indexed(tmp_path_factory):
    """The MultiHopRAG fixture in a real embedded EventRAG index (SQLite graph, Milvus Lite, MiniLM),
    with rule extraction: (home, dataset, stack, index summary)."""
    from eval.multihop.corpus_index import open_indexed_stack
    from eval.multihop.loaders import load_folder
    from eventfold.settings import Settings

    home = tmp_path_factory.mktemp("home")
    ds = load_folder(FIXTURES / "multihoprag")
    stack, summary = open_indexed_stack(
        Settings(home=home), ds, ds.passages, extract="rules", chat_model=None
    )
    yield home, ds, stack, summary
    stack.close()
