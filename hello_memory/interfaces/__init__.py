"""The interfaces: every way in to a :class:`~hello_memory.memory.manager.MemoryManager`.

``rest/`` (the REST API), ``mcp.py`` (the MCP server), ``cli/`` (the ``hello-memory``
command), ``client/`` and ``remote.py`` (the HTTP client; the CLI through a running
server), ``tools/`` (the agent tools), ``adapters/`` (the agent frameworks), ``ui/`` (the
memory inspector), ``catalogue/`` (the one definition of each operation they share),
``aio.py``, ``scheduler.py``, ``jobs.py`` and ``chat_import.py``. The top layer of
docs/ARCHITECTURE.md: each turns a request into a facade call. Importing this package
imports none of them; the former paths (``hello_memory.api`` ...) still import, see
``hello_memory/_moved.py``.
"""
