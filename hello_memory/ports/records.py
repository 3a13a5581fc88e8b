"""The records ports: the source of truth, one repository per aggregate.

Backend: ``RecordStore`` and its repositories in ``stores/records/`` (SQLAlchemy; SQLite
by default, PostgreSQL through a URL). A write that feeds an index returns the outbox
entries it queued in its own transaction; the caller hands them to the index engine
(``stores/indexing.py``).

The value types the repositories speak (``ItemFilter``, ``OutboxEntry``,
``DocumentRecord``, ``ChunkRecord``, ``TimeRange``) still live beside the backend and
are named here for type checking only: a known debt listed in pyproject.toml's import
contracts and docs/ARCHITECTURE.md.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, Modality

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from hello_memory.stores.records import (
        ChunkRecord,
        DocumentRecord,
        ItemFilter,
        OutboxEntry,
    )
    from hello_memory.text.timeparse import TimeRange

# the orders list_items / list_ids take (stores.records.memories.ItemOrder)
ItemOrder = Literal["event_time", "-event_time", "-importance"]


@runtime_checkable
class MemoryRecordsPort(Protocol):
    """The memories: what the facade, the memory types, dedup, supersede, the
    lifecycle, maintenance, the search and the index engine read and write."""

    # -- writes (each returns the outbox entries its transaction queued) ------------
    def add_items(self, items: Sequence[MemoryItem], *, keyed: bool = False
                  ) -> list[OutboxEntry]:
        """Insert ``items`` (with ``keyed``, unique by their dedup key)."""
        ...

    def update_queued(self, namespace: str, memory_id: str, *,
                      expect_version: int | None = None, **changes: Any
                      ) -> tuple[MemoryItem, list[OutboxEntry]]:
        """Change one memory (compare-and-swap on ``expect_version`` when given)."""
        ...

    def delete_queued(self, namespace: str, ids: Sequence[str], *,
                      expect: Mapping[str, int] | None = None
                      ) -> tuple[int, list[OutboxEntry]]:
        """Delete memories (only at the versions in ``expect`` when given)."""
        ...

    def merge_queued(self, namespace: str, *, add: MemoryItem | None = None,
                     target: tuple[str, int, Mapping[str, Any]] | None = None,
                     remove: Mapping[str, int]) -> tuple[MemoryItem | None, list[OutboxEntry]]:
        """One merge of consolidate in one transaction."""
        ...

    def record_access(self, namespace: str, ids: Sequence[str]) -> None:
        """Count a search's reads of ``ids`` (written off the request path)."""
        ...

    # -- reads -------------------------------------------------------------------------
    def get_item(self, namespace: str, memory_id: str) -> MemoryItem:
        """One memory; NotFoundError when absent."""
        ...

    def get_items(self, namespace: str, ids: Sequence[str], *, shared: bool = False
                  ) -> list[MemoryItem]:
        """The memories of ``ids`` that exist (``shared``: copies may be shared)."""
        ...

    def released(self, namespace: str, items: Sequence[MemoryItem]) -> list[MemoryItem]:
        """Shared records (``get_items(..., shared=True)``) as the caller's own."""
        ...

    def list_items(self, namespace: str, flt: ItemFilter = ..., *, limit: int | None = None,
                   offset: int = 0, order: ItemOrder = "event_time") -> list[MemoryItem]:
        """Memories matching ``flt`` in ``order``."""
        ...

    def list_ids(self, namespace: str, flt: ItemFilter = ..., *, limit: int | None = None,
                 order: ItemOrder = "event_time") -> list[str]:
        """Ids of the memories matching ``flt``."""
        ...

    def count_items(self, namespace: str, flt: ItemFilter = ...) -> int:
        """How many memories match ``flt``."""
        ...

    def count_of_type(self, namespace: str, memory_type: MemoryType, *,
                      modality: Modality | None = None,
                      status: MemoryStatus | None = MemoryStatus.ACTIVE) -> int:
        """How many memories of one type (and modality)."""
        ...

    def ids_starting(self, namespace: str, prefix: str, *, limit: int = 2) -> list[str]:
        """Ids that start with ``prefix`` (short handles)."""
        ...

    def all_ids(self, namespace: str) -> set[str]:
        """Every memory id of ``namespace``."""
        ...

    def find_by_hash(self, namespace: str, hashes: Sequence[str]) -> list[MemoryItem]:
        """Memories whose content hash is one of ``hashes`` (dedup)."""
        ...

    def same_fact(self, namespace: str, key: str) -> list[MemoryItem]:
        """Current memories stating the fact of ``key`` (supersede)."""
        ...

    def recent_by_topic(self, namespace: str, topics: Sequence[str], limit: int
                        ) -> dict[str, list[MemoryItem]]:
        """The latest memories of each topic (the progressive loader)."""
        ...

    def session_orders(self, namespace: str, sessions: Sequence[str]
                       ) -> dict[str, tuple[str, ...]]:
        """Each session's memory ids in turn order (the search's context step)."""
        ...

    def mentioning(self, namespace: str, start: datetime, end: datetime,
                   flt: ItemFilter = ..., *, limit: int = 1000) -> list[str]:
        """Ids of memories whose text mentions a time in ``[start, end]``."""
        ...

    def with_mentioned_times(self, namespace: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` mention a time."""
        ...

    def mentioned_times(self, namespace: str, memory_id: str) -> list[TimeRange]:
        """The times one memory's text mentions."""
        ...

    def holds_cjk(self, namespace: str) -> bool:
        """Whether any memory holds Chinese (or other CJK) text."""
        ...

    def holds_inactive(self, namespace: str) -> bool:
        """Whether any memory is not active (forgotten), by index seeks."""
        ...

    def namespace_totals(self, namespace: str) -> tuple[int, int]:
        """(memories, tokens) of ``namespace``."""
        ...

    def generation(self, namespace: str) -> tuple[int, int] | None:
        """A value that changes with every write of ``namespace`` (caches)."""
        ...

    def pinned(self, namespace: str) -> AbstractContextManager[None]:
        """Within: :meth:`generation` of ``namespace`` read once, in this thread (one
        search's)."""
        ...

    def namespaces(self) -> list[str]:
        """Every namespace holding a memory."""
        ...

    def gauges(self) -> dict[str, dict[Any, int]]:
        """Counts for the metrics endpoint."""
        ...


@runtime_checkable
class DocumentRecordsPort(Protocol):
    """Documents and their chunks: what the RAG pipeline, its chunk index and the
    dashboard read and write."""

    def find_document(self, namespace: str, document: str) -> DocumentRecord | None:
        """A document by id or source."""
        ...

    def list_documents(self, namespace: str) -> list[DocumentRecord]:
        """Every document of ``namespace``."""
        ...

    def replace_document(self, doc: DocumentRecord, chunks: Sequence[ChunkRecord]
                         ) -> tuple[list[int], list[str]]:
        """Write ``doc`` and its chunks in place of its old ones (outbox seqs, old
        chunk ids)."""
        ...

    def delete_documents_queued(self, namespace: str, document_ids: Sequence[str]
                                ) -> tuple[int, int, list[int]]:
        """Delete documents and their chunks (documents, chunks, outbox seqs)."""
        ...

    def get_chunks(self, namespace: str, ids: Sequence[str]) -> list[ChunkRecord]:
        """The chunks of ``ids`` that exist."""
        ...

    def document_chunks(self, namespace: str, document_id: str) -> list[ChunkRecord]:
        """One document's chunks in order."""
        ...

    def document_stats(self, namespace: str) -> dict[str, int]:
        """Counts of documents and chunks."""
        ...

    def all_chunk_ids(self, namespace: str) -> set[str]:
        """Every chunk id of ``namespace``."""
        ...


@runtime_checkable
class OutboxPort(Protocol):
    """The outbox read and marked by the index engine, maintenance and the RAG index."""

    def enqueue(self, kind: str, op: str, namespace: str, ids: Sequence[str]) -> list[int]:
        """Queue one row per id in a transaction of its own (repairs)."""
        ...

    def pending_outbox(self, limit: int = 1000, *, after: int = 0,
                       kinds: Collection[str] | None = None, namespace: str | None = None
                       ) -> list[OutboxEntry]:
        """Rows not applied yet, oldest first."""
        ...

    def entries(self, seqs: Sequence[int]) -> list[OutboxEntry]:
        """The rows of ``seqs``."""
        ...

    def pending_seqs(self, namespace: str, ids: Sequence[str]) -> list[int]:
        """Pending rows of ``ids``."""
        ...

    def mark_applied(self, seqs: Sequence[int]) -> None:
        """Mark rows applied."""
        ...

    def namespaces(self, kinds: Collection[str] = ...) -> list[str]:
        """Namespaces with a row of one of ``kinds``."""
        ...


@runtime_checkable
class AuditPort(Protocol):
    """The audit trail of the facade's destructive operations."""

    def add(self, namespace: str, action: str, details: dict[str, Any]) -> None:
        """Record one action."""
        ...

    def list(self, namespace: str, limit: int = 100) -> list[dict[str, Any]]:
        """The latest actions, newest first."""
        ...


@runtime_checkable
class RecordsPort(Protocol):
    """The record store as its callers use it: opened and closed by the stores
    bundle, one repository per aggregate, and the SQLAlchemy engine that the SQL graph,
    the upload area and the identity checks share."""

    # set by the facade from ``memory.times_from_text``
    mention_times: bool

    @property
    def memories(self) -> MemoryRecordsPort:
        """The memories' repository."""
        ...

    @property
    def documents(self) -> DocumentRecordsPort:
        """The documents' (and chunks') repository."""
        ...

    @property
    def outbox(self) -> OutboxPort:
        """The outbox."""
        ...

    @property
    def audit(self) -> AuditPort:
        """The audit trail."""
        ...

    def open(self) -> None:
        """Create or upgrade the schema; idempotent."""
        ...

    def close(self) -> None:
        """Dispose of the engine (writing the pending access counts first)."""
        ...

    @property
    def engine(self) -> Engine:
        """The open engine."""
        ...

    def purge_namespace(self, namespace: str) -> dict[str, int]:
        """Delete every row of ``namespace``; rows deleted per table."""
        ...
