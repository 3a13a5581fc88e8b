"""Adapters that put hello-memory behind the memory interfaces of agent frameworks.

Each module imports its framework, an optional extra, so ``import hello_memory`` never
imports any of them; import the module you need:

- ``hello_memory.interfaces.adapters.langgraph``: ``HelloMemoryStore``, a LangGraph ``BaseStore``
  (extra ``langgraph``);
- ``hello_memory.interfaces.adapters.langchain``: ``HelloMemoryRetriever`` and
  ``HelloMemoryVectorStore`` (extra ``langchain``);
- ``hello_memory.interfaces.adapters.llamaindex``: ``HelloMemoryBlock``, a memory block for
  ``Memory.from_defaults(memory_blocks=[...])`` (extra ``llamaindex``);
- ``hello_memory.interfaces.adapters.openai_agents``: ``HelloMemorySession`` and
  ``memory_function_tools`` (extra ``openai-agents``);
- ``hello_memory.interfaces.adapters.pydantic_ai``: ``memory_toolset`` (extra ``pydantic-ai``);
- ``hello_memory.interfaces.adapters.google_adk``: ``HelloMemoryService``, an ADK
  ``BaseMemoryService`` (extra ``google-adk``);
- ``hello_memory.interfaces.adapters.autogen``: ``HelloMemory``, an AutoGen ``Memory`` (extra
  ``autogen``).

Every adapter is thin: it turns the framework's calls into
:class:`~hello_memory.MemoryManager` calls (through
:class:`~hello_memory.interfaces.aio.AsyncMemoryManager` for ``async`` interfaces) and ranks
nothing itself. docs/ADAPTERS.md says what each interface cannot carry.
"""

from __future__ import annotations

__all__ = ["missing_extra"]


def missing_extra(extra: str, exc: ModuleNotFoundError, adapter: str = "this adapter"
                  ) -> ModuleNotFoundError:
    """The error of an adapter whose framework is not installed: a
    ``ModuleNotFoundError`` (still an ImportError) that names the extra to install."""
    missing = exc.name or str(exc)
    return ModuleNotFoundError(
        f"{adapter} needs the {extra} extra (missing module {missing!r}): "
        f"pip install 'hello-memory[{extra}]'", name=exc.name)
