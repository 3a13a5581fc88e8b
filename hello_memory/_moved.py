"""Old import paths of the interface modules, which live under ``hello_memory/interfaces/``.

The interfaces (REST, MCP, the CLI, the HTTP client, the agent tools, the framework
adapters, the inspector, the catalogue, the scheduler and jobs; docs/ARCHITECTURE.md,
the interfaces row of the layer table) moved into one package. Code written against the
former paths keeps working: ``import hello_memory.api.app`` gives the very module object
``hello_memory.interfaces.rest.app`` is, so ``monkeypatch.setattr``, ``isinstance`` and
module-level state behave as through the new path. ``python -m hello_memory.cli`` (and
every other old module run with ``-m``) runs the moved code.

:func:`install` puts one :class:`MovedModuleFinder` at the front of ``sys.meta_path``;
``hello_memory/__init__.py`` calls it, so importing the package is all it takes.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import CodeType, ModuleType

__all__ = ["MOVED", "MovedModuleFinder", "install", "new_name"]

# former dotted name -> its home now, under hello_memory.interfaces but for one service
# (a package's submodules follow it)
MOVED: dict[str, str] = {
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
    # the lifecycle service (forget / restore / consolidate) joined the other services
    "hello_memory.memory.lifecycle": "hello_memory.services.lifecycle",
}


def new_name(fullname: str) -> str | None:
    """The current dotted name of a former one (``hello_memory.api.app`` ->
    ``hello_memory.interfaces.rest.app``), or None when ``fullname`` did not move."""
    for old, new in MOVED.items():
        if fullname == old:
            return new
        if fullname.startswith(old + "."):
            return new + fullname[len(old):]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Loads a former name as the module already imported (or imported now) under its new
    name: the import system then records that same object under the old name."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module ran once, under its new name."""

    # runpy (``python -m <old name>``) asks the loader for the code to run as __main__
    def get_code(self, fullname: str) -> CodeType | None:
        spec = importlib.util.find_spec(self.target)
        loader = spec.loader if spec is not None else None
        get_code = getattr(loader, "get_code", None)
        return get_code(self.target) if get_code is not None else None

    def is_package(self, fullname: str) -> bool:
        spec = importlib.util.find_spec(self.target)
        return spec is not None and spec.submodule_search_locations is not None


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the former names of the moved interface modules (see :data:`MOVED`)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        moved = new_name(fullname)
        if moved is None:
            return None
        real = importlib.util.find_spec(moved)
        if real is None:
            return None
        return ModuleSpec(fullname, _AliasLoader(moved), origin=real.origin,
                          is_package=real.submodule_search_locations is not None)


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once), before the path finder would
    load a second copy of a moved submodule through its old parent's ``__path__``."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
