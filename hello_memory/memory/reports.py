"""What the facade's lifecycle and bookkeeping operations return: typed reports.

``MemoryManager.forget`` / ``consolidate`` return the frozen dataclasses below (built
by :class:`hello_memory.services.lifecycle.Lifecycle`); ``stats`` / ``clear`` return the
``TypedDict`` shapes (plain dicts at run time, so ``stats()["total"]`` and JSON stay as
they were). Every dataclass report has ``as_dict()``: its JSON-ready form (enums as
their values, tuples as lists), the one form every interface serialises. The
maintenance reports (``ReconcileReport``, ``ReindexReport``, ``OptimizeReport``) live
next to their producer, :mod:`hello_memory.memory.maintenance`.

This module imports only ``types``: the facade, the services and the interfaces all
import it without an import pointing up the layers (docs/ARCHITECTURE.md, Layers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from hello_memory.types import MemoryType

__all__ = ["ClearReport", "ConsolidateReport", "ForgetReport", "GraphCounts", "MemoryStats"]


@dataclass(frozen=True)
class ForgetReport:
    """What ``forget`` chose (and, unless ``dry_run``, forgot) in ``namespace``."""

    strategy: str
    namespace: str
    ids: tuple[str, ...]
    dry_run: bool
    hard: bool

    @property
    def count(self) -> int:
        return len(self.ids)

    def as_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "namespace": self.namespace, "ids": list(self.ids),
                "count": self.count, "dry_run": self.dry_run, "hard": self.hard}


@dataclass(frozen=True)
class ConsolidateReport:
    """What ``consolidate`` promoted and merged (or, with ``dry_run``, would)."""

    namespace: str
    from_type: MemoryType
    to_type: MemoryType
    dry_run: bool
    promoted: tuple[str, ...] = ()          # new target ids
    merged: dict[str, tuple[str, ...]] = field(default_factory=dict)  # target id -> sources
    removed_sources: tuple[str, ...] = ()
    # duplicates within a type: the kept memory's id -> the ids merged into it (removed)
    deduplicated: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.merged.values())

    def as_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "from_type": self.from_type.value,
                "to_type": self.to_type.value, "dry_run": self.dry_run,
                "promoted": list(self.promoted),
                "merged": {k: list(v) for k, v in self.merged.items()},
                "removed_sources": list(self.removed_sources),
                "deduplicated": {k: list(v) for k, v in self.deduplicated.items()},
                "count": self.count}


class GraphCounts(TypedDict):
    entities: int
    relations: int
    mentions: int


class MemoryStats(TypedDict):
    """``MemoryManager.stats``: counts of one namespace."""

    namespace: str
    by_type: dict[str, int]        # memory type value -> memories (working included)
    total: int
    forgotten: int
    vectors: int                   # points in the memories collection
    graph: GraphCounts
    working_tokens: int


class ClearReport(TypedDict):
    """``MemoryManager.clear``: what was deleted, per kind."""

    records: int
    working: int
    documents: int
    chunks: int
    entities: int
    relations: int
    audit: int
    vectors: dict[str, int]        # collection -> points deleted
    files: int                     # uploaded files removed
    rows: dict[str, int]           # table -> rows deleted
