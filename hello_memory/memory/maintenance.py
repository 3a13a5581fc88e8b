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

Both use only the public protocols of the stores (``VectorStore``, ``GraphStore``,
``RecordStore``, ``Stores``), so they work on any backend. Snapshots are taken in the
order index-then-records: a vector or link seen before the record snapshot cannot be
the not-yet-committed half of a concurrent write (records commit first), so a write
racing with ``reconcile`` is never mistaken for an orphan.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from hello_memory.errors import CollectionNotFoundError
from hello_memory.stores.bundle import MEMORY_COLLECTION, Stores, memory_payload
from hello_memory.stores.records import ItemFilter
from hello_memory.stores.records.models import OutboxRow
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

log = logging.getLogger(__name__)

__all__ = ["OptimizeReport", "ReconcileReport", "ReindexReport", "optimize", "reconcile",
           "reindex"]

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
def _namespaces(stores: Stores, namespace: str | None) -> list[str]:
    """The one given, else every namespace that has records or ever had an index
    operation (the outbox remembers namespaces whose records were all deleted)."""
    if namespace is not None:
        return [require_namespace(namespace)]
    found = set(stores.records.memories.namespaces())
    with stores.records.transaction() as s:
        found.update(s.scalars(select(OutboxRow.namespace).distinct()).all())
    return sorted(found)


def _chunks(items: Sequence[MemoryItem], size: int = BATCH) -> Iterator[Sequence[MemoryItem]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _perceptual_collections(stores: Stores) -> list[str]:
    if stores.indexer(MemoryType.PERCEPTUAL) is None:
        return []
    from hello_memory.memory.perceptual import COLLECTIONS  # only when it is configured

    return list(COLLECTIONS.values())


def _ids_or_empty(stores: Stores, collection: str, namespace: str) -> set[str]:
    """Point ids of a perceptual collection; one never created holds none."""
    try:
        return stores.vectors.ids(collection, namespace=namespace)
    except CollectionNotFoundError:
        return set()


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


# --- reconcile ------------------------------------------------------------------------
def reconcile(
    manager: MemoryManager, *, namespace: str | None = None, dry_run: bool = False,
    retry_failed: Sequence[str] = (), drop_failed: Sequence[str] = (),
) -> ReconcileReport:
    """Bring the vector store and the graph in line with the records (see module doc).
    With ``dry_run`` nothing is written and the report says what would change.

    A memory whose index work keeps failing is isolated (it stays pending, the others
    are repaired) and listed in ``index_failures`` with its error; ``retry_failed``
    retries the named ones first, ``drop_failed`` deletes them (record included)."""
    stores = manager.stores
    report = ReconcileReport(dry_run=dry_run, namespaces=_namespaces(stores, namespace))
    if (retry_failed or drop_failed) and not dry_run:
        mine = {f.memory_id for f in stores.index_failures.values()
                if namespace is None or f.namespace == namespace}
        retried = stores.retry_failed([m for m in retry_failed if m in mine])
        report.retried = sorted(m for m, error in retried.items() if error is None)
        report.dropped = sorted(stores.drop_failed([m for m in drop_failed if m in mine]))
    if dry_run:
        report.outbox_replayed = len(stores.records.outbox.pending_outbox(limit=1_000_000))
    else:
        report.outbox_replayed = stores.apply_outbox()
    for ns in report.namespaces:
        _reconcile_namespace(stores, ns, report)
    report.index_failures = sorted(
        (f.as_dict() for f in stores.index_failures.values()
         if f.namespace in report.namespaces), key=lambda f: str(f["memory_id"]))
    for name in ("reindexed", "orphan_vectors", "orphan_graph_links", "payloads_refreshed",
                 "graph_relinked"):
        getattr(report, name).sort()
    if report.changed:
        log.info("reconcile%s: %s", " (dry run)" if dry_run else "", report.as_dict())
    return report


def _reconcile_namespace(stores: Stores, ns: str, report: ReconcileReport) -> None:
    dry = report.dry_run
    # Index snapshots first, records second (see the module doc).
    vector_ids = stores.vectors.ids(MEMORY_COLLECTION, namespace=ns)
    graph_ids = stores.graph.memory_ids(ns)
    media = {c: _ids_or_empty(stores, c, ns) for c in _perceptual_collections(stores)}
    items = stores.records.memories.list_items(ns, ItemFilter(status=None))
    text_items = [i for i in items if i.memory_type != MemoryType.PERCEPTUAL]
    perceptual_items = [i for i in items if i.memory_type == MemoryType.PERCEPTUAL]
    text_ids = {i.id for i in text_items}
    semantic_ids = {i.id for i in text_items if i.memory_type == MemoryType.SEMANTIC}

    orphans = sorted(vector_ids - text_ids)
    report.orphan_vectors += orphans
    if orphans and not dry:
        stores.vectors.delete(MEMORY_COLLECTION, orphans, namespace=ns)
    perceptual_ids = {i.id for i in perceptual_items}
    for collection, points in media.items():
        lost = sorted(points - perceptual_ids)
        report.orphan_vectors += lost
        if lost and not dry:
            stores.vectors.delete(collection, lost, namespace=ns)

    stale_links = sorted(graph_ids - semantic_ids)
    report.orphan_graph_links += stale_links
    if not dry:
        for memory_id in stale_links:
            stores.graph.remove_memory(ns, memory_id)

    missing = [i for i in text_items if i.id not in vector_ids]
    report.reindexed += [i.id for i in missing]
    if missing and not dry:
        for chunk in _chunks(missing):
            stores.index(chunk)  # also re-links the graph of semantic ones

    present = [i for i in text_items if i.id in vector_ids]
    for chunk in _chunks(present, 512):
        by_id = {h.id: h.payload for h in stores.vectors.retrieve(
            MEMORY_COLLECTION, [i.id for i in chunk], namespace=ns)}
        for item in chunk:
            want = memory_payload(item)
            if item.id in by_id and _payload_differs(by_id[item.id], want):
                report.payloads_refreshed.append(item.id)
                if not dry:
                    stores.vectors.set_payload(MEMORY_COLLECTION, [item.id], want, namespace=ns)

    if stores.extractor is not None:
        unlinked = [i for i in present if i.memory_type == MemoryType.SEMANTIC
                    and i.id not in graph_ids]
        for item in unlinked:
            try:
                entities, relations = stores.extractor(item)
            except Exception as exc:  # one text the analysis refuses: reported, skipped
                stores.note_failure(ns, item.id, exc)
                continue
            if entities or relations:
                report.graph_relinked.append(item.id)
                if not dry:
                    stores.graph.add_mentions(ns, item.id, entities, relations)

    indexer = stores.indexer(MemoryType.PERCEPTUAL)
    if perceptual_items and indexer is None:
        for item in perceptual_items:
            report.skipped[item.id] = "perceptual memory is not configured in this process"
    elif perceptual_items and indexer is not None:
        have = set().union(*media.values()) if media else set()
        lacking = [i for i in perceptual_items if i.id not in have]
        if dry or not lacking:
            report.reindexed += [i.id for i in lacking]
            return
        indexer.upsert(lacking)  # re-encodes from the source where it can
        now = set().union(*(_ids_or_empty(stores, c, ns) for c in media))
        for item in lacking:
            if item.id in now:
                report.reindexed.append(item.id)
            else:
                report.skipped[item.id] = ("perceptual vector could not be re-encoded (source "
                                           "given as bytes, moved or changed); add it again")


# --- reindex --------------------------------------------------------------------------
def reindex(
    manager: MemoryManager,
    *,
    namespace: str | None = None,
    dry_run: bool = False,
    progress: bool = False,
) -> ReindexReport:
    """Rebuild the vector store and the graph from the records alone (see module doc).
    ``progress`` shows a progress bar per namespace."""
    stores = manager.stores
    report = ReindexReport(dry_run=dry_run, namespaces=_namespaces(stores, namespace))
    if not dry_run:
        # Settle pending rows first so a later replay does not redo (older) work.
        report.outbox_replayed = stores.apply_outbox()
    for ns in report.namespaces:
        _reindex_namespace(stores, ns, report, progress)
    if not dry_run and namespace is None:
        # Every memory's keyword vector now comes from this analyzer.
        from hello_memory.stores.lexical_version import record_lexical_version

        record_lexical_version(stores.records)
    log.info("reindex%s: %s", " (dry run)" if dry_run else "", report.as_dict())
    return report


def _reindex_namespace(stores: Stores, ns: str, report: ReindexReport, progress: bool) -> None:
    dry = report.dry_run
    vector_ids = stores.vectors.ids(MEMORY_COLLECTION, namespace=ns)
    items = stores.records.memories.list_items(ns, ItemFilter(status=None))
    report.records += len(items)
    text_items = [i for i in items if i.memory_type != MemoryType.PERCEPTUAL]
    perceptual_items = [i for i in items if i.memory_type == MemoryType.PERCEPTUAL]
    orphans = sorted(vector_ids - {i.id for i in text_items})
    report.orphan_vectors += len(orphans)
    report.vectors_written += len(text_items)
    semantic = [i for i in text_items if i.memory_type == MemoryType.SEMANTIC]
    report.graph_memories += len(semantic)
    report.perceptual += len(perceptual_items)
    indexer = stores.indexer(MemoryType.PERCEPTUAL)
    if indexer is None:
        for item in perceptual_items:
            report.skipped[item.id] = "perceptual memory is not configured in this process"
    if dry:
        return
    # The graph is derived from semantic records only: clear it, then re-extract.
    stores.graph.clear(ns)
    with _progress(len(text_items), f"reindex {ns}", progress) as bar:
        for chunk in _chunks(text_items):
            stores.index(chunk)
            bar.update(len(chunk))
    if orphans:
        stores.vectors.delete(MEMORY_COLLECTION, orphans, namespace=ns)
    for collection in _perceptual_collections(stores):
        lost = sorted(_ids_or_empty(stores, collection, ns) - {i.id for i in perceptual_items})
        report.orphan_vectors += len(lost)
        if lost:
            stores.vectors.delete(collection, lost, namespace=ns)
    if perceptual_items and indexer is not None:
        indexer.upsert(perceptual_items)


# --- optimize -------------------------------------------------------------------------
def optimize(manager: MemoryManager) -> OptimizeReport:
    """Build the search index of every collection hello-memory writes (memories,
    document chunks, media) where the vector backend builds it only on request: the
    embedded Edge engine's HNSW segments (``vector.hnsw``). Blocks until done; searches
    are exact before and approximate (``vector.hnsw.ef``) after, for namespaces larger
    than ``full_scan_threshold_kb``. Collections never created are skipped."""
    from hello_memory.rag.indexing import CHUNK_COLLECTION

    stores = manager.stores
    stores.apply_outbox()  # index what is pending first, so it lands in the graph too
    report = OptimizeReport()
    optional = [CHUNK_COLLECTION, *_perceptual_collections(stores)]
    for collection in [MEMORY_COLLECTION, *optional]:
        started = time.perf_counter()
        try:
            report.collections[collection] = stores.vectors.optimize(collection)
        except CollectionNotFoundError:
            if collection not in optional:
                raise
            continue  # a knowledge base or modality this store never used
        report.seconds[collection] = round(time.perf_counter() - started, 3)
    return report
