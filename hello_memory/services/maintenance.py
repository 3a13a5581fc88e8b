"""The maintenance service: counts, export and import, repair of the indexes (issue 31).

``MemoryManager.stats``, ``export_jsonl``, ``import_jsonl``, ``reconcile``, ``reindex``
and ``optimize`` delegate here; the jobs write their audit record (``record_job``) and
the scheduler claims its scheduled slots (``job_lease``, the fleet lease of
stores/records/leases.py) through ``MemoryManager.maintenance``. The repairs themselves live in
``memory/maintenance.py`` (``Maintenance``: the records are the truth, vectors and graph
are rebuilt from them); this service builds one per call, as the facade did.

Built by the facade from the stores, the working memory and the ingest service, whose
duplicate rules (``memory.on_duplicate``, ``memory/dedup.py``) an import follows as an
add does. Methods that read one namespace take it already resolved.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hello_memory.errors import InvalidInputError
from hello_memory.memory import dedup
from hello_memory.memory.dedup import duplicate_mode
from hello_memory.memory.reports import MemoryStats
from hello_memory.services.convert import item_from_json, item_to_json
from hello_memory.services.ingest import STORED_TYPES
from hello_memory.stores.bundle import MEMORY_COLLECTION
from hello_memory.stores.records import ItemFilter
from hello_memory.stores.records.leases import LEASE_TABLE, FleetLease, fleet_lease
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType
from hello_memory.validation import validate_item

if TYPE_CHECKING:
    from hello_memory.memory.maintenance import OptimizeReport, ReconcileReport, ReindexReport
    from hello_memory.memory.working import WorkingMemory
    from hello_memory.services.ingest import IngestService
    from hello_memory.stores.bundle import Stores

# FleetLease, LEASE_TABLE: the scheduler (an interface) names them from here
__all__ = ["LEASE_TABLE", "FleetLease", "MaintenanceService"]


class MaintenanceService:
    """Stats, JSON-lines export and import, reconcile / reindex / optimize (module
    doc). Building it reads and writes nothing."""

    def __init__(self, stores: Stores, working: WorkingMemory, ingest: IngestService) -> None:
        self.stores = stores
        self.working = working
        self._ingest = ingest

    def stats(self, ns: str) -> MemoryStats:
        """Counts of one namespace: memories per type, forgotten ones, vectors, the
        entity graph and working memory's tokens (a ``MemoryStats`` dict)."""
        rec = self.stores.records
        by_type = {t.value: rec.memories.count_items(ns, ItemFilter(memory_types=(t,)))
                   for t in (*STORED_TYPES, MemoryType.PERCEPTUAL)}
        by_type[MemoryType.WORKING.value] = self.working.count(ns)
        graph = self.stores.graph.stats(ns)
        return {
            "namespace": ns,
            "by_type": by_type,
            "total": sum(by_type.values()),
            "forgotten": rec.memories.count_items(ns, ItemFilter(status=MemoryStatus.FORGOTTEN)),
            "vectors": self.stores.vectors.count(MEMORY_COLLECTION, namespace=ns),
            "graph": {"entities": graph.entities, "relations": graph.relations,
                      "mentions": graph.mentions},
            "working_tokens": self.working.tokens(ns),
        }

    def record_job(self, ns: str, job: str, run: Mapping[str, Any]) -> None:
        """Write the audit record of one maintenance job's run (action ``job:<job>``,
        hello_memory/interfaces/jobs.py ``JobRun.as_dict``) in namespace ``ns``."""
        self.stores.records.audit.add(ns, f"job:{job}", dict(run))

    def job_lease(self) -> FleetLease | None:
        """The fleet lease on the records' database when several processes may share
        it (PostgreSQL), else None: the scheduler claims each scheduled slot through it
        (hello_memory/interfaces/scheduler.py; docs/ARCHITECTURE.md, "The write path")."""
        return fleet_lease(self.stores.records.engine)

    # --- export / import --------------------------------------------------------------
    def export_jsonl(self, ns: str, path: str | Path) -> int:
        """Write every memory of ``ns`` (forgotten ones and working memory too) as JSON
        lines; vectors are not exported (they are recomputed on import)."""
        items = (self.stores.records.memories.list_items(ns, ItemFilter(status=None))
                 + self.working.list(ns))
        with Path(path).open("w", encoding="utf-8") as fh:
            for item in items:
                fh.write(json.dumps(item_to_json(item), ensure_ascii=False) + "\n")
        return len(items)

    def import_jsonl(self, path: str | Path, *, namespace: str | None = None,
                     on_duplicate: str | None = None) -> dict[str, int]:
        """Load an export (``MemoryManager.import_jsonl``). Every line is validated
        before anything is written; ids that already exist are skipped, so importing
        twice changes nothing. A record whose content is already stored in its
        namespace and type (another export, an add) follows ``on_duplicate`` as
        ``add_many`` does and counts in ``duplicates``: not imported (``return``),
        merged into the stored one (``update``) or imported anyway (``store``)."""
        mode = (self._ingest.on_duplicate if on_duplicate is None
                else duplicate_mode(on_duplicate))
        items: list[MemoryItem] = []
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{path}: not a UTF-8 JSON-lines export "
                                    f"({exc.reason} at byte {exc.start})") from None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                item = item_from_json(json.loads(line), namespace)
                validate_item(item, self.stores.limits)
            except (json.JSONDecodeError, InvalidInputError) as exc:
                raise InvalidInputError(f"{path}:{n}: {exc}") from exc
            items.append(item)
        skipped = 0
        fresh: list[MemoryItem] = []
        for item in items:
            exists = (self.working.get(item.namespace, item.id) is not None
                      or self.stores.records.memories.get_items(item.namespace, [item.id]))
            if exists:
                skipped += 1
            else:
                fresh.append(item)
        plan = dedup.resolve(self._ingest, fresh, mode)
        if mode == "update":
            for n, existing in plan.existing.items():
                self._ingest.merge_repeat({"importance": fresh[n].importance,
                                           "metadata": fresh[n].metadata,
                                           "event_time": fresh[n].event_time}, existing)
        fresh = [fresh[n] for n in plan.fresh]
        self.stores.add([i for i in fresh if i.memory_type != MemoryType.WORKING])
        self.working.add_many([i for i in fresh if i.memory_type == MemoryType.WORKING])
        return {"imported": len(fresh), "skipped": skipped,
                "duplicates": len(plan.existing) + len(plan.earlier)}

    # --- repairs (records are the truth; memory/maintenance.py) -------------------------
    def reconcile(self, *, namespace: str | None = None, dry_run: bool = False,
                  retry_failed: Sequence[str] = (), drop_failed: Sequence[str] = ()
                  ) -> ReconcileReport:
        """Bring vectors and graph in line with the records (``Maintenance.reconcile``)."""
        from hello_memory.memory.maintenance import Maintenance

        return Maintenance(self.stores).reconcile(namespace=namespace, dry_run=dry_run,
                                                  retry_failed=retry_failed,
                                                  drop_failed=drop_failed)

    def reindex(self, *, namespace: str | None = None, dry_run: bool = False,
                progress: bool = False) -> ReindexReport:
        """Rebuild vectors and graph from the records alone (``Maintenance.reindex``)."""
        from hello_memory.memory.maintenance import Maintenance

        return Maintenance(self.stores).reindex(namespace=namespace, dry_run=dry_run,
                                                progress=progress)

    def optimize(self) -> OptimizeReport:
        """Build the vector index where the backend builds it only on request, after
        the disk check (``Maintenance.optimize``)."""
        from hello_memory.memory.maintenance import Maintenance

        self.stores.check_disk()  # 507 before the index build (stores/disk.py)
        return Maintenance(self.stores).optimize()
