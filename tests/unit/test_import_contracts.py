"""The import contracts of pyproject.toml ([tool.importlinter], run by `make lint`):
they hold on the package as it is, and an upward import added to a copy of the
package breaks the contract it crosses (issue 31, item 6)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[2]

# In a subprocess so that neither the copy's modules nor import-linter's settings leak
# into this one. It prints where hello_memory resolves (the tree grimp reads: the
# first entry of PYTHONPATH) before checking every contract without a cache.
_RUNNER = """
import importlib.util, sys
from importlinter import configuration
from importlinter.application.use_cases import lint_imports
configuration.configure()  # what the lint-imports command does first
print("hello_memory at", importlib.util.find_spec("hello_memory").origin)
sys.exit(0 if lint_imports(config_filename="pyproject.toml", cache_dir=None,
                           no_logo=True) else 1)
"""


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", _RUNNER], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _checked(result: subprocess.CompletedProcess[str], tree: Path) -> str:
    out = result.stdout + result.stderr
    assert f"hello_memory at {tree / 'hello_memory' / '__init__.py'}" in out, out
    return out


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's Python files and pyproject.toml in a fresh directory."""
    tree = tmp_path_factory.mktemp("contracts")
    shutil.copytree(ROOT / "hello_memory", tree / "hello_memory",
                    ignore=shutil.ignore_patterns("__pycache__", "static", "templates",
                                                  "npm", "data"))
    shutil.copy2(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


def _with_line(tree: Path, module: str, line: str) -> Path:
    """A copy of ``tree`` where ``module``'s file ends with ``line``."""
    edited = tree.parent / f"{tree.name}-{module.replace('.', '-')}"
    shutil.copytree(tree, edited)
    path = edited.joinpath(*module.split(".")).with_suffix(".py")
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    return edited


def test_the_contracts_hold_on_the_package() -> None:
    result = lint(ROOT)
    out = _checked(result, ROOT)
    assert result.returncode == 0, out
    assert "0 broken" in out, out


def test_the_unchanged_copy_passes(package_copy: Path) -> None:
    result = lint(package_copy)
    out = _checked(result, package_copy)
    assert result.returncode == 0, out


def test_a_store_importing_an_interface_breaks_the_contracts(package_copy: Path) -> None:
    tree = _with_line(package_copy, "hello_memory.stores.disk",
                      "import hello_memory.interfaces.rest")
    result = lint(tree)
    out = _checked(result, tree)
    assert result.returncode == 1, out
    assert "Stores do not import memory, retrieval" in out and "BROKEN" in out, out
    assert "hello_memory.stores.disk -> hello_memory.interfaces.rest" in out, out
    assert "Layers: interfaces > facade" in out


def test_an_interface_importing_the_records_breaks_the_contract(package_copy: Path) -> None:
    tree = _with_line(package_copy, "hello_memory.interfaces.cli.jobs",
                      "from hello_memory.stores import records")
    result = lint(tree)
    out = _checked(result, tree)
    assert result.returncode == 1, out
    assert "Interfaces do not import hello_memory.stores BROKEN" in out, out
    assert "hello_memory.interfaces.cli.jobs -> hello_memory.stores.records" in out, out


def test_a_port_importing_a_backend_breaks_the_layers(package_copy: Path) -> None:
    tree = _with_line(package_copy, "hello_memory.ports.graph",
                      "from hello_memory.stores.graph import sqlite")
    result = lint(tree)
    out = _checked(result, tree)
    assert result.returncode == 1, out
    assert "hello_memory.ports.graph -> hello_memory.stores.graph.sqlite" in out, out
