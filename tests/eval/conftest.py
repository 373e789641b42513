"""Paths for the evaluation tests: small fixtures in the official formats, and the real sets shipped in data/."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def bundled_data() -> Path:
    """The repository's data folder (HotpotQA-100, MuSiQue-100, 2Wiki, DeepResearch Bench II tasks)."""
    from eval.bundled_data import DATA_DIR

    return DATA_DIR


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
