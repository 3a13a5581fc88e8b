"""The interface modules moved under hello_memory/interfaces/ (issue 31, item 5;
docs/ARCHITECTURE.md, the interfaces row), and their former import paths still work:
each old dotted name, a package's submodules included, is the very module object of
the new one (hello_memory/_moved.py), so monkeypatching, ``isinstance`` and module
state are shared; ``python -m hello_memory.cli`` still runs the CLI."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hello_memory
from hello_memory._moved import MOVED, new_name

ROOT = Path(__file__).resolve().parents[2]
INTERFACES = ROOT / "hello_memory" / "interfaces"

# what moved where (the brief of issue 31's item 5, written out rather than read back
# from MOVED, so that a wrong or missing entry there fails here)
TOP: dict[str, str] = {
    "hello_memory.api": "hello_memory.interfaces.rest",
    "hello_memory.mcp_server": "hello_memory.interfaces.mcp",
    "hello_memory.cli": "hello_memory.interfaces.cli",
    "hello_memory.cli_jobs": "hello_memory.interfaces.cli.jobs",
    "hello_memory.rag.cli": "hello_memory.interfaces.cli.rag",
    "hello_memory.client": "hello_memory.interfaces.client",
    "hello_memory.remote": "hello_memory.interfaces.remote",
    "hello_memory.tools": "hello_memory.interfaces.tools",
    "hello_memory.rag.tool": "hello_memory.interfaces.tools.rag_tool",
    "hello_memory.adapters": "hello_memory.interfaces.adapters",
    "hello_memory.ui": "hello_memory.interfaces.ui",
    "hello_memory.catalogue": "hello_memory.interfaces.catalogue",
    "hello_memory.aio": "hello_memory.interfaces.aio",
    "hello_memory.scheduler": "hello_memory.interfaces.scheduler",
    "hello_memory.jobs": "hello_memory.interfaces.jobs",
    "hello_memory.chat_import": "hello_memory.interfaces.chat_import",
    "hello_memory.memory.lifecycle": "hello_memory.services.lifecycle",
}


def _new_module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _old_names() -> list[tuple[str, str]]:
    """(old, new) for every moved module: each entry of TOP, and each submodule of a
    moved package under its old parent's name."""
    pairs: list[tuple[str, str]] = []
    for old, new in TOP.items():
        pairs.append((old, new))
        package = ROOT.joinpath(*new.split("."))
        if not package.is_dir():
            continue
        for path in sorted(package.rglob("*.py")):
            name = _new_module_name(path)
            if name == new or name.endswith(".__main__"):
                continue
            moved = old + name[len(new):]
            if moved in TOP:  # cli/jobs.py and cli/rag.py have former names of their own
                continue
            pairs.append((moved, name))
    return pairs


PAIRS = _old_names()


def test_the_finder_maps_every_moved_name() -> None:
    assert {old: new_name(old) for old in TOP} == TOP
    assert new_name("hello_memory.api.app") == "hello_memory.interfaces.rest.app"
    assert new_name("hello_memory.cli.main") == "hello_memory.interfaces.cli.main"
    # names that only share a prefix, or never moved, are left to the usual import
    for name in ("hello_memory.apis", "hello_memory.client_x", "hello_memory.jobs_x",
                 "hello_memory.rag", "hello_memory.rag.pipeline", "hello_memory.memory",
                 "hello_memory.interfaces.rest", "hello_memory.tool"):
        assert new_name(name) is None, name
    assert set(MOVED) == set(TOP)


def test_every_interface_module_has_its_former_name() -> None:
    """No module under interfaces/ lacks an old path (the package itself is new)."""
    covered = {new for _, new in PAIRS}
    files = {_new_module_name(p) for p in INTERFACES.rglob("*.py")
             if p.name != "__main__.py"}
    assert files - covered == {"hello_memory.interfaces"}


@pytest.mark.parametrize(("old", "new"), PAIRS, ids=[old for old, _ in PAIRS])
def test_the_old_path_is_the_same_module(old: str, new: str) -> None:
    try:
        moved = importlib.import_module(new)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "hello_memory":
            raise
        # an adapter whose framework this venv lacks (make test-adapters installs them):
        # the old path fails the same way, naming the same library, not some other error
        with pytest.raises(ModuleNotFoundError) as through_old:
            importlib.import_module(old)
        assert through_old.value.name == exc.name
        return
    assert importlib.import_module(old) is moved
    assert sys.modules[old] is moved
    assert moved.__name__ == new  # type: ignore[attr-defined]
    # the parent package carries it under its old name too, as an import would set it
    parent, _, child = old.rpartition(".")
    assert getattr(sys.modules[parent], child) is moved


def test_old_then_new_gives_one_module() -> None:
    """Imported through the old path first, a module is not loaded a second time."""
    code = ("import sys, hello_memory.cli_jobs as a, hello_memory.interfaces.cli.jobs as b; "
            "import hello_memory.catalogue.admin as c;"
            "import hello_memory.interfaces.catalogue.admin as d;"
            "mods = {id(m): m for m in list(sys.modules.values())}.values();"  # one per object
            "files = [m.__file__ for m in mods "
            "         if getattr(m, '__file__', None) and 'interfaces' in m.__file__];"
            "assert a is b and c is d, (a, b);"
            "assert len(files) == len(set(files)), sorted(files)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr


def test_state_and_patches_are_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    import hello_memory.jobs as old_jobs

    import hello_memory.interfaces.jobs as new_jobs

    monkeypatch.setattr(old_jobs, "ALL_JOBS", ("only-this",))
    assert new_jobs.ALL_JOBS == ("only-this",)
    run = old_jobs.JobRun
    assert run is new_jobs.JobRun and run.__module__ == "hello_memory.interfaces.jobs"


def test_from_imports_and_attributes() -> None:
    import hello_memory.interfaces.catalogue as new_catalogue
    import hello_memory.interfaces.tools as new_tools
    import hello_memory.interfaces.tools.rag_tool as new_rag_tool
    from hello_memory import catalogue, tools
    from hello_memory.rag import tool as rag_tool

    assert catalogue is new_catalogue and tools is new_tools and rag_tool is new_rag_tool
    assert hello_memory.catalogue is new_catalogue  # type: ignore[attr-defined]
    assert hello_memory.rag.tool is new_rag_tool  # type: ignore[attr-defined]
    # the root package's lazy names come from the new modules
    assert hello_memory.MemoryTool is new_tools.MemoryTool
    assert hello_memory.RAGTool is new_rag_tool.RAGTool
    assert hello_memory.run_job is importlib.import_module("hello_memory.jobs").run_job


@pytest.mark.parametrize("module", ["hello_memory.cli", "hello_memory.interfaces.cli"])
def test_python_dash_m_runs_the_cli(module: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELLO_MEMORY")}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run([sys.executable, "-m", module, "--help"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "search" in result.stdout and "serve" in result.stdout
