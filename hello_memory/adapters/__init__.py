"""Adapters that put hello-memory behind the memory interfaces of agent frameworks.

Each module imports its framework, an optional extra, so ``import hello_memory`` never
imports any of them; import the module you need:

- ``hello_memory.adapters.langgraph``: ``HelloMemoryStore``, a LangGraph ``BaseStore``
  (extra ``langgraph``);
- ``hello_memory.adapters.langchain``: ``HelloMemoryRetriever`` and
  ``HelloMemoryVectorStore`` (extra ``langchain``);
- ``hello_memory.adapters.llamaindex``: ``HelloMemoryBlock``, a memory block for
  ``Memory.from_defaults(memory_blocks=[...])`` (extra ``llamaindex``);
- ``hello_memory.adapters.openai_agents``: ``HelloMemorySession`` and
  ``memory_function_tools`` (extra ``openai-agents``);
- ``hello_memory.adapters.pydantic_ai``: ``memory_toolset`` (extra ``pydantic-ai``);
- ``hello_memory.adapters.google_adk``: ``HelloMemoryService``, an ADK
  ``BaseMemoryService`` (extra ``google-adk``);
- ``hello_memory.adapters.autogen``: ``HelloMemory``, an AutoGen ``Memory`` (extra
  ``autogen``).

Every adapter is thin: it turns the framework's calls into
:class:`~hello_memory.MemoryManager` calls (through
:class:`~hello_memory.aio.AsyncMemoryManager` for ``async`` interfaces) and ranks
nothing itself. docs/ADAPTERS.md says what each interface cannot carry.
"""
