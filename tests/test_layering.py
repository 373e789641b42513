"""Imports go downward only: eventfold (core) -> eventrag -> agent -> eval -> training -> cli/app.py.

The test parses every module of the product with ``ast`` (module-level, function-level and
``TYPE_CHECKING`` imports alike: a lazy import is still a dependency) and fails on any import of a
higher layer. Inside eventrag: storage <- shared modules <- index <- query <- stack.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# rank of each top-level package: a module may import ranks <= its own
LAYERS = {"eventfold": 0, "eventrag": 1, "agent": 2, "eval": 3, "training": 4, "cli": 5, "app": 5}
# rank inside eventrag (only compared when both sides are in eventrag)
EVENTRAG = {"storage": 0, "schema": 1, "dates": 1, "prompts": 1, "embed": 1, "graph_io": 1,
            "index": 2, "query": 3, "stack": 4}  # fmt: skip


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute dotted name) of every import in ``path``, relative ones resolved."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            # `from pkg import sub` imports the submodule pkg.sub
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
    return out


def _product_files() -> list[Path]:
    files = [ROOT / "app.py"]
    for top in LAYERS:
        if (ROOT / top).is_dir():
            files += sorted((ROOT / top).rglob("*.py"))
    return files


def _eventrag_rank(dotted: str) -> int | None:
    parts = dotted.split(".")
    if parts[0] != "eventrag" or len(parts) < 2:
        return None
    return EVENTRAG.get(parts[1])


def upward_imports(path: Path) -> list[str]:
    """Each import in ``path`` that reaches a higher layer, as 'file:line imports name'."""
    me = _module_name(path)
    my_rank = LAYERS[me.split(".")[0]]
    bad = []
    for line, target in _imports(path):
        top = target.split(".")[0]
        if top not in LAYERS:
            continue  # stdlib / third party
        up = LAYERS[top] > my_rank
        mine, theirs = _eventrag_rank(me), _eventrag_rank(target)
        if mine is not None and theirs is not None:
            up = up or theirs > mine
        if up:
            bad.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    return bad


def test_every_layer_is_known():
    """A new top-level package or eventrag module must be placed in the order, not slip past it."""
    for p in (ROOT / "eventrag").iterdir():
        if p.name.startswith(("_", ".")) or p.name == "__pycache__":
            continue
        assert p.stem in EVENTRAG, f"eventrag/{p.name} has no rank in tests/test_layering.py"
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= set(LAYERS), f"top-level packages without a layer: {packages - set(LAYERS)}"


def test_no_module_imports_upward():
    bad = [b for f in _product_files() for b in upward_imports(f)]
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("where", "source", "should_fail"),
    [
        ("eventfold/x.py", "from agent.graph import build", True),
        ("eventfold/x.py", "from eventfold.settings import Settings", False),
        ("eventrag/storage/x.py", "from eventrag.index import extract", True),
        ("eventrag/index/x.py", "from eventrag.query.lexical import LexicalCache", True),
        ("eventrag/query/x.py", "from eventrag.index.extract import norm_name", False),
        ("agent/x.py", "def f():\n    from cli.common import console\n", True),
        ("eval/x.py", "import training.config", True),
        ("training/x.py", "from eval.multihop import metrics", False),
        ("eventrag/index/x.py", "from ..query import lexical", True),
    ],
)
def test_the_checker_catches_upward_imports(tmp_path, monkeypatch, where, source, should_fail):
    """The walker itself: an upward import (also lazy or relative) is reported, a downward one is not."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    path = tmp_path / where
    path.parent.mkdir(parents=True)
    path.write_text(source + "\n")
    assert bool(upward_imports(path)) is should_fail
