"""Maintenance jobs that bring the derived indexes in line with the records.

Records are the truth; the vector store and the graph are derived from them
(ARCHITECTURE decision 1). Two jobs repair the derived side:

``reconcile`` — cheap, incremental, safe to run at any time:

1. replay the outbox rows a crash left pending;
2. delete vectors (text collection, and perceptual collections when perceptual memory
   is configured) whose record no longer exists — orphans;
3. remove graph links of memories whose record no longer exists (or is not semantic);
4. re-index records that have no vector (re-embedded from the record's content);
5. rewrite vector payloads that disagree with their record (status, importance...);
6. re-extract graph links for semantic records that have none (a graph server that
   came back empty), when the extractor finds entities in them.

``reindex`` — a full rebuild from records alone: every text vector is re-embedded and
upserted, orphans are deleted, and each namespace's graph is cleared and re-extracted.
Vectors are overwritten in place (never dropped first), so search keeps answering while
it runs. Perceptual media vectors are kept when present (their source may be bytes
that cannot be re-read); missing ones are re-encoded from their source file.

Both are methods of :class:`Maintenance`, a service over the stores that uses only
their public protocols (``VectorStore``, ``GraphStore``, the record store's
repositories, ``Stores``), so they work on any backend. Every repair is queued as an
outbox row and applied by the one index-maintenance engine
(hello_memory/stores/indexing.py): the same converging apply under the same per-key
locks as a write, so a repair racing with a write cannot undo it, and a crash
half-way leaves rows that the next open replays (ARCHITECTURE decision 1). Snapshots
are taken in the order index-then-records: a vector or link seen before the record
snapshot cannot be the not-yet-committed half of a concurrent write (records commit
first), so a write racing with ``reconcile`` is never mistaken for an orphan.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from hello_memory.errors import CollectionNotFoundError
from hello_memory.stores.bundle import MEMORY_COLLECTION, Stores, memory_payload
from hello_memory.stores.indexing import CHUNK_COLLECTION
from hello_memory.stores.records import ItemFilter
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import require_namespace

log = logging.getLogger(__name__)

__all__ = ["Maintenance", "OptimizeReport", "ReconcileReport", "ReindexReport"]

BATCH = 128


@dataclass
class ReconcileReport:
    """What :func:`reconcile` did (or, with ``dry_run``, would do), summed over
    ``namespaces``. Id lists are sorted; counts are their lengths."""

    dry_run: bool
    namespaces: list[str] = field(default_factory=list)
    outbox_replayed: int = 0
    reindexed: list[str] = field(default_factory=list)
    orphan_vectors: list[str] = field(default_factory=list)
    orphan_graph_links: list[str] = field(default_factory=list)
    payloads_refreshed: list[str] = field(default_factory=list)
    graph_relinked: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    # memories whose index work keeps failing (they stay pending): namespace, memory_id,
    # error, attempts; `jobs reconcile --retry ID` / `--drop-failed ID` act on them
    index_failures: list[dict[str, Any]] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def changed(self) -> int:
        """How many repairs were made (0 means the stores were already in line)."""
        return (self.outbox_replayed + len(self.reindexed) + len(self.orphan_vectors)
                + len(self.orphan_graph_links) + len(self.payloads_refreshed)
                + len(self.graph_relinked) + len(self.retried) + len(self.dropped))

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["changed"] = self.changed
        return out


@dataclass
class ReindexReport:
    """What :func:`reindex` rebuilt (or would rebuild, with ``dry_run``)."""

    dry_run: bool
    namespaces: list[str] = field(default_factory=list)
    outbox_replayed: int = 0
    records: int = 0             # records read
    vectors_written: int = 0     # text-collection vectors re-embedded and upserted
    orphan_vectors: int = 0      # vectors without a record, deleted
    graph_memories: int = 0      # semantic memories whose links were re-extracted
    perceptual: int = 0          # perceptual records handed to their indexer
    skipped: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class OptimizeReport:
    """What :func:`optimize` did: per collection, whether its index was rebuilt (False:
    already optimal, or a backend that indexes by itself), and how long it took."""

    collections: dict[str, bool] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def changed(self) -> int:
        return sum(self.collections.values())

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["changed"] = self.changed
        return out


# --- helpers ------------------------------------------------------------------------
def _chunks(items: Sequence[Any], size: int = BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _same(have: Any, want: Any) -> bool:
    # A backend may round a float's last bit (JSON encoding): that is not drift.
    if isinstance(have, float) and isinstance(want, float):
        return math.isclose(have, want, rel_tol=1e-9, abs_tol=1e-12)
    return bool(have == want)


def _payload_differs(have: dict[str, Any], want: dict[str, Any]) -> bool:
    return not all(_same(have.get(k), v) for k, v in want.items())


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="mem", disable=not enabled)


@dataclass
class _Snapshot:
    """One namespace as reconcile sees it: the indexes first, then the records."""

    vector_ids: set[str]
    graph_ids: set[str]
    media: dict[str, set[str]]
    text_items: list[MemoryItem]
    perceptual_items: list[MemoryItem]


class Maintenance:
    """reconcile, reindex and optimize over built stores (see the module doc); the
    facade's ``reconcile`` / ``reindex`` / ``optimize`` call these."""

    def __init__(self, stores: Stores) -> None:
        self.stores = stores

    # --- shared ---------------------------------------------------------------------
    def namespaces(self, namespace: str | None) -> list[str]:
        """The one given, else every namespace that has records or ever had index
        work (the outbox remembers namespaces whose records were all deleted)."""
        if namespace is not None:
            return [require_namespace(namespace)]
        records = self.stores.records
        return sorted(set(records.memories.namespaces())
                      | set(records.outbox.namespaces(kinds=("memory", "media"))))

    def _perceptual_collections(self) -> list[str]:
        if self.stores.indexer(MemoryType.PERCEPTUAL) is None:
            return []
        from hello_memory.memory.perceptual import COLLECTIONS  # only when it is configured

        return list(COLLECTIONS.values())

    def _ids_or_empty(self, collection: str, namespace: str) -> set[str]:
        """Point ids of a perceptual collection; one never created holds none."""
        try:
            return self.stores.vectors.ids(collection, namespace=namespace)
        except CollectionNotFoundError:
            return set()

    def _snapshot(self, ns: str) -> _Snapshot:
        st = self.stores
        vector_ids = st.vectors.ids(MEMORY_COLLECTION, namespace=ns)
        graph_ids = st.graph.memory_ids(ns)
        media = {c: self._ids_or_empty(c, ns) for c in self._perceptual_collections()}
        items = st.records.memories.list_items(ns, ItemFilter(status=None))
        return _Snapshot(vector_ids, graph_ids, media,
                         [i for i in items if i.memory_type != MemoryType.PERCEPTUAL],
                         [i for i in items if i.memory_type == MemoryType.PERCEPTUAL])

    # --- reconcile ------------------------------------------------------------------
    def reconcile(self, *, namespace: str | None = None, dry_run: bool = False,
                  retry_failed: Sequence[str] = (), drop_failed: Sequence[str] = (),
                  ) -> ReconcileReport:
        """Bring the vector store and the graph in line with the records (see module
        doc). With ``dry_run`` nothing is written and the report says what would change.

        An item whose index work keeps failing is isolated (it stays pending, the
        others are repaired) and listed in ``index_failures`` with its error;
        ``retry_failed`` retries the named ones first, ``drop_failed`` deletes them
        (record included)."""
        st = self.stores
        report = ReconcileReport(dry_run=dry_run, namespaces=self.namespaces(namespace))
        if (retry_failed or drop_failed) and not dry_run:
            mine = {f.memory_id for f in st.index_failures.values()
                    if namespace is None or f.namespace == namespace}
            retried = st.retry_failed([m for m in retry_failed if m in mine])
            report.retried = sorted(m for m, error in retried.items() if error is None)
            report.dropped = sorted(st.drop_failed([m for m in drop_failed if m in mine]))
        if dry_run:
            report.outbox_replayed = len(st.records.outbox.pending_outbox(limit=1_000_000))
        else:
            report.outbox_replayed = st.apply_outbox()
        for ns in report.namespaces:
            self._reconcile_namespace(ns, report)
        report.index_failures = sorted(
            (f.as_dict() for f in st.index_failures.values()
             if f.namespace in report.namespaces), key=lambda f: str(f["memory_id"]))
        for name in ("reindexed", "orphan_vectors", "orphan_graph_links", "payloads_refreshed",
                     "graph_relinked"):
            getattr(report, name).sort()
        if report.changed:
            log.info("reconcile%s: %s", " (dry run)" if dry_run else "", report.as_dict())
        return report

    def _reconcile_namespace(self, ns: str, report: ReconcileReport) -> None:
        snap = self._snapshot(ns)  # indexes first, records second (see the module doc)
        text_ids = {i.id for i in snap.text_items}
        semantic_ids = {i.id for i in snap.text_items if i.memory_type == MemoryType.SEMANTIC}
        orphans = sorted(snap.vector_ids - text_ids)
        report.orphan_vectors += orphans
        perceptual_ids = {i.id for i in snap.perceptual_items}
        lost = sorted(set().union(*snap.media.values()) - perceptual_ids) if snap.media else []
        report.orphan_vectors += lost
        stale_links = sorted(snap.graph_ids - semantic_ids)
        report.orphan_graph_links += stale_links
        missing = [i.id for i in snap.text_items if i.id not in snap.vector_ids]
        report.reindexed += missing
        present = [i for i in snap.text_items if i.id in snap.vector_ids]
        stale = self._stale_payloads(ns, present)
        report.payloads_refreshed += stale
        unlinked = self._unlinked(ns, present, snap.graph_ids)
        report.graph_relinked += unlinked
        if not report.dry_run:
            # Each repair is a row for the engine: "delete" converges a vector or link
            # without a record to gone; an orphan link of a record that is not semantic
            # is re-derived ("upsert": old links dropped, none extracted).
            rec = self.stores.requeue
            rec("memory", "delete", ns, orphans + [i for i in stale_links if i not in text_ids])
            rec("media", "delete", ns, lost)
            rec("memory", "upsert", ns, [i for i in stale_links if i in text_ids])
            rec("memory", "add", ns, missing + unlinked)
            rec("memory", "payload", ns, stale)
        self._reconcile_media(ns, snap, report)

    def _stale_payloads(self, ns: str, present: Sequence[MemoryItem]) -> list[str]:
        stale: list[str] = []
        for chunk in _chunks(present, 512):
            by_id = {h.id: h.payload for h in self.stores.vectors.retrieve(
                MEMORY_COLLECTION, [i.id for i in chunk], namespace=ns)}
            stale += [i.id for i in chunk
                      if i.id in by_id and _payload_differs(by_id[i.id], memory_payload(i))]
        return stale

    def _unlinked(self, ns: str, present: Sequence[MemoryItem], graph_ids: set[str]
                  ) -> list[str]:
        """Semantic memories with a vector but no graph link whose text the extractor
        finds entities in (a graph server that came back empty)."""
        extractor = self.stores.extractor
        if extractor is None:
            return []
        found: list[str] = []
        for item in present:
            if item.memory_type != MemoryType.SEMANTIC or item.id in graph_ids:
                continue
            try:
                entities, relations = extractor(item)
            except Exception as exc:  # noqa: BLE001 - one text the analysis refuses
                self.stores.note_failure(ns, item.id, exc)
                continue
            if entities or relations:
                found.append(item.id)
        return found

    def _reconcile_media(self, ns: str, snap: _Snapshot, report: ReconcileReport) -> None:
        items = snap.perceptual_items
        if not items:
            return
        if self.stores.indexer(MemoryType.PERCEPTUAL) is None:
            for item in items:
                report.skipped[item.id] = "perceptual memory is not configured in this process"
            return
        have = set().union(*snap.media.values()) if snap.media else set()
        lacking = [i.id for i in items if i.id not in have]
        if report.dry_run or not lacking:
            report.reindexed += lacking
            return
        self.stores.requeue("media", "add", ns, lacking)  # re-encodes from the source
        now = set().union(*(self._ids_or_empty(c, ns) for c in snap.media))
        for memory_id in lacking:
            if memory_id in now:
                report.reindexed.append(memory_id)
            else:
                report.skipped[memory_id] = (
                    "perceptual vector could not be re-encoded (source given as bytes, "
                    "moved or changed); add it again")

    # --- reindex --------------------------------------------------------------------
    def reindex(self, *, namespace: str | None = None, dry_run: bool = False,
                progress: bool = False) -> ReindexReport:
        """Rebuild the vector store and the graph from the records alone (see module
        doc). ``progress`` shows a progress bar per namespace."""
        st = self.stores
        report = ReindexReport(dry_run=dry_run, namespaces=self.namespaces(namespace))
        if not dry_run:
            # Settle pending rows first so a later replay does not redo (older) work.
            report.outbox_replayed = st.apply_outbox()
        for ns in report.namespaces:
            self._reindex_namespace(ns, report, progress)
        if not dry_run and namespace is None:
            # Every memory's keyword vector now comes from this analyzer.
            from hello_memory.stores.lexical_version import record_lexical_version

            record_lexical_version(st.records)
        log.info("reindex%s: %s", " (dry run)" if dry_run else "", report.as_dict())
        return report

    def _reindex_namespace(self, ns: str, report: ReindexReport, progress: bool) -> None:
        st = self.stores
        vector_ids = st.vectors.ids(MEMORY_COLLECTION, namespace=ns)
        items = st.records.memories.list_items(ns, ItemFilter(status=None))
        report.records += len(items)
        text_items = [i for i in items if i.memory_type != MemoryType.PERCEPTUAL]
        perceptual_items = [i for i in items if i.memory_type == MemoryType.PERCEPTUAL]
        orphans = sorted(vector_ids - {i.id for i in text_items})
        report.orphan_vectors += len(orphans)
        report.vectors_written += len(text_items)
        report.graph_memories += sum(1 for i in text_items if i.memory_type == MemoryType.SEMANTIC)
        report.perceptual += len(perceptual_items)
        if st.indexer(MemoryType.PERCEPTUAL) is None:
            for item in perceptual_items:
                report.skipped[item.id] = "perceptual memory is not configured in this process"
        if report.dry_run:
            return
        # The graph is derived from semantic records only: clear it, then re-extract.
        st.graph.clear(ns)
        with _progress(len(text_items), f"reindex {ns}", progress) as bar:
            for chunk in _chunks(text_items):
                st.index(chunk)
                bar.update(len(chunk))
        st.requeue("memory", "delete", ns, orphans)
        perceptual_ids = {i.id for i in perceptual_items}
        for collection in self._perceptual_collections():
            lost = sorted(self._ids_or_empty(collection, ns) - perceptual_ids)
            report.orphan_vectors += len(lost)
            st.requeue("media", "delete", ns, lost)
        if perceptual_items and st.indexer(MemoryType.PERCEPTUAL) is not None:
            for chunk in _chunks(sorted(perceptual_ids)):
                st.requeue("media", "upsert", ns, list(chunk))

    # --- optimize -------------------------------------------------------------------
    def optimize(self) -> OptimizeReport:
        """Build the search index of every collection hello-memory writes (memories,
        document chunks, media) where the vector backend builds it only on request:
        the embedded Edge engine's HNSW segments (``vector.hnsw``). Blocks until done;
        searches are exact before and approximate (``vector.hnsw.ef``) after, for
        namespaces larger than ``full_scan_threshold_kb``. Collections never created
        are skipped."""
        st = self.stores
        st.apply_outbox()  # index what is pending first, so it lands in the graph too
        report = OptimizeReport()
        optional = [CHUNK_COLLECTION, *self._perceptual_collections()]
        for collection in [MEMORY_COLLECTION, *optional]:
            started = time.perf_counter()
            try:
                report.collections[collection] = st.vectors.optimize(collection)
            except CollectionNotFoundError:
                if collection not in optional:
                    raise
                continue  # a knowledge base or modality this store never used
            report.seconds[collection] = round(time.perf_counter() - started, 3)
        return report
