"""The ``VectorStore`` protocol: named dense vectors (and room for sparse lexical
vectors) per collection, with payload filters (a
:class:`~hello_memory.ports.vector.VectorFilter`; a plain mapping is refused with a
``TypeError``), scoped by namespace.

Every method that reads or deletes takes the namespace explicitly; the backend stores
it in the payload field ``namespace`` and always filters on it. An empty namespace
raises :class:`~hello_memory.errors.NamespaceRequiredError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

# The value types the vector port speaks live in the port (docs/ARCHITECTURE.md,
# "Ports"); their old import paths stay.
from hello_memory.ports.vector import (
    Between,
    CollectionSpec,
    Condition,
    PayloadIndex,
    VectorFilter,
)
from hello_memory.types import SparseVector, VectorHit, VectorPoint

__all__ = ["Between", "CollectionSpec", "FieldCondition", "HnswParams", "PayloadIndex", "Range",
           "VectorFilter", "VectorStore"]


@dataclass(frozen=True)
class HnswParams:
    """HNSW graph of an embedded engine that builds one on request (Qdrant Edge's
    ``optimize``, which indexes every point written). Thresholds are KB of vectors, as
    in Qdrant: a filter selecting less than ``full_scan_threshold_kb`` of vectors is
    answered exactly. ``ef`` is the search-time beam width. ``auto_index``: build the
    graph on the write that brings a collection's points written since the last build
    to ``indexing_threshold_kb`` of vectors, as a Qdrant server's optimiser does
    (docs/PERFORMANCE.md "Ingest"); until then they are searched exactly.
    ``max_segment_size_kb``: no segment is merged past that size. ``probe_ef``: the
    beam of :meth:`VectorStore.nearest_batch`, the add path's probes for near
    duplicates and a fact's neighbours, which look for the few memories nearest a new
    one (at least its ``limit``)."""

    m: int = 16
    ef_construct: int = 100
    payload_m: int | None = 16
    full_scan_threshold_kb: int = 10_000
    indexing_threshold_kb: int = 10_000
    ef: int = 128
    auto_index: bool = True
    # Segments stop growing at this many KB of vectors (~65k 384-d vectors): each build
    # rebuilds the segment it merges into, so an uncapped one cost as much as the
    # namespace was large (docs/PERFORMANCE.md "A million memories"); None: Qdrant's
    # own cap (256 MB per core).
    max_segment_size_kb: int | None = 100_000
    # Every add probes once per memory over every segment, so the beam is a share of
    # the ingest growing with the segments (at 150k memories, 1,000 probes took 820 ms
    # at ef 128 and 300 ms at 32, finding the same near duplicates: PERFORMANCE.md
    # "A million memories").
    probe_ef: int = 32


# The one range type of the vector filter, under its old name.
Range = Between
# One condition of a VectorFilter, under its old name.
FieldCondition = Condition


def calls_in_turn(store: object) -> bool:
    """Whether ``store`` runs one call at a time and holds the GIL while it does (an
    optional ``serial_calls`` attribute: Qdrant Edge, qdrant-client's local mode).
    Such calls gain nothing from threads: two searches on two threads take as long as
    one after the other, and a Python thread beside a search slows it down (issue 27:
    measured on Qdrant Edge). Server backends (network I/O) overlap."""
    return bool(getattr(store, "serial_calls", False))


@runtime_checkable
class VectorStore(Protocol):
    def open(self) -> None: ...

    def close(self) -> None: ...

    def ensure_collection(self, spec: CollectionSpec) -> None:
        """Create the collection if missing; if it exists with another vector size,
        raise DimensionMismatchError naming the collection and both sizes."""

    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id (UUID strings); idempotent. Validates every
        point before writing any: a wrong size or non-finite value writes nothing."""

    def nearest(
        self,
        collection: str,
        query: Sequence[float] | SparseVector,
        *,
        namespace: str,
        using: str = "dense",
        limit: int = 10,
        filters: VectorFilter | None = None,
        score_threshold: float | None = None,
        ids: Sequence[str] | None = None,
        with_payload: bool = True,
    ) -> list[VectorHit]:
        """Nearest points in ``namespace`` by the named dense or sparse vector;
        ``ids`` (when given) restricts the candidates to those point ids. With
        ``with_payload=False`` the hits carry an empty payload (ids and scores are all
        the search's views read: the payload's transfer was a share of each query)."""

    def nearest_batch(
        self,
        collection: str,
        queries: Sequence[Sequence[float]],
        *,
        namespace: str,
        using: str = "dense",
        limit: int = 10,
        filters: VectorFilter | None = None,
        score_threshold: float | None = None,
    ) -> list[list[VectorHit]]:
        """:meth:`nearest` for many dense queries at once (one list of hits per query, in
        order; the same hits each :meth:`nearest` call would return, payloads empty).
        The add path's duplicate and supersession checks ask one per new memory: a
        backend that plans them as one batch scores the namespace once, not once per
        memory (issue 27; docs/PERFORMANCE.md "Ingest"). An HNSW engine searches them
        with the narrower beam ``HnswParams.probe_ef``: they look for the few
        memories nearest a new one, which a narrow beam finds."""

    def retrieve(self, collection: str, ids: Sequence[str], *, namespace: str) -> list[VectorHit]:
        """Points by id (score 0.0), only those in ``namespace``."""

    def delete(self, collection: str, ids: Sequence[str], *, namespace: str) -> None:
        """Delete points by id within ``namespace``; unknown ids are a no-op."""

    def set_payload(
        self, collection: str, ids: Sequence[str], payload: Mapping[str, Any], *, namespace: str
    ) -> None:
        """Merge ``payload`` into existing points of ``namespace`` (vectors untouched)."""

    def count(
        self,
        collection: str,
        *,
        namespace: str,
        filters: VectorFilter | None = None,
    ) -> int: ...

    def ids(self, collection: str, *, namespace: str) -> set[str]:
        """Every point id in ``namespace`` (used by reconcile)."""

    def clear(self, collection: str, *, namespace: str) -> None:
        """Delete every point of ``namespace`` in the collection, nothing else."""

    def collections(self) -> list[str]:
        """Names of every collection in the store (as passed to ``ensure_collection``),
        sorted; clearing a namespace walks them all."""

    def optimize(self, collection: str) -> bool:
        """Build the collection's search index where the backend builds it only on
        request (embedded Qdrant Edge: HNSW segments); blocks until done. True if
        anything changed; False where the backend needs no such step (a server indexes
        by itself, qdrant-client's local mode has no index)."""
