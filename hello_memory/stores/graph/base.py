"""The ``GraphStore`` protocol: an entity graph whose nodes and edges remember which
memories mention them (many-to-many), scoped by namespace.

Every method takes the namespace explicitly; an empty namespace raises
:class:`~hello_memory.errors.NamespaceRequiredError` (isolation fails closed).
Backends live in sibling modules and keep their query dialect (SQL, Cypher) inside.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from hello_memory.types import Entity, GraphHit, GraphStats, Relation

__all__ = ["GraphStore"]


@runtime_checkable
class GraphStore(Protocol):
    """Entity graph with memory provenance."""

    def open(self) -> None:
        """Connect and create tables / constraints / indexes idempotently."""

    def close(self) -> None:
        """Release connections. Safe to call twice."""

    def add_mentions(
        self,
        namespace: str,
        memory_id: str,
        entities: Sequence[Entity],
        relations: Sequence[Relation] = (),
    ) -> None:
        """Upsert ``entities`` and ``relations`` and link each to ``memory_id``.

        Idempotent: calling twice with the same arguments changes nothing. Relations
        must join entities given in the same call or already stored; every entity and
        relation must carry ``namespace``.
        """

    def find_entities(self, namespace: str, names: Sequence[str], *,
                      aliases: bool = False) -> list[Entity]:
        """Entities whose normalised name equals one of ``names`` (any type). With
        ``aliases``, person-like entities (types ``person`` and ``name``) that share a
        first name count too: "tom" also finds "Tom Berg", and "tom berg" finds "Tom"
        (docs/RETRIEVAL.md, person aliases)."""

    def neighbors(
        self,
        namespace: str,
        entity_ids: Sequence[str],
        max_hops: int = 2,
        limit: int = 100,
    ) -> list[GraphHit]:
        """Entities reachable from ``entity_ids`` within ``max_hops`` edges, in either
        direction, the start entities included at ``hops=0``; each with the ids of the
        memories that mention it. Sorted by hops, then name; at most ``limit``."""

    def memory_ids_for_entities(self, namespace: str, entity_ids: Sequence[str]) -> set[str]:
        """Ids of memories that mention any of ``entity_ids``."""

    def remove_memory(self, namespace: str, memory_id: str) -> None:
        """Drop the memory's links; entities and relations no memory mentions any
        more are deleted too. Unknown ids are a no-op."""

    def memory_ids(self, namespace: str) -> set[str]:
        """Every memory id linked from this namespace's graph (used by reconcile)."""

    def stats(self, namespace: str) -> GraphStats:
        """Counts of entities, relations and mention links in ``namespace``."""

    def clear(self, namespace: str) -> None:
        """Delete everything in ``namespace`` and nothing else."""
