"""No function in the package runs over 60 lines (issue 31).

A function's length is that of its ``def`` node as Python's ``ast`` gives it
(``end_lineno - lineno + 1``: the signature, docstring and body, decorators left
out); nested functions and methods count on their own, and inside the one that holds
them. The package holds no generated code, so every module is measured. A function
that grows past the limit is split into named private helpers (docs/DEVELOPMENT.md,
"Code size")."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "hello_memory"
MAX_LINES = 60


def _lengths(source: str) -> Iterator[tuple[str, int, int]]:
    """``(qualified name, first line, length)`` of each function in ``source``."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                assert child.end_lineno is not None
                yield name, child.lineno, child.end_lineno - child.lineno + 1
                yield from walk(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)

    yield from walk(ast.parse(source), "")


def test_the_scan_measures_a_function() -> None:
    source = "class A:\n    @staticmethod\n    def f():\n        x = 1\n\n        return x\n"
    assert list(_lengths(source)) == [("A.f", 3, 4)]


def test_the_scan_sees_the_package() -> None:
    modules = list(PACKAGE.rglob("*.py"))
    assert len(modules) > 100
    assert any(name == "create_app" for path in modules if path.name == "app.py"
               for name, _, _ in _lengths(path.read_text(encoding="utf-8")))


def test_no_function_over_60_lines() -> None:
    too_long = [f"{path.relative_to(PACKAGE.parent)}:{line} {name} ({length} lines)"
                for path in sorted(PACKAGE.rglob("*.py"))
                for name, line, length in _lengths(path.read_text(encoding="utf-8"))
                if length > MAX_LINES]
    assert not too_long, (f"functions over {MAX_LINES} lines (split them into private "
                          "helpers):\n" + "\n".join(too_long))
