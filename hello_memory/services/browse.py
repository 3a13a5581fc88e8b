"""The read-only browse service: what the interfaces read straight from the stores.

The inspector's pages, the LangGraph and OpenAI Agents adapters, the catalogue, the jobs
and ``/metrics`` list memories, page through them, look up records, documents, the
audit trail, the entity graph and the pending index work. They used to reach for
``manager.stores.records`` and ``manager.stores.graph`` to do it; they now call
``manager.browse`` (a :class:`BrowseService`), so the stores' shape can change behind
one class.

Every method is one call of a repository or the graph store (no SQL here, no ranking:
searching is ``MemoryManager.search``), takes the namespace explicitly where the store
does (an empty one raises, isolation fails closed) and writes nothing. Records come
back as stored: forgotten, superseded and working memories are what the filter says,
and working memory (which lives in the process, not the stores) is not read here.

The value types these methods take and return, and the upload area's path helpers,
are re-exported here so that an interface names them from this module rather than
from ``hello_memory.stores``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from hello_memory.stores.records import ChunkRecord, DocumentRecord, ItemFilter, OutboxEntry
from hello_memory.stores.records.memories import ItemOrder
from hello_memory.stores.uploads import upload_folder, uploads_root
from hello_memory.types import Entity, GraphHit, GraphStats, MemoryItem

if TYPE_CHECKING:
    from hello_memory.ports.graph import GraphPort
    from hello_memory.ports.records import RecordsPort
    from hello_memory.stores.bundle import Stores

__all__ = ["BrowseService", "ChunkRecord", "DocumentRecord", "ItemFilter", "ItemOrder",
           "OutboxEntry", "upload_folder", "uploads_root"]


class BrowseService:
    """Read-only access to the records, the graph and the index backlog of one set of
    stores (module doc). Built from the ``Stores`` bundle; building it opens, reads
    and writes nothing."""

    def __init__(self, stores: Stores) -> None:
        self._stores = stores

    # read at each call: the bundle's parts, typed as the ports this service relies on
    @property
    def _records(self) -> RecordsPort:
        return self._stores.records

    @property
    def _graph(self) -> GraphPort:
        return self._stores.graph

    # --- namespaces -----------------------------------------------------------------
    def namespaces(self) -> list[str]:
        """Every namespace that holds a stored memory (any type or status), sorted."""
        return self._records.memories.namespaces()

    # --- memories -------------------------------------------------------------------
    def get_memory(self, namespace: str, memory_id: str) -> MemoryItem:
        """One stored memory by its full id (forgotten ones too); raises
        :class:`~hello_memory.errors.NotFoundError` when the namespace has none.
        Working memory and short handles are the facade's: ``MemoryManager.get``."""
        return self._records.memories.get_item(namespace, memory_id)

    def get_memories(self, namespace: str, ids: Sequence[str]) -> list[MemoryItem]:
        """The stored memories among ``ids`` (forgotten ones too); unknown ids are
        left out."""
        return self._records.memories.get_items(namespace, list(ids))

    def list_memories(self, namespace: str, flt: ItemFilter | None = None, *,
                      order: ItemOrder = "event_time", limit: int | None = None,
                      offset: int = 0) -> list[MemoryItem]:
        """The stored memories that match ``flt`` (default: active and current ones of
        every stored type), one page of them: ``order`` is ``"event_time"`` (oldest
        first), ``"-event_time"`` (newest first) or ``"-importance"`` (most important
        first); ``offset`` and ``limit`` cut the page (``limit=None``: all of them)."""
        return self._records.memories.list_items(
            namespace, ItemFilter() if flt is None else flt, limit=limit, offset=offset,
            order=order)

    # --- documents ------------------------------------------------------------------
    def documents(self, namespace: str) -> list[DocumentRecord]:
        """The namespace's ingested documents, ordered by source path."""
        return self._records.documents.list_documents(namespace)

    def find_document(self, namespace: str, document: str) -> DocumentRecord | None:
        """The document whose id or source path is ``document``; None when none is."""
        return self._records.documents.find_document(namespace, document)

    def document_chunks(self, namespace: str, document_id: str) -> list[ChunkRecord]:
        """The chunks of one document, in document order."""
        return self._records.documents.document_chunks(namespace, document_id)

    def document_stats(self, namespace: str) -> dict[str, int]:
        """Counts of the namespace's documents, chunks and chunk tokens."""
        return self._records.documents.document_stats(namespace)

    # --- the audit trail --------------------------------------------------------------
    def audit(self, namespace: str, *, limit: int = 100) -> list[dict[str, Any]]:
        """The namespace's latest audit records (``at``, ``action``, ``details``),
        newest first, at most ``limit``."""
        return self._records.audit.list(namespace, limit=limit)

    # --- the entity graph -------------------------------------------------------------
    def graph_stats(self, namespace: str) -> GraphStats:
        """Counts of the namespace's entities, relations and mention links."""
        return self._graph.stats(namespace)

    def find_entities(self, namespace: str, names: Sequence[str], *,
                      aliases: bool = False) -> list[Entity]:
        """The graph's entities named one of ``names`` (normalised); with ``aliases``,
        person-like entities sharing a first name count too."""
        return self._graph.find_entities(namespace, names, aliases=aliases)

    def neighbours(self, namespace: str, entity_ids: Sequence[str], *, max_hops: int = 2,
                   limit: int = 100) -> list[GraphHit]:
        """The entities within ``max_hops`` edges of ``entity_ids`` (the start ones at
        ``hops=0``), each with the memories that mention it; by hops, then name, at
        most ``limit``."""
        return self._graph.neighbors(namespace, entity_ids, max_hops=max_hops, limit=limit)

    # --- index work, metrics, disk ----------------------------------------------------
    def pending_index_work(self, *, kinds: Collection[str] | None = None,
                           namespace: str | None = None, limit: int = 1000
                           ) -> list[OutboxEntry]:
        """Outbox rows written but not applied to the indexes yet, oldest first, at
        most ``limit``: of ``kinds`` (``memory``, ``media``, ``chunk``; None: all) and
        of one namespace, or of all (None)."""
        return self._records.outbox.pending_outbox(limit, kinds=kinds, namespace=namespace)

    def gauges(self) -> dict[str, dict[Any, int]]:
        """Store-wide counts for ``/metrics``: ``memories`` by ``(memory_type,
        status)`` and the pending ``outbox`` rows by kind."""
        return self._records.memories.gauges()

    def check_disk(self, incoming: int = 0) -> None:
        """Raise :class:`~hello_memory.errors.InsufficientStorageError` when a write
        of about ``incoming`` bytes would leave less free space than
        ``storage.min_free_bytes`` (an interface asks before costly work; the record
        store enforces it on every write anyway). Reads the free space only."""
        self._stores.check_disk(incoming)
