"""The edit service: change, delete one memory, clear a namespace (issue 31).

``MemoryManager.update``, ``remove`` and ``clear`` delegate here; the adapters call
``add_keyed`` and ``remove_many`` through ``MemoryManager.edit`` (docs/ARCHITECTURE.md,
"Interfaces": they call the facade, never the stores). Forget, restore and
consolidate are the other service of the memories' life (``services/lifecycle.py``
``Lifecycle``), which the facade calls as it did before.

Built by the facade from the stores, the working memory and the lookup service (which
turns a short handle into a full id); ``update`` and ``remove`` take the namespace
already resolved, ``clear`` takes it as given (it has no default: clearing needs the
namespace named).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hello_memory.errors import InvalidInputError
from hello_memory.memory.reports import ClearReport
from hello_memory.stores.uploads import remove_namespace_uploads
from hello_memory.types import MemoryItem
from hello_memory.validation import require_namespace, validate_content, validate_importance

if TYPE_CHECKING:
    from hello_memory.memory.working import WorkingMemory
    from hello_memory.services.lookup import LookupService
    from hello_memory.stores.bundle import Stores

__all__ = ["EditService"]


class EditService:
    """Updates and deletes over the stores and the working memory (module doc).
    Building it reads and writes nothing."""

    def __init__(self, stores: Stores, working: WorkingMemory, lookup: LookupService) -> None:
        self.stores = stores
        self.working = working
        self._lookup = lookup

    def update(self, ns: str, memory_id: str, *, content: str | None = None,
               importance: float | None = None, metadata: Mapping[str, Any] | None = None
               ) -> MemoryItem:
        """Change content (re-embedded, re-extracted), importance or metadata (payload
        update only)."""
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = validate_content(content, limits=self.stores.limits)
        if importance is not None:
            changes["importance"] = validate_importance(importance)
        if metadata is not None:
            if not isinstance(metadata, Mapping):
                raise InvalidInputError("metadata must be a mapping")
            changes["metadata"] = dict(metadata)
        if not changes:
            raise InvalidInputError("nothing to update: give content, importance or metadata")
        memory_id = self._lookup.resolve_id(ns, memory_id)
        if self.working.get(ns, memory_id) is not None:
            return self.working.update(ns, memory_id, **changes)
        return self.stores.update(ns, memory_id, **changes)

    def add_keyed(self, items: Sequence[MemoryItem]) -> list[MemoryItem]:
        """Store ``items`` under the ids they carry, as given: no duplicate check, one
        embedding batch, one transaction (one invalid item stores nothing). The
        adapters' keyed records (interfaces/adapters/_common.py), whose id is derived
        from their own key, go here rather than through the idempotent add."""
        return self.stores.add(list(items))

    def remove_many(self, ns: str, ids: Sequence[str]) -> int:
        """Delete stored memories of ``ns`` by full id in one transaction, with their
        vectors and graph links; an unknown id is skipped. Returns how many went."""
        return self.stores.delete(ns, list(ids))

    def remove(self, ns: str, memory_id: str) -> bool:
        """Delete one memory from every store; False if it does not exist."""
        memory_id = self._lookup.resolve_id(ns, memory_id)
        if self.working.remove(ns, memory_id):
            return True
        return self.stores.delete(ns, [memory_id]) == 1

    def clear(self, namespace: str, *, confirm: bool, uploads_dir: str | Path | None
              ) -> ClearReport:
        """Delete everything of ONE namespace (``MemoryManager.clear``): memories of
        every type, documents and their chunks, outbox and audit rows, entity graph,
        namespace totals (every row of every table that belongs to it, see
        RecordStore.purge_namespace), its points in every vector collection (memories,
        chunks, each perceptual modality), working memory, and the files kept for it
        under ``uploads_dir`` (None: none). Records go first, in one transaction: a
        clear cut short by a crash leaves only derived data, which running it again
        removes. Returns counts per kind; one audit row of counts (no content) stays."""
        ns = require_namespace(namespace)
        if confirm is not True:
            raise InvalidInputError(f"clear({ns!r}) deletes every memory and document of that "
                                    "namespace; pass confirm=True")
        graph = self.stores.graph.stats(ns)
        rows = self.stores.records.purge_namespace(ns)
        vectors: dict[str, int] = {}
        for collection in self.stores.vectors.collections():
            n = self.stores.vectors.count(collection, namespace=ns)
            if n:
                self.stores.vectors.clear(collection, namespace=ns)
                vectors[collection] = n
        self.stores.graph.clear(ns)  # a graph server keeps its own copy (SQLite: gone above)
        working = self.working.clear(ns)
        files = remove_namespace_uploads(uploads_dir, ns) if uploads_dir is not None else 0
        report: ClearReport = {
            "records": rows.get("hm_memory_items", 0), "working": working,
            "documents": rows.get("hm_documents", 0), "chunks": rows.get("hm_chunks", 0),
            "entities": graph.entities, "relations": graph.relations,
            "audit": rows.get("hm_audit_log", 0), "vectors": vectors, "files": files,
            "rows": rows}
        self.stores.records.audit.add(ns, "clear", {
            k: v for k, v in report.items() if k not in ("rows", "vectors")})
        return report
