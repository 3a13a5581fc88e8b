"""The three stores and the text embedder, opened together, with the write path of
ARCHITECTURE decision 1: records commit first (with outbox rows), then the derived
indexes (Qdrant, graph) are updated idempotently and the outbox rows marked applied.

A crash between the commit and the index update leaves outbox rows pending; they are
replayed by :meth:`Stores.apply_outbox`, which :meth:`Stores.open` runs. Replaying is
safe: vector upserts are keyed by the memory's UUID and graph links are upserts.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from hello_memory.embedding.base import Embedder
from hello_memory.errors import (
    HelloMemoryError,
    IndexWorkError,
    InsufficientStorageError,
    InvalidInputError,
    StoreError,
)
from hello_memory.text.bm25 import BM25_VECTOR, LexicalEncoder
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.records import OutboxEntry, RecordStore
from hello_memory.stores.vector.base import CollectionSpec, VectorStore
from hello_memory.types import Entity, MemoryItem, MemoryType, Relation, VectorPoint
from hello_memory.validation import validate_batch, validate_item

log = logging.getLogger(__name__)

__all__ = [
    "MEMORY_COLLECTION", "Extractor", "IndexFailure", "Indexer", "Stores", "memory_payload",
]

MEMORY_COLLECTION = "memories"
DENSE = "dense"

# Given a memory, the entities and relations it mentions (spaCy or rules: the memory
# types plug theirs in). None means the graph is not fed.
Extractor = Callable[[MemoryItem], tuple[Sequence[Entity], Sequence[Relation]]]

@dataclass
class IndexFailure:
    """A memory whose index work failed (its outbox rows stay pending): what
    ``reconcile`` reports, and ``jobs reconcile --retry / --drop-failed`` act on."""

    namespace: str
    memory_id: str
    error: str
    attempts: int = 1

    def as_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "memory_id": self.memory_id,
                "error": self.error, "attempts": self.attempts}


def _typed(exc: BaseException, memory_id: str) -> StoreError:
    """Any failure of index work as a StoreError (an untyped ValueError from an
    analysis library must not escape open() or reconcile)."""
    if isinstance(exc, StoreError):
        return exc
    return IndexWorkError(f"index work for memory {memory_id} failed: "
                          f"{type(exc).__name__}: {exc}")


class Indexer(Protocol):
    """Index work for a memory type whose vectors live outside the text collection."""

    def open(self) -> None: ...

    def upsert(self, items: Sequence[MemoryItem]) -> None: ...

    def delete(self, namespace: str, ids: Sequence[str]) -> None: ...


def _group_by_namespace(entries: Sequence[OutboxEntry]) -> dict[str, list[OutboxEntry]]:
    out: dict[str, list[OutboxEntry]] = {}
    for e in entries:
        out.setdefault(e.namespace, []).append(e)
    return out


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
        self._indexers: dict[MemoryType, Indexer] = {}
        self.lexical = LexicalEncoder()
        self._replay_deferred = False
        # memory id -> its failing index work (this process's view; every open replays)
        self.index_failures: dict[str, IndexFailure] = {}
        self._disk_path: str | None = None
        self._min_free_bytes = 0

    def guard_disk(self, path: str | os.PathLike[str], min_free_bytes: int) -> None:
        """Refuse writes (:class:`InsufficientStorageError`) while the file system of
        ``path`` has less than ``min_free_bytes`` free (``storage.min_free_bytes``)."""
        self._disk_path = os.fspath(path)
        self._min_free_bytes = int(min_free_bytes)

    def check_disk(self, incoming: int = 0) -> None:
        """Raise before a write of about ``incoming`` bytes would leave less than the
        configured free space (the embedded engines crash on a full disk)."""
        if self._disk_path is None or self._min_free_bytes <= 0:
            return
        probe = self._disk_path
        while probe and not os.path.exists(probe):
            parent = os.path.dirname(probe)
            if parent == probe:
                break
            probe = parent
        try:
            free = shutil.disk_usage(probe or ".").free
        except OSError:
            return
        if free - incoming < self._min_free_bytes:
            raise InsufficientStorageError(
                f"only {free:,} bytes free on the data directory's disk, less than "
                f"storage.min_free_bytes ({self._min_free_bytes:,}): the write was refused "
                "and nothing was written; free space (the store reopens once there is)")

    def open(self) -> None:
        """Open every store, make sure the memory collection matches the embedder's
        dimension, and replay index work a crash left pending."""
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
            # Graph links need the extractor, which a MemoryManager installs right after
            # opening: replaying now would mark semantic rows applied without links.
            self._replay_deferred = True
        else:
            self._replay()

    def install_extractor(self, extractor: Extractor) -> None:
        """Set the function that turns an item into graph mentions, then run the replay
        that :meth:`open` left for it."""
        self.extractor = extractor
        self._ensure_replayed()

    def _ensure_replayed(self) -> None:
        if self._replay_deferred:
            self._replay_deferred = False
            self._replay()

    def _replay(self) -> None:
        replayed = self.apply_outbox()
        if replayed:
            log.info("replayed %d pending index operations", replayed)

    def close(self) -> None:
        for store in (self.graph, self.vectors, self.records):
            store.close()

    def __enter__(self) -> Stores:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # writes ------------------------------------------------------------------------
    def add(self, items: Sequence[MemoryItem],
            vectors: npt.NDArray[np.float32] | None = None) -> list[MemoryItem]:
        """Validate, embed (one batch), commit records (one transaction), index.
        Invalid input or an embedding failure writes nothing. ``vectors``: the items'
        embeddings when the caller already has them (the add path's duplicate check)."""
        validate_batch(len(items))
        for item in items:
            validate_item(item)
        if not items:
            return []
        # a generous estimate: text, metadata, vectors and index overhead
        self.check_disk(sum(8 * len(i.content) + 4096 for i in items))
        self._ensure_replayed()
        if vectors is None or len(vectors) != len(items):
            vectors = self.embedder.embed([i.content for i in items])
        seqs = self.records.memories.add_items(items)
        try:
            self._index(items, vectors)
        except StoreError:
            raise  # a backend failed: the write is durable and queued (reconcile)
        except Exception as exc:
            # The input itself cannot be indexed (an analysis library refused it):
            # take the records back out rather than keep a row that fails every replay.
            by_ns: dict[str, list[str]] = {}
            for item in items:
                by_ns.setdefault(item.namespace, []).append(item.id)
            for ns, ids in by_ns.items():
                self.records.memories.delete_items(ns, ids)
            self.apply_outbox()
            raise InvalidInputError(f"this memory cannot be indexed ({type(exc).__name__}: "
                                    f"{exc}); nothing was stored") from exc
        self.records.outbox.mark_applied(seqs)
        return list(items)

    def _index(self, items: Sequence[MemoryItem], vectors: npt.NDArray[np.float32]) -> None:
        points = []
        for item, vector in zip(items, vectors, strict=True):
            lexical = self.lexical.document(item.content)
            points.append(VectorPoint(id=item.id, vectors={DENSE: vector.tolist()},
                                      payload=memory_payload(item),
                                      sparse={BM25_VECTOR: lexical} if lexical else {}))
        self.vectors.upsert(MEMORY_COLLECTION, points)
        if self.extractor is not None:
            for item in items:
                entities, relations = self.extractor(item)
                if entities or relations:
                    self.graph.add_mentions(item.namespace, item.id, entities, relations)

    def index(self, items: Sequence[MemoryItem]) -> None:
        """Embed ``items`` (one batch) and upsert their text-collection vectors and graph
        links from the records as given; records are not touched (reconcile, reindex).
        A backend failure raises (StoreError); a memory whose own index work fails
        (an analysis library refuses its text) is skipped and recorded in
        :attr:`index_failures`, so one bad row never stops a reconcile or reindex."""
        if not items:
            return
        try:
            self._index(items, self.embedder.embed([i.content for i in items]))
            for item in items:
                self.index_failures.pop(item.id, None)
            return
        except StoreError:
            raise
        except Exception as exc:
            if len(items) == 1:
                self._failed(items[0].namespace, items[0].id, _typed(exc, items[0].id))
                return
        for item in items:  # isolate the one that fails; the others are indexed
            try:
                self._index([item], self.embedder.embed([item.content]))
                self.index_failures.pop(item.id, None)
            except StoreError:
                raise
            except Exception as exc:
                self._failed(item.namespace, item.id, _typed(exc, item.id))

    def update(self, namespace: str, memory_id: str, **changes: Any) -> MemoryItem:
        """Change a record, then its index: new content is re-embedded and re-extracted;
        other fields only rewrite the vector payload."""
        content = changes.get("content")
        self.check_disk(8 * len(content) + 4096 if isinstance(content, str) else 4096)
        item = self.records.memories.update_item(namespace, memory_id, **changes)
        self.apply_outbox(raise_for={memory_id})
        return item

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        """Delete records with their vectors and graph links; returns how many."""
        n = self.records.memories.delete_items(namespace, ids)
        if n:
            self.apply_outbox(raise_for=set(ids))
        return n

    def register_indexer(self, memory_type: MemoryType, indexer: Indexer) -> None:
        """Route index work of ``memory_type`` (e.g. perceptual items, whose vectors live
        in per-modality collections) to ``indexer`` instead of the text collection."""
        self._indexers[memory_type] = indexer

    def indexer(self, memory_type: MemoryType) -> Indexer | None:
        return self._indexers.get(memory_type)

    def apply_outbox(self, batch: int = 256, *, raise_for: Collection[str] = ()) -> int:
        """Apply pending outbox rows to Qdrant and the graph; returns how many.
        Safe to repeat: every step is an idempotent upsert or delete.

        A row whose index work fails stays pending (``reconcile`` retries it) and does
        not hold up the others: one memory the graph server refuses must not block
        writes to every other memory and namespace. The failure is raised only when it
        concerns a memory in ``raise_for`` (the caller's own write); otherwise logged."""
        done, after = 0, 0
        failure: HelloMemoryError | None = None
        while True:
            pending = self.records.outbox.pending_outbox(limit=batch, after=after)
            if not pending:
                break
            after = pending[-1].seq
            applied: list[int] = []
            for ns, entries in _group_by_namespace(pending).items():
                try:
                    self._apply(ns, entries)
                    applied.extend(e.seq for e in entries)
                except Exception:  # any error: a poison row must not stop open()
                    for entry in entries:  # isolate the failing memory
                        try:
                            self._apply(ns, [entry])
                            applied.append(entry.seq)
                        except Exception as exc:
                            typed = _typed(exc, entry.memory_id)
                            self._failed(ns, entry.memory_id, typed)
                            if entry.memory_id in raise_for and failure is None:
                                failure = typed
            for seq_entry in pending:
                if seq_entry.seq in applied:
                    self.index_failures.pop(seq_entry.memory_id, None)
            self.records.outbox.mark_applied(applied)
            done += len(applied)
        if failure is not None:
            raise failure
        return done

    def _failed(self, namespace: str, memory_id: str, exc: BaseException) -> None:
        log.warning("index work for memory %s in %r left pending: %s", memory_id,
                    namespace, exc)
        known = self.index_failures.get(memory_id)
        attempts = known.attempts + 1 if known else 1
        self.index_failures[memory_id] = IndexFailure(namespace, memory_id, str(exc),
                                                      attempts)

    def note_failure(self, namespace: str, memory_id: str, exc: BaseException) -> None:
        """Record that index work for ``memory_id`` failed (listed by ``reconcile``)."""
        self._failed(namespace, memory_id, _typed(exc, memory_id))

    def retry_failed(self, memory_ids: Sequence[str]) -> dict[str, str | None]:
        """Retry the index work of these failing memories now: id -> None when it
        succeeded, else its error (it stays pending)."""
        out: dict[str, str | None] = {}
        for memory_id in memory_ids:
            known = self.index_failures.get(memory_id)
            ns = known.namespace if known else None
            item = self.records.memories.get_items(ns, [memory_id]) if ns else []
            try:
                if item:
                    self._index(item, self.embedder.embed([item[0].content]))
                self.apply_outbox(raise_for={memory_id})
                self.index_failures.pop(memory_id, None)
                out[memory_id] = None
            except Exception as exc:
                typed = _typed(exc, memory_id)
                if ns:
                    self._failed(ns, memory_id, typed)
                out[memory_id] = str(typed)
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
            self.records.memories.delete_items(known.namespace, [memory_id])
            dropped.append(memory_id)
            self.index_failures.pop(memory_id, None)
        if dropped:
            self.apply_outbox()
        return dropped

    def _apply(self, namespace: str, entries: list[OutboxEntry]) -> None:
        deleted = [e.memory_id for e in entries if e.op == "delete"]
        if deleted:
            self.vectors.delete(MEMORY_COLLECTION, deleted, namespace=namespace)
            for memory_id in deleted:
                self.graph.remove_memory(namespace, memory_id)
            for other in self._indexers.values():
                other.delete(namespace, deleted)
        reembed = list(dict.fromkeys(e.memory_id for e in entries if e.op == "upsert"))
        payload_only = [e.memory_id for e in entries if e.op == "payload"
                        and e.memory_id not in reembed]
        items = self.records.memories.get_items(namespace,
                                                reembed + list(dict.fromkeys(payload_only)))
        by_type: dict[MemoryType, list[MemoryItem]] = {}
        for item in items:
            by_type.setdefault(item.memory_type, []).append(item)
        for mtype, group in by_type.items():
            indexer = self._indexers.get(mtype)
            if indexer is not None:
                indexer.upsert(group)
                continue
            fresh = [i for i in group if i.id in reembed]
            for item in fresh:  # content changed: drop stale graph links first
                self.graph.remove_memory(namespace, item.id)
            if fresh:
                self._index(fresh, self.embedder.embed([i.content for i in fresh]))
            for item in group:
                if item.id not in reembed:
                    self.vectors.set_payload(MEMORY_COLLECTION, [item.id], memory_payload(item),
                                             namespace=namespace)

