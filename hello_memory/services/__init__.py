"""Services: the work the facade delegates, each over the built stores (issue 31, item 2).

A service is a plain class built once by
:class:`~hello_memory.memory.manager.MemoryManager` from the parts it needs (the
``Stores`` bundle of ``stores/bundle.py``, the working memory, another service, the
settings of its step), passed in by construction. It reads and writes the stores only
through their repositories and ports, and never imports the facade: the import
contracts of ``pyproject.toml`` put this package below ``memory.manager`` and above
``stores`` (docs/ARCHITECTURE.md, Layers). The facade resolves the default namespace
and keeps every public method's signature; a service method takes what the facade
resolved.

- :mod:`hello_memory.services.browse`: :class:`BrowseService`, the read-only view of
  the stores that the interfaces (the inspector, the framework adapters, the
  catalogue, the jobs, ``/metrics``) use instead of reaching into the stores
  themselves (``MemoryManager.browse``).
- :mod:`hello_memory.services.ingest`: :class:`IngestService`, the add path
  (``add`` / ``add_many`` / ``add_embedded``, ``remember_conversation``, the graph
  links of a write).
- :mod:`hello_memory.services.search`: :class:`SearchService`, ``search`` and
  ``perceptual_search`` over the one retriever (``retrieval/hybrid.py``).
- :mod:`hello_memory.services.lookup`: :class:`LookupService`, ids and short handles,
  ``get``, ``mentioned_times``.
- :mod:`hello_memory.services.edit`: :class:`EditService`, ``update``, ``remove``,
  ``clear``.
- :mod:`hello_memory.services.maintenance`: :class:`MaintenanceService`, ``stats``,
  export and import, ``reconcile`` / ``reindex`` / ``optimize``.
- :mod:`hello_memory.services.convert`: the JSON forms of items and hits (no class).
- :mod:`hello_memory.services.build`: :func:`~hello_memory.services.build.build_facade`,
  which builds every service above from built stores and the facade's keyword options
  (``FacadeOptions``).

- :mod:`hello_memory.services.lifecycle`: :class:`~hello_memory.services.lifecycle.Lifecycle`,
  forget, restore and consolidate (the memories' life; formerly ``memory/lifecycle.py``,
  which still imports).
"""

from __future__ import annotations

from hello_memory.services.browse import BrowseService
from hello_memory.services.edit import EditService
from hello_memory.services.ingest import IngestService
from hello_memory.services.lookup import LookupService
from hello_memory.services.maintenance import MaintenanceService
from hello_memory.services.search import SearchService

__all__ = ["BrowseService", "EditService", "IngestService", "LookupService",
           "MaintenanceService", "SearchService"]
