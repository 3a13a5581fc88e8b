"""No import cycle in hello_memory (issue 31, item 6; docs/ARCHITECTURE.md "Known
debts").

The import contracts of pyproject.toml ([tool.importlinter]) see imports between
layers, not a cycle inside one layer or one package; this test reads the same graph
(grimp, the library import-linter is built on) and asserts that no module reaches
itself again through its imports: an import inside a function counts, and so, in the
second case, does one under ``if TYPE_CHECKING:`` (a type a module names ties it to
the module that defines it, as the contracts count it).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

grimp = pytest.importorskip("grimp")

PACKAGE = "hello_memory"


def _graph(package: str, *, type_checking: bool) -> Any:  # a grimp ImportGraph
    return grimp.build_graph(package, include_external_packages=False, cache_dir=None,
                             exclude_type_checking_imports=not type_checking)


def cycles(graph: Any) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative): each is a set of modules every one of which imports its way back to
    itself. Sorted, so a failure reads the same every run."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m))
             for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            step = next(successors, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(edges[step])))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe(graph: Any, component: Iterable[str]) -> str:
    """One cycle as its modules and the import lines that join them."""
    members = set(component)
    lines = [f"cycle of {len(members)} modules: {', '.join(sorted(members))}"]
    for importer in sorted(members):
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"  {importer}:{detail['line_number']} "
                             f"{detail['line_contents'].strip()}")
    return "\n".join(lines)


@pytest.mark.parametrize("type_checking", [False, True], ids=["run time", "type checking"])
def test_no_import_cycle(type_checking: bool) -> None:
    graph = _graph(PACKAGE, type_checking=type_checking)
    found = cycles(graph)
    assert not found, (
        f"import cycles ({'with' if type_checking else 'without'} the imports under "
        "`if TYPE_CHECKING:`; an import inside a function counts): move what both sides "
        "need into a module of their own, or name it by a protocol (docs/ARCHITECTURE.md "
        "'Known debts'):\n" + "\n".join(describe(graph, c) for c in found))


# Importing a submodule runs its package's __init__ first, an edge grimp does not draw:
# `hello_memory.interfaces.tools` once loaded MemoryTool, which reads the catalogue while it
# loads, so the catalogue's `context` operation could not import tools.context. Each
# module that breaks a cycle is imported first, in a fresh interpreter.
CYCLE_BREAKERS = ("_version", "schedules", "rag.formats", "embedding.batching",
                  "interfaces.catalogue.core", "interfaces.catalogue.memories",
                  "interfaces.tools.context", "interfaces.rest.deps", "interfaces.ui.paths",
                  "interfaces.ui.pages", "interfaces.client.engine", "retrieval._hybrid_state",
                  "stores.records.handle", "stores.records.outbox", "stores.vector._pg_sql")


@pytest.mark.parametrize("module", CYCLE_BREAKERS)
def test_a_cycle_breaking_module_imports_first(module: str) -> None:
    name = f"{PACKAGE}.{module}"
    result = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, f"import {name} alone fails:\n{result.stderr[-2000:]}"


# --- the finder itself, on a package made for it ------------------------------------
_MODULES = {
    "__init__.py": "",
    "a.py": "def late():\n    from cyc_pkg import b\n    return b\n",
    "b.py": "from cyc_pkg import a\n",
    "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyc_pkg import d\n",
    "d.py": "from cyc_pkg import c\n",
    "e.py": "from cyc_pkg import a\n",
}


@pytest.fixture
def cyc_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    package = tmp_path / "cyc_pkg"
    package.mkdir()
    for name, text in _MODULES.items():
        (package / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "cyc_pkg"
    for name in [m for m in sys.modules if m == "cyc_pkg" or m.startswith("cyc_pkg.")]:
        del sys.modules[name]


def test_a_function_level_import_closes_a_cycle_and_a_type_checking_one_does_not(
        cyc_pkg: str) -> None:
    run_time = _graph(cyc_pkg, type_checking=False)
    assert cycles(run_time) == [["cyc_pkg.a", "cyc_pkg.b"]]
    message = describe(run_time, ["cyc_pkg.a", "cyc_pkg.b"])
    assert "cyc_pkg.a:2 from cyc_pkg import b" in message
    assert "cyc_pkg.b:1 from cyc_pkg import a" in message
    every = _graph(cyc_pkg, type_checking=True)
    assert cycles(every) == [["cyc_pkg.a", "cyc_pkg.b"], ["cyc_pkg.c", "cyc_pkg.d"]]
