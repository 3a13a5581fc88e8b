"""Build the document RAG pipeline for the interfaces (REST, MCP, agent tools), with a
clear error when the ``rag`` extra is not installed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hello_memory.config import Settings
from hello_memory.errors import ConfigError

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["build_rag"]


def build_rag(manager: MemoryManager, settings: Settings | None = None) -> Any:
    """``RAGPipeline.from_manager`` with the manager's LLM client (none: answers are
    extractive) and the settings' ``rag`` section. Raises ConfigError naming the
    missing extra."""
    try:
        from hello_memory.rag import RAGPipeline
    except ImportError as exc:
        raise ConfigError("documents need the rag extra: pip install 'hello-memory[rag]' "
                          f"({exc})") from exc
    # One LLM client per process: the manager's (MemoryManager.open built it from
    # ``settings.llm``); the manager closes it.
    rag_settings = getattr(settings, "rag", None) if settings is not None else None
    return RAGPipeline.from_manager(manager, llm=manager.llm, settings=rag_settings)
