"""Services: the work the facade delegates, each over the built stores (issue 31, item 2).

A service is a plain class built from the ``Stores`` bundle (``stores/bundle.py``) and
reached through :class:`~hello_memory.memory.manager.MemoryManager`, which builds it
once. It reads and writes the stores only through their repositories and ports, holds
no settings of its own, and never imports the facade: the import contracts of
``pyproject.toml`` put this package below ``memory.manager`` and above ``stores``.

- :mod:`hello_memory.services.browse`: :class:`BrowseService`, the read-only view of
  the stores that the interfaces (the inspector, the framework adapters, the
  catalogue, the jobs, ``/metrics``) use instead of reaching into the stores
  themselves (``MemoryManager.browse``).
"""

from __future__ import annotations

from hello_memory.services.browse import BrowseService

__all__ = ["BrowseService"]
