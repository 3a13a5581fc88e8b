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
    """``RAGPipeline.from_manager(manager, llm=...)`` with the LLM the settings name
    (none: answers are extractive). Raises ConfigError naming the missing extra."""
    try:
        from hello_memory.rag import RAGPipeline
    except ImportError as exc:
        raise ConfigError("documents need the rag extra: pip install 'hello-memory[rag]' "
                          f"({exc})") from exc
    if settings is None:
        return RAGPipeline.from_manager(manager)
    from hello_memory.llm.openai_compat import from_settings

    # The rag section arrives with the rag pipeline; older settings lack it.
    rag_settings = getattr(settings, "rag", None)
    return RAGPipeline.from_manager(manager, llm=from_settings(settings.llm),
                                    settings=rag_settings)
