"""Imports go downward only: eventfold (core) -> eventrag -> agent -> eval -> training -> cli/app.py.

The test parses every module of the product with ``ast`` (module-level, function-level and
``TYPE_CHECKING`` imports alike: a lazy import is still a dependency) and fails on any import of a
higher layer. Inside eventrag: storage <- shared modules <- index <- query <- stack.

Within a layer modules may import each other, but never in a circle: the import graph of the product's
own modules (same walker) must be acyclic, and a cycle is reported as its path of modules.
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
EVENTRAG = {"storage": 0, "schema": 1, "dates": 1, "connectives": 1, "prompts": 1, "embed": 1, "graph_io": 1,
            "index": 2, "query": 3, "stack": 4}  # fmt: skip


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _statements(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, names it imports from that module) of every import in ``path``, relative
    ones resolved; ``import a.b`` is ``(line, "a.b", [])``."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod, [a.name for a in node.names]))
    return out


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute dotted name) of every import in ``path``: the module, and for ``from pkg import
    x`` also ``pkg.x`` (which is the submodule when ``x`` is one)."""
    out: list[tuple[int, str]] = []
    for line, mod, names in _statements(path):
        out += [(line, mod)] + [(line, f"{mod}.{n}") for n in names]
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


def import_graph(files: list[Path]) -> dict[str, set[str]]:
    """Module -> the product modules it imports. ``from pkg import sub`` depends on the submodule
    ``pkg.sub`` (Python imports ``pkg`` first for every submodule anyway), ``from pkg import name`` on
    ``pkg``; a dotted name that is no module resolves to the module holding it."""
    modules = {_module_name(f): f for f in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for me, path in modules.items():
        for _, mod, names in _statements(path):
            for target in [f"{mod}.{n}" if f"{mod}.{n}" in modules else mod for n in names] or [mod]:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != me:
                    graph[me].add(target)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Cycles of ``graph``, each as its path (first module repeated at the end); empty when it is acyclic.
    An iterative depth-first search reports the cycle each back edge closes, so every cycle shares at
    least one edge with a reported one."""
    cycles: list[list[str]] = []
    on_path: dict[str, int] = {}  # module -> its index in `path`
    done: set[str] = set()
    for root in sorted(graph):
        if root in done:
            continue
        path = [root]
        on_path[root] = 0
        stack = [iter(sorted(graph[root]))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                done.add(path[-1])
                del on_path[path.pop()]
            elif nxt in on_path:
                cycles.append(path[on_path[nxt]:] + [nxt])
            elif nxt not in done:
                on_path[nxt] = len(path)
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return cycles


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


def test_no_import_cycle():
    cycles = find_cycles(import_graph(_product_files()))
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize(
    ("sources", "cycle"),
    [
        ({"agent/a.py": "from agent.b import f", "agent/b.py": "def g():\n    from agent.a import h\n"},
         ["agent.a", "agent.b", "agent.a"]),
        ({"agent/a.py": "from agent import b", "agent/b.py": "import agent.c",
          "agent/c.py": "from .a import x"}, ["agent.a", "agent.b", "agent.c", "agent.a"]),
        ({"agent/a.py": "from agent.b import f", "agent/b.py": "import json", "agent/c.py": "from agent.a import g"},
         None),
        ({"agent/__init__.py": "from agent.a import f", "agent/a.py": "import os"}, None),
        # a package that re-exports its submodules, whose submodules import each other through it
        ({"agent/__init__.py": "from agent.a import f", "agent/a.py": "from agent import b",
          "agent/b.py": "X = 1"}, None),
        ({"agent/__init__.py": "from agent.a import f", "agent/a.py": "from agent import X"},
         ["agent", "agent.a", "agent"]),
        ({"agent/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agent.b import B\n",
          "agent/b.py": "from agent.a import A"}, ["agent.a", "agent.b", "agent.a"]),
    ],
)  # fmt: skip
def test_the_checker_finds_cycles(tmp_path, monkeypatch, sources, cycle):
    """Lazy, relative and ``from pkg import module`` imports close a cycle; a chain does not."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    for where, source in sources.items():
        (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / where).write_text(source + "\n")
    files = sorted((tmp_path / "agent").rglob("*.py"))
    assert find_cycles(import_graph(files)) == ([cycle] if cycle else [])
