"""Code stays in small pieces: no function or method of the project (product, bench/, tests/) runs over
``MAX_FUNCTION_LINES`` lines, counted from its ``def`` line to its last line (decorators aside; a nested
function counts inside its parent and on its own), and no file reaches ``MAX_FILE_LINES`` lines.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 400
# folders that hold no project code: tool caches, virtual environments, build output
SKIP_DIRS = {"__pycache__", "venv", "build", "dist", "node_modules"}


def project_files() -> list[Path]:
    """Every .py file of the project, outside hidden folders (.git, .venv, caches) and build output."""

    def skipped(path: Path) -> bool:
        parts = path.relative_to(ROOT).parts[:-1]
        return any(p.startswith(".") or p in SKIP_DIRS or p.endswith(".egg-info") for p in parts)

    return sorted(p for p in ROOT.rglob("*.py") if not skipped(p))


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """Each function in ``path`` longer than ``limit`` lines, as 'file:line Qualified.name (N lines)'."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[str] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    n = (child.end_lineno or child.lineno) - child.lineno + 1
                    if n > limit:
                        found.append(f"{path.relative_to(ROOT)}:{child.lineno} {name} ({n} lines)")
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def test_the_walk_covers_the_project():
    """Product, benchmarks and tests are all walked (a wrong root would pass vacuously)."""
    tops = {p.relative_to(ROOT).parts[0] for p in project_files()}
    assert {"eventfold", "eventrag", "agent", "eval", "training", "cli", "app.py", "bench", "tests"} <= tops
    assert Path(__file__).resolve() in project_files()


def test_no_function_is_too_long():
    too_long = [f for path in project_files() for f in long_functions(path)]
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(too_long)


def test_no_file_is_too_long():
    too_long = [
        f"{path.relative_to(ROOT)} ({n} lines)"
        for path in project_files()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) >= MAX_FILE_LINES
    ]
    assert not too_long, f"files of {MAX_FILE_LINES} lines or more:\n" + "\n".join(too_long)


def _body(lines: int, indent: int = 4) -> str:
    return "".join(f"{' ' * indent}x{i} = {i}\n" for i in range(lines))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (f"def ok():\n{_body(59)}", []),  # 60 lines with its def line
        (f"def big():\n{_body(60)}", ["m.py:1 big (61 lines)"]),
        (f"async def big():\n{_body(60)}", ["m.py:1 big (61 lines)"]),
        (f"@decorator\ndef ok():\n{_body(59)}", []),
        (f"class C:\n    def m(self):\n{_body(60, 8)}",
         ["m.py:2 C.m (61 lines)"]),
        (f"def outer():\n    def inner():\n{_body(60, 8)}",
         ["m.py:1 outer (62 lines)", "m.py:2 outer.inner (61 lines)"]),
        (f"if True:\n    def hidden():\n{_body(60, 8)}",
         ["m.py:2 hidden (61 lines)"]),
    ],
)  # fmt: skip
def test_the_checker_measures_functions(tmp_path, monkeypatch, source, expected):
    """Methods, nested and async functions and functions under a statement are measured from ``def``."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    path = tmp_path / "m.py"
    path.write_text(source)
    assert long_functions(path) == expected


def test_test_modules_have_unique_names():
    """Test folders have no ``__init__.py``, so pytest imports each test file by its bare name: two files
    of one name in different folders stop the whole collection."""
    seen: dict[str, list[str]] = {}
    for path in project_files():
        rel = path.relative_to(ROOT)
        if rel.parts[0] == "tests" and path.name.startswith("test_"):
            seen.setdefault(path.name, []).append(str(rel))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"test files sharing a name: {clashes}"
