"""Agent-facing tools over :class:`~hello_memory.memory.manager.MemoryManager`.

Imported lazily (PEP 562, as :mod:`hello_memory.rag` does): ``MemoryTool`` is built
from the operation catalogue when its module loads, and the catalogue's ``context``
operation imports :mod:`hello_memory.interfaces.tools.context`; loading the tool with this
package would close an import cycle (docs/ARCHITECTURE.md "Known debts").
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_LAZY = {
    "ACTIONS": "hello_memory.interfaces.tools.memory_tool",
    "MemoryTool": "hello_memory.interfaces.tools.memory_tool",
    "memory_dict": "hello_memory.interfaces.tools.memory_tool",
}

__all__ = ["ACTIONS", "MemoryTool", "memory_dict"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hello_memory.interfaces.tools' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from hello_memory.interfaces.tools.memory_tool import ACTIONS, MemoryTool, memory_dict
