"""Agent-facing tools over :class:`~hello_memory.memory.manager.MemoryManager`."""

from hello_memory.interfaces.tools.memory_tool import ACTIONS, MemoryTool, memory_dict

__all__ = ["ACTIONS", "MemoryTool", "memory_dict"]
