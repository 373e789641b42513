"""EventRAG fixtures: the real embedder (loaded once), stacks on the embedded store or Neo4j."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from eventfold.settings import Settings

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_corpus"
BACKENDS = ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)]


@pytest.fixture(scope="session")
def embedder() -> Any:
    from eventrag.embed import make_embedder

    return make_embedder(Settings())


def stack_settings(home: Path, backend: str, uri: str | None, **kw: Any) -> Settings:
    graph: dict[str, Any] = {"backend": backend}
    if uri:
        graph["uri"] = uri
    return Settings(home=home, index="t" + uuid.uuid4().hex[:10], graph=graph, **kw)


@pytest.fixture
def make_stack(request: pytest.FixtureRequest, tmp_path: Path, embedder: Any) -> Iterator[Callable[..., Any]]:
    """make_stack(backend, **open_stack kwargs); Neo4j namespaces are cleared afterwards."""
    from eventrag.stack import open_stack

    opened: list[Any] = []

    def factory(backend: str = "embedded", settings: Settings | None = None, **kw: Any) -> Any:
        uri = request.getfixturevalue("neo4j_uri") if backend == "neo4j" else None
        st = open_stack(settings or stack_settings(tmp_path, backend, uri), embedder=embedder, **kw)
        opened.append(st)
        return st

    yield factory
    for st in opened:
        if st.settings.graph.backend == "neo4j" and not st._closed:
            st.graph.clear()
        st.close()
