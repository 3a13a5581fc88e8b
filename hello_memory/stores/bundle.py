"""The three stores and the text embedder, opened together, with the write path of
ARCHITECTURE decision 1: records commit first (with their outbox rows), then the
derived indexes are brought in line by the one index-maintenance engine
(:mod:`hello_memory.stores.indexing`): the write applies only the rows its own
transaction wrote, each indexer converging to the records' current state under
per-key locks; the rest of the backlog is replayed at :meth:`Stores.open` and by
``reconcile``.

The "memory" kind's indexer lives here (:class:`MemoryIndexer`: the ``memories``
collection and the graph); perceptual memory registers the "media" kind, the RAG chunk
index the "chunk" kind.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from hello_memory.config import LimitsSettings
from hello_memory.embedding.base import Embedder
from hello_memory.errors import (
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from hello_memory.stores.disk import DiskGuard
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.indexing import (
    ApplyResult,
    IndexEngine,
    Indexer,
    IndexFailure,
)
from hello_memory.stores.records import OutboxEntry, RecordStore
from hello_memory.stores.records.memories import WriteConflictError
from hello_memory.stores.records.outbox import kind_of
from hello_memory.stores.vector.base import CollectionSpec, VectorStore
from hello_memory.text.bm25 import BM25_VECTOR, LexicalEncoder
from hello_memory.types import Entity, MemoryItem, MemoryType, Relation, VectorPoint
from hello_memory.validation import validate_batch, validate_item

log = logging.getLogger(__name__)

__all__ = [
    "MEMORY_COLLECTION", "Extractor", "IndexFailure", "Indexer", "MemoryIndexer",
    "TypeIndexer", "Stores", "memory_payload",
]

MEMORY_COLLECTION = "memories"
DENSE = "dense"

# Given a memory, the entities and relations it mentions (spaCy or rules: the memory
# types plug theirs in). None means the graph is not fed.
Extractor = Callable[[MemoryItem], tuple[Sequence[Entity], Sequence[Relation]]]

class TypeIndexer(Indexer, Protocol):
    """A memory type whose vectors live outside the text collection (perceptual
    memory): its collections are made at open, its rows are of its own kind, and
    reindex hands it the records to re-encode."""

    def open(self) -> None: ...

    def attach(self, engine: IndexEngine) -> None: ...

    def upsert(self, items: Sequence[MemoryItem]) -> None: ...


PAYLOAD_INDEXES: Mapping[str, Any] = {
    "memory_type": "keyword", "status": "keyword", "user_id": "keyword",
    "agent_id": "keyword", "session_id": "keyword", "modality": "keyword",
    "event_time": "datetime", "importance": "float",
}


def memory_payload(item: MemoryItem) -> dict[str, Any]:
    """The filterable fields a vector point carries (the record stays the truth)."""
    return {
        "namespace": item.namespace,
        "memory_type": item.memory_type.value,
        "status": item.status.value,
        "modality": item.modality.value,
        "user_id": item.user_id,
        "agent_id": item.agent_id,
        "session_id": item.session_id,
        "event_time": item.event_time.isoformat(),
        "importance": item.importance,
    }


class MemoryIndexer:
    """The "memory" kind: a memory's dense and BM25 vectors in the ``memories``
    collection and its graph links, derived from its CURRENT record (ARCHITECTURE
    decision 1): gone → vector and links deleted; ``add`` / ``upsert`` rows →
    (re-)embedded and (re-)extracted (``upsert``: the old links dropped first, the
    content or type changed); ``payload`` rows → the filter fields rewritten."""

    def __init__(self, stores: Stores) -> None:
        self._stores = stores

    def apply(self, namespace: str, entries: Sequence[OutboxEntry],
              prepared: Mapping[str, Any]) -> None:
        st = self._stores
        ops: dict[str, set[str]] = {}
        for e in entries:
            ops.setdefault(e.item_id, set()).add(e.op)
        # a perceptual memory's vectors live elsewhere (the "media" kind): none here
        items = {i.id: i for i in st.records.memories.get_items(namespace, list(ops))
                 if kind_of(i.memory_type) == "memory"}
        gone = [i for i in ops if i not in items]
        if gone:
            st.vectors.delete(MEMORY_COLLECTION, gone, namespace=namespace)
            for memory_id in gone:
                st.graph.remove_memory(namespace, memory_id)
        fresh = [items[i] for i in ops if i in items and ops[i] - {"payload"}]
        if fresh:
            for item in fresh:
                if "upsert" in ops[item.id]:  # content or type changed: old links go
                    st.graph.remove_memory(namespace, item.id)
            st.index_now(fresh, st.vectors_for(fresh, prepared))
        for memory_id in ops:
            if memory_id in items and not ops[memory_id] - {"payload"}:
                st.vectors.set_payload(MEMORY_COLLECTION, [memory_id],
                                       memory_payload(items[memory_id]), namespace=namespace)


class Stores:
    """Built stores plus embedder; no settings are read here (see factory.py)."""

    def __init__(
        self,
        records: RecordStore,
        vectors: VectorStore,
        graph: GraphStore,
        embedder: Embedder,
        *,
        extractor: Extractor | None = None,
    ) -> None:
        self.records = records
        self.vectors = vectors
        self.graph = graph
        self.embedder = embedder
        self.extractor = extractor
        self._indexers: dict[MemoryType, TypeIndexer] = {}
        self.lexical = LexicalEncoder()
        # The one apply loop over the one outbox; the "memory" kind is registered once
        # the graph can be fed (see open) or at the first write.
        # On PostgreSQL its per-key locks are also taken in the database, for several
        # processes on one database (docs/ARCHITECTURE.md, "The write path").
        self.engine = IndexEngine(lambda: self.records.outbox,
                                  shared_url=lambda: self.records.engine.url)
        self._memory_indexer = MemoryIndexer(self)
        self._memory_deferred = False
        # the one disk guard (hello_memory/stores/disk.py), inactive until guard_disk
        self.disk = DiskGuard()

    @property
    def limits(self) -> LimitsSettings:
        """The ``limits`` settings these stores were opened with (held by the record
        store); the parts built over the stores check input against them."""
        return self.records.limits

    @property
    def index_failures(self) -> dict[str, IndexFailure]:
        """Item id -> its failing index work (this process's view; every open replays)."""
        return self.engine.failures

    def guard_disk(self, path: str | os.PathLike[str], min_free_bytes: int) -> None:
        """Refuse writes (:class:`InsufficientStorageError`) while the file system of
        ``path`` has less than ``min_free_bytes`` free (``storage.min_free_bytes``):
        checked before each write starts (:meth:`check_disk`) and enforced by the
        record store for every write that queues index work (hello_memory/stores/
        disk.py), so no route or job can write under the floor."""
        self.disk.configure(path, min_free_bytes)
        self.disk.watch(self.records)

    def check_disk(self, incoming: int = 0) -> None:
        """Raise before a write of about ``incoming`` bytes would leave less than the
        configured free space (the embedded engines crash on a full disk)."""
        self.disk.check(incoming)

    def open(self) -> None:
        """Open every store, make sure the memory collection matches the embedder's
        dimension, and replay the index work a crash left pending (the backlog)."""
        try:
            self.records.open()
            self.vectors.open()
            self.graph.open()
            self.vectors.ensure_collection(
                CollectionSpec(name=MEMORY_COLLECTION, dense={DENSE: self.embedder.dimension},
                               sparse=(BM25_VECTOR,), payload_indexes=PAYLOAD_INDEXES))
            for indexer in self._indexers.values():  # their collections, before replay
                indexer.open()
        except BaseException:
            self.close()  # release locks (embedded Qdrant) and connections
            raise
        if self.extractor is None:
            # Graph links need the extractor (``MemoryManager.open`` passes its
            # ``GraphLinks``): without one, replaying "memory" rows now would mark them
            # applied without links, so that kind waits for the first write,
            # apply_outbox or requeue (a manager built on these stores installs its
            # links before its first write; docs/ARCHITECTURE.md, "The write path").
            self._memory_deferred = True
        else:
            self.engine.register("memory", self._memory_indexer)
        self.engine.replay()  # every registered kind

    def install_extractor(self, extractor: Extractor) -> None:
        """Set the function that turns an item into graph mentions. Replays nothing:
        the "memory" rows :meth:`open` left wait for the next write, :meth:`apply_outbox`
        or :meth:`requeue`, which run them with it in place."""
        self.extractor = extractor

    def replay_deferred(self) -> int:
        """Register the "memory" kind and replay its rows if :meth:`open` left them for
        the extractor (every write, :meth:`apply_outbox` and :meth:`requeue` run this
        first; a manager built on these stores, once its links are installed); returns
        how many rows were applied (0: none was left)."""
        if not self._memory_deferred:
            return 0
        self._memory_deferred = False
        self.engine.register("memory", self._memory_indexer)
        return self.engine.replay(["memory"]).applied

    def close(self) -> None:
        self.engine.close()
        for store in (self.graph, self.vectors, self.records):
            store.close()

    def __enter__(self) -> Stores:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # writes ------------------------------------------------------------------------
    def add(self, items: Sequence[MemoryItem],
            vectors: npt.NDArray[np.float32] | None = None, *,
            keyed: bool = False) -> list[MemoryItem]:
        """Validate, embed (one batch), commit records (one transaction), index.
        Invalid input or an embedding failure writes nothing. ``vectors``: the items'
        embeddings when the caller already has them (the add path's duplicate check).
        ``keyed``: the idempotent add's unique key (``MemoryRepository.add_items``;
        ``DuplicateKeyError`` when an identical add committed first)."""
        validate_batch(len(items), self.limits)
        for item in items:
            validate_item(item, self.limits)
        if not items:
            return []
        # a generous estimate: text, metadata, vectors and index overhead
        self.check_disk(sum(8 * len(i.content) + 4096 for i in items))
        self.replay_deferred()
        if vectors is None or len(vectors) != len(items):
            vectors = self.embedder.embed([i.content for i in items])
        rows = self.records.memories.add_items(items, keyed=keyed)
        result = self.engine.apply_entries(rows, {i.id: (i.content, v)
                                                  for i, v in zip(items, vectors, strict=True)})
        raw = next(iter(result.failed.values()), None)
        if raw is None:
            return list(items)
        if isinstance(raw, StoreError):
            raise raw  # a backend failed: the write is durable and queued (reconcile)
        # The input itself cannot be indexed (an analysis library refused it): take the
        # records back out rather than keep a row that fails every replay.
        by_ns: dict[str, list[str]] = {}
        for item in items:
            by_ns.setdefault(item.namespace, []).append(item.id)
        for ns, ids in by_ns.items():
            self.engine.apply_entries(self.records.memories.delete_queued(ns, ids)[1])
            self.engine.apply(self.records.outbox.pending_seqs(ns, ids))
        raise InvalidInputError(f"this memory cannot be indexed ({type(raw).__name__}: "
                                f"{raw}); nothing was stored") from raw

    def vectors_for(self, items: Sequence[MemoryItem], prepared: Mapping[str, Any]
                    ) -> list[list[float]]:
        """Dense vectors of ``items``: the write path's own where its text is still the
        record's, the rest embedded now (one batch)."""
        out: dict[str, list[float]] = {}
        for item in items:
            ready = prepared.get(item.id)
            if ready is not None and ready[0] == item.content:
                out[item.id] = np.asarray(ready[1], dtype=np.float32).tolist()
        todo = [i for i in items if i.id not in out]
        if todo:
            for item, vec in zip(todo, self.embedder.embed([i.content for i in todo]),
                                 strict=True):
                out[item.id] = vec.tolist()
        return [out[i.id] for i in items]

    def index_now(self, items: Sequence[MemoryItem], vectors: Sequence[list[float]]) -> None:
        """Upsert the vectors and graph links of ``items`` as given (the "memory"
        indexer's work; callers hold the items' key locks)."""
        points = []
        for item, vector in zip(items, vectors, strict=True):
            lexical = self.lexical.document(item.content)
            points.append(VectorPoint(id=item.id, vectors={DENSE: vector},
                                      payload=memory_payload(item),
                                      sparse={BM25_VECTOR: lexical} if lexical else {}))
        self.vectors.upsert(MEMORY_COLLECTION, points)
        if self.extractor is not None:
            for item in items:
                entities, relations = self.extractor(item)
                if entities or relations:
                    self.graph.add_mentions(item.namespace, item.id, entities, relations)

    def update(self, namespace: str, memory_id: str, *, expect_version: int | None = None,
               **changes: Any) -> MemoryItem:
        """Change a record, then its index: new content is re-embedded and re-extracted;
        other fields only rewrite the vector payload. ``expect_version``: write only
        while the record is still that version (else ``WriteConflictError``)."""
        content = changes.get("content")
        self.check_disk(8 * len(content) + 4096 if isinstance(content, str) else 4096)
        item, rows = self.records.memories.update_queued(
            namespace, memory_id, expect_version=expect_version, **changes)
        self._apply_own(rows, {memory_id})
        return item

    def update_many(self, namespace: str, ids: Sequence[str], *,
                    expect: Mapping[str, int] | None = None, **changes: Any
                    ) -> list[MemoryItem]:
        """Change the same fields of several records (forget and restore: a status),
        one transaction each, then apply their own rows together. With ``expect``
        (id -> the version the caller read) a record changed or deleted since that
        version is left alone (compare-and-swap) and not among the items returned."""
        return self.update_each(namespace, {memory_id: changes for memory_id in ids},
                                expect=expect)

    def update_each(self, namespace: str, changes: Mapping[str, Mapping[str, Any]], *,
                    expect: Mapping[str, int] | None = None) -> list[MemoryItem]:
        """:meth:`update_many` with each record's own changes (memory id -> its
        changes; supersession's validity links): one transaction per record, then
        their index work applied together, one read of the records and one outbox
        commit for them all instead of one per record (issue 27)."""
        items, rows = [], []
        for memory_id, change in changes.items():
            try:
                item, queued = self.records.memories.update_queued(
                    namespace, memory_id,
                    expect_version=None if expect is None else expect[memory_id], **change)
            except (WriteConflictError, NotFoundError):
                if expect is None:
                    raise
                continue
            items.append(item)
            rows += queued
        self._apply_own(rows, {i.id for i in items})
        return items

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        """Delete records with their vectors and graph links; returns how many."""
        n, rows = self.records.memories.delete_queued(namespace, ids)
        if n:
            self._apply_own(rows, set(ids))
        return n

    def delete_unchanged(self, namespace: str, versions: Mapping[str, int]) -> list[str]:
        """Delete the records of ``versions`` (id -> the version the caller read) that
        are still at that version, with their vectors and graph links (a
        compare-and-swap: one updated since is kept); returns the ids deleted."""
        n, rows = self.records.memories.delete_queued(namespace, list(versions),
                                                      expect=versions)
        gone = list(dict.fromkeys(e.item_id for e in rows))
        if n:
            self._apply_own(rows, set(gone))
        return gone

    def merge(self, namespace: str, *, add: MemoryItem | None = None,
              target: tuple[str, int, Mapping[str, Any]] | None = None,
              remove: Mapping[str, int]) -> MemoryItem | None:
        """One merge of ``consolidate``, all or nothing
        (``MemoryRepository.merge_queued``: ``WriteConflictError`` when a memory
        changed since the version read), then its index work."""
        self.check_disk(8 * len(add.content) + 4096 if add is not None else 4096)
        made, rows = self.records.memories.merge_queued(namespace, add=add, target=target,
                                                        remove=remove)
        self._apply_own(rows, {e.item_id for e in rows})
        return made

    def _apply_own(self, rows: Sequence[OutboxEntry], keys: set[str]) -> ApplyResult:
        """Apply the caller's own rows; a failure of one of its items is raised (the
        write is durable, its row pending)."""
        self.replay_deferred()
        result = self.engine.apply_entries(rows)
        failure = self.engine.first_failure(result, keys)
        if failure is not None:
            raise failure
        return result

    def register_indexer(self, memory_type: MemoryType, indexer: TypeIndexer) -> None:
        """Route index work of ``memory_type`` (perceptual items, whose vectors live in
        per-modality collections) to ``indexer``: its rows are of their own kind
        ("media"), applied by the same engine."""
        self._indexers[memory_type] = indexer
        indexer.attach(self.engine)

    def indexer(self, memory_type: MemoryType) -> TypeIndexer | None:
        return self._indexers.get(memory_type)

    def apply_outbox(self) -> int:
        """Replay the whole backlog (every pending row of every registered kind);
        returns how many rows were applied. Writes apply their own rows; this is for
        open, ``reconcile`` and callers that wrote records directly."""
        return self.replay_deferred() + self.engine.replay().applied

    def note_failure(self, namespace: str, memory_id: str, exc: BaseException) -> None:
        """Record that index work for ``memory_id`` failed (listed by ``reconcile``)."""
        self.engine.note_failure(namespace, memory_id, exc)

    def requeue(self, kind: str, op: str, namespace: str, ids: Sequence[str]) -> ApplyResult:
        """Queue ``op`` rows for ``ids`` and apply them now (reconcile's repairs: the
        same converging apply as a write, crash-safe through the outbox)."""
        if not ids:
            return ApplyResult()
        self.replay_deferred()
        return self.engine.apply(self.records.outbox.enqueue(kind, op, namespace, ids))

    def retry_failed(self, memory_ids: Sequence[str]) -> dict[str, str | None]:
        """Retry the index work of these failing items now: id -> None when it
        succeeded, else its error (it stays pending)."""
        out: dict[str, str | None] = {}
        for memory_id in memory_ids:
            known = self.index_failures.get(memory_id)
            if known is None:
                continue
            seqs = self.records.outbox.pending_seqs(known.namespace, [memory_id])
            if not seqs:
                seqs = self.records.outbox.enqueue(known.kind, "upsert", known.namespace,
                                                   [memory_id])
            result = self.engine.apply(seqs)
            failure = self.engine.first_failure(result, {memory_id})
            out[memory_id] = None if failure is None else str(failure)
            if failure is None:
                self.index_failures.pop(memory_id, None)
        return out

    def drop_failed(self, memory_ids: Sequence[str]) -> list[str]:
        """Delete memories whose index work keeps failing (record, pending rows,
        vectors, graph links): the operator's way out of a poison row. Returns the ids
        deleted; an id that is not failing is left alone."""
        dropped: list[str] = []
        for memory_id in memory_ids:
            known = self.index_failures.get(memory_id)
            if known is None:
                continue
            self.records.memories.delete_queued(known.namespace, [memory_id])
            # every pending row of it now converges to "gone": vectors and links deleted
            result = self.engine.apply(self.records.outbox.pending_seqs(known.namespace,
                                                                        [memory_id]))
            failure = self.engine.first_failure(result, {memory_id})
            if failure is not None:
                log.warning("dropping %s: %s", memory_id, failure)
                continue
            dropped.append(memory_id)
            self.index_failures.pop(memory_id, None)
        return dropped

    def index(self, items: Sequence[MemoryItem]) -> None:
        """Re-embed ``items`` and upsert their text-collection vectors and graph links
        from their current records, through the engine (``reindex``). A backend
        failure raises (StoreError); an item whose own index work fails is skipped and
        listed in :attr:`index_failures` (its row stays pending)."""
        by_ns: dict[str, list[str]] = {}
        for item in items:
            if kind_of(item.memory_type) == "memory":
                by_ns.setdefault(item.namespace, []).append(item.id)
        for ns, ids in by_ns.items():
            result = self.requeue("memory", "add", ns, ids)
            for raw in result.failed.values():
                if isinstance(raw, StoreError):
                    raise raw  # a backend: the caller's job fails, the rows stay pending
