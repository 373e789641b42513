"""Suite-wide test setup. Area fixtures live in each tests/<area>/conftest.py."""

from __future__ import annotations

import os
from pathlib import Path

# No model or dataset hub is reachable: everything loads from local paths.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# --- Neo4j for tests (storage area) --------------------------------------------------------------
# Start one with `export EVENTFOLD_TEST_NEO4J_URI=$(scripts/neo4j/neo4j.sh start)`. In CI (env `CI` set)
# a missing URI fails the tests that need it; on a developer machine they are skipped.
import pytest  # noqa: E402


@pytest.fixture(scope="session")
def neo4j_uri() -> str:
    uri = os.environ.get("EVENTFOLD_TEST_NEO4J_URI")
    if not uri:
        msg = (
            "EVENTFOLD_TEST_NEO4J_URI is not set; start a server with "
            "`export EVENTFOLD_TEST_NEO4J_URI=$(scripts/neo4j/neo4j.sh start)`"
        )
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return uri


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A CLI run's environment: no EVENTFOLD_* variable of the caller, a fresh home, a wide console (so a
    message is never wrapped mid-phrase)."""
    for key in list(os.environ):
        if key.startswith("EVENTFOLD_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("EVENTFOLD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")
    return tmp_path / "home"
