"""The operation catalogue: every operation the interfaces expose, defined once.

An :class:`Operation` names a request model (pydantic: argument names, types, defaults,
bounds, the one JSON schema of the operation), a handler that makes ONE facade call, a
serialiser that turns the handler's result into JSON, the scope a caller needs and the
REST method and path. The REST routes (:mod:`hello_memory.interfaces.rest.routes`), the MCP tools
(:mod:`hello_memory.interfaces.mcp`), :class:`~hello_memory.interfaces.tools.MemoryTool`'s functions
and the CLI's ``--json`` output are generated from a :class:`Catalogue`, so an operation
added here appears everywhere with the same argument names and defaults
(docs/ARCHITECTURE.md, "Where each kind of change goes"). What an interface adds is
its own and generic over operations: REST's namespace query parameter and key check,
MCP's namespace grants and size limit, the tool's fixed namespace and text rendering.

An interface that cannot carry an operation says so in ``Operation.not_on`` (interface
-> why); a test walks the catalogue and holds every interface to the rest.
"""

from __future__ import annotations

# the definitions live in catalogue/core.py, which the operation modules import
# (no import cycle: docs/ARCHITECTURE.md "Known debts"); every name stays here
from hello_memory.interfaces.catalogue.core import (
    INTERFACES,
    Area,
    Call,
    Catalogue,
    Interface,
    NoArguments,
    Operation,
    Request,
    Rest,
    Scope,
    annotated,
    invalid_input,
    plain_json,
)
from hello_memory.interfaces.catalogue.core import (
    _strip_titles as _strip_titles,  # read by mcp.py
)

__all__ = ["INTERFACES", "Area", "Call", "Catalogue", "Interface", "NoArguments", "Operation",
           "Request", "Rest", "Scope", "annotated", "default_catalogue", "invalid_input",
           "plain_json"]

_default: list[Catalogue] = []


def default_catalogue() -> Catalogue:
    """The operations the interfaces serve: memories (:mod:`.memories`), media
    (:mod:`.media`), documents (:mod:`.documents`) and the admin ones (:mod:`.admin`)."""
    if not _default:
        from hello_memory.interfaces.catalogue.admin import ADMIN_OPERATIONS
        from hello_memory.interfaces.catalogue.documents import DOCUMENT_OPERATIONS
        from hello_memory.interfaces.catalogue.media import MEDIA_OPERATIONS
        from hello_memory.interfaces.catalogue.memories import MEMORY_OPERATIONS

        ops = (*MEMORY_OPERATIONS, *MEDIA_OPERATIONS, *DOCUMENT_OPERATIONS,
               *ADMIN_OPERATIONS)
        _default.append(Catalogue({op.name: op for op in ops}))
    return _default[0]
