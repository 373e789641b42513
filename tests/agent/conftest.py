from __future__ import annotations

import pytest
from agent_doubles import DOCS, MemoryBackend


@pytest.fixture
def backend() -> MemoryBackend:
    return MemoryBackend(DOCS)
