"""The graph port: entities a memory mentions, and memories reached through them.

Backends: ``SQLiteGraphStore`` (SQL tables in the records database, the default) and
``Neo4jGraphStore`` (Bolt) in ``stores/graph/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from hello_memory.types import Entity, GraphHit, GraphStats, Relation


@runtime_checkable
class GraphPort(Protocol):
    """What the index engine, the views, semantic memory, maintenance and the facade
    call on the graph. Every call is scoped by ``namespace``."""

    def open(self) -> None:
        """Create what the backend needs (tables, indexes); idempotent."""
        ...

    def close(self) -> None:
        """Release connections; the store may be opened again."""
        ...

    def add_mentions(self, namespace: str, memory_id: str, entities: Sequence[Entity],
                     relations: Sequence[Relation] = ()) -> None:
        """Link ``memory_id`` to ``entities`` (created when new) and record
        ``relations`` between them."""
        ...

    def find_entities(self, namespace: str, names: Sequence[str], *,
                      aliases: bool = False) -> list[Entity]:
        """Entities whose name (or, with ``aliases``, an alias) is one of ``names``."""
        ...

    def neighbors(self, namespace: str, entity_ids: Sequence[str], max_hops: int = 2,
                  limit: int = 100) -> list[GraphHit]:
        """Entities within ``max_hops`` of ``entity_ids``, nearest first."""
        ...

    def memory_ids_for_entities(self, namespace: str, entity_ids: Sequence[str]) -> set[str]:
        """Ids of the memories that mention any of ``entity_ids``."""
        ...

    def remove_memory(self, namespace: str, memory_id: str) -> None:
        """Drop ``memory_id``'s links (and entities no memory mentions any more)."""
        ...

    def memory_ids(self, namespace: str) -> set[str]:
        """Every memory id with a link (reconcile compares them with the records)."""
        ...

    def stats(self, namespace: str) -> GraphStats:
        """Counts of entities, relations and links."""
        ...

    def clear(self, namespace: str) -> None:
        """Delete everything of ``namespace``, nothing else."""
        ...
