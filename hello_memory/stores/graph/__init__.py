"""Entity graph stores: the :class:`GraphStore` protocol and its backends.

``SQLiteGraphStore`` (embedded default) needs only SQLAlchemy. ``Neo4jGraphStore``
needs the optional ``neo4j`` driver (``pip install 'hello-memory[graph]'``), so it is
imported on first use rather than here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.graph.sqlite import SQLiteGraphStore

if TYPE_CHECKING:
    from hello_memory.stores.graph.neo4j import Neo4jGraphStore

__all__ = ["GraphStore", "Neo4jGraphStore", "SQLiteGraphStore"]


def __getattr__(name: str) -> Any:
    # PEP 562 lazy attribute: importing this package must not require `neo4j`
    if name == "Neo4jGraphStore":
        from hello_memory.stores.graph.neo4j import Neo4jGraphStore

        return Neo4jGraphStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
