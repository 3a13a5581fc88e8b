"""The three stores and the text embedder, opened together, with the write path of
ARCHITECTURE decision 1: records commit first (with outbox rows), then the derived
indexes (Qdrant, graph) are updated idempotently and the outbox rows marked applied.

A crash between the commit and the index update leaves outbox rows pending; they are
replayed by :meth:`Stores.apply_outbox`, which :meth:`Stores.open` runs. Replaying is
safe: vector upserts are keyed by the memory's UUID and graph links are upserts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.embedding.base import Embedder
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.records import RecordStore
from hello_memory.stores.vector.base import CollectionSpec, VectorStore
from hello_memory.types import Entity, MemoryItem, Relation
from hello_memory.validation import require_namespace, validate_content, validate_item

log = logging.getLogger(__name__)

__all__ = ["MEMORY_COLLECTION", "Extractor", "StoredHit", "Stores", "memory_payload"]

MEMORY_COLLECTION = "memories"
DENSE = "dense"

# Given a memory, the entities and relations it mentions (spaCy or rules: the memory
# types plug theirs in). None means the graph is not fed.
Extractor = Callable[[MemoryItem], tuple[Sequence[Entity], Sequence[Relation]]]

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


@dataclass(frozen=True)
class StoredHit:
    item: MemoryItem
    similarity: float


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
        self._opened = False

    def open(self) -> None:
        """Open every store, make sure the memory collection matches the embedder's
        dimension, and replay index work a crash left pending."""
        try:
            self.records.open()
            self.vectors.open()
            self.graph.open()
            self.vectors.ensure_collection(
                CollectionSpec(name=MEMORY_COLLECTION, dense={DENSE: self.embedder.dimension},
                               payload_indexes=PAYLOAD_INDEXES))
        except BaseException:
            self.close()  # release locks (embedded Qdrant) and connections
            raise
        self._opened = True
        replayed = self.apply_outbox()
        if replayed:
            log.info("replayed %d pending index operations", replayed)

    def close(self) -> None:
        for store in (self.graph, self.vectors, self.records):
            store.close()
        self._opened = False

    def __enter__(self) -> Stores:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # writes ------------------------------------------------------------------------
    def add(self, items: Sequence[MemoryItem]) -> list[MemoryItem]:
        """Validate, embed (one batch), commit records (one transaction), index.
        Invalid input or an embedding failure writes nothing."""
        for item in items:
            validate_item(item)
        if not items:
            return []
        vectors = self.embedder.embed([i.content for i in items])
        seqs = self.records.add_items(items)
        self._index(items, vectors)
        self.records.mark_applied(seqs)
        return list(items)

    def _index(self, items: Sequence[MemoryItem], vectors: npt.NDArray[np.float32]) -> None:
        from hello_memory.types import VectorPoint

        points = [VectorPoint(id=i.id, vectors={DENSE: v.tolist()}, payload=memory_payload(i))
                  for i, v in zip(items, vectors, strict=True)]
        self.vectors.upsert(MEMORY_COLLECTION, points)
        if self.extractor is not None:
            for item in items:
                entities, relations = self.extractor(item)
                if entities or relations:
                    self.graph.add_mentions(item.namespace, item.id, entities, relations)

    def apply_outbox(self, batch: int = 256) -> int:
        """Apply pending outbox rows to Qdrant and the graph; returns how many."""
        done = 0
        while True:
            pending = self.records.pending_outbox(limit=batch)
            if not pending:
                return done
            by_ns: dict[str, list[str]] = {}
            for entry in pending:
                if entry.op == "delete":
                    self.vectors.delete(MEMORY_COLLECTION, [entry.memory_id],
                                        namespace=entry.namespace)
                    self.graph.remove_memory(entry.namespace, entry.memory_id)
                else:
                    by_ns.setdefault(entry.namespace, []).append(entry.memory_id)
            for ns, ids in by_ns.items():
                items = self.records.get_items(ns, list(dict.fromkeys(ids)))
                for item in items:  # content may have changed: drop stale graph links
                    self.graph.remove_memory(ns, item.id)
                if items:
                    self._index(items, self.embedder.embed([i.content for i in items]))
            self.records.mark_applied([e.seq for e in pending])
            done += len(pending)

    # reads -------------------------------------------------------------------------
    def search(
        self,
        namespace: str,
        query: str,
        *,
        limit: int = 10,
        filters: Mapping[str, Any] | None = None,
    ) -> list[StoredHit]:
        """Dense search in one namespace; hits are joined to their records (a vector
        without a record is never returned)."""
        require_namespace(namespace)
        validate_content(query)
        qv = self.embedder.embed_query(query)
        hits = self.vectors.search(MEMORY_COLLECTION, qv.tolist(), namespace=namespace,
                                   using=DENSE, limit=limit, filters=filters)
        items = {i.id: i for i in self.records.get_items(namespace, [h.id for h in hits])}
        return [StoredHit(items[h.id], h.score) for h in hits if h.id in items]
