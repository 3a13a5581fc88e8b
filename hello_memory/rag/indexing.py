"""The chunk index: chunk records in the record store, their dense and BM25 vectors in
one Qdrant collection, written records first through the one index-maintenance engine
(hello_memory/stores/indexing.py, ARCHITECTURE decision 1).

Replacing a document commits the document row, its new chunk rows, the deletion of
its old chunk rows and one "chunk" outbox row per vector change in ONE transaction;
the vectors (embedded before the commit, so a failing embedder writes nothing) are
then applied by the engine, this class being the "chunk" kind's indexer: it reads the
current chunk records and upserts (record present) or deletes (record gone) their
vectors. A crash in between leaves outbox rows that :meth:`ChunkIndex.open` replays;
searches join hits to records, so a stale vector is never returned meanwhile. Chunk
ids are fresh UUIDs on every write and never reused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.embedding.base import Embedder
from hello_memory.rag.chunker import heading_prefixes
from hello_memory.stores.disk import DiskGuard
from hello_memory.stores.indexing import CHUNK_COLLECTION, ApplyResult, IndexEngine
from hello_memory.stores.records import OutboxEntry, RecordStore
from hello_memory.stores.records.documents import ChunkRecord, DocumentRecord
from hello_memory.stores.vector.base import CollectionSpec, VectorStore
from hello_memory.text.bm25 import BM25_VECTOR, LexicalEncoder
from hello_memory.types import VectorPoint

__all__ = ["CHUNK_COLLECTION", "DENSE", "ChunkIndex", "chunk_payload", "embedding_text"]

log = logging.getLogger(__name__)

DENSE = "dense"
_PAYLOAD_INDEXES = {"document_id": "keyword", "source": "keyword", "headings": "keyword",
                    "language": "keyword"}

Progress = Callable[[int], None]  # called with the number of chunks just embedded


def embedding_text(chunk: ChunkRecord) -> str:
    """What is embedded and BM25-encoded for a chunk: its heading path, then its text
    (the path gives a chunk cut from the middle of a section its context)."""
    if chunk.heading_path and not chunk.content.lstrip().startswith("#"):
        return f"{chunk.heading_path}\n{chunk.content}"
    return chunk.content


def chunk_payload(chunk: ChunkRecord) -> dict[str, object]:
    """The filterable fields of a chunk's point (the record stays the truth)."""
    return {
        "namespace": chunk.namespace, "document_id": chunk.document_id,
        "source": chunk.source_path, "heading_path": chunk.heading_path,
        "headings": heading_prefixes(chunk.heading_path), "ordinal": chunk.ordinal,
        "language": chunk.language,
    }


class ChunkIndex:
    """Write path and replay for document chunks; takes built stores. ``engine``: the
    stores' one engine (shared locks, replayed by ``reconcile`` too); by default one of
    its own over the same outbox. ``disk``: the stores' disk guard (``Stores.disk``,
    hello_memory/stores/disk.py), checked before each document is written."""

    def __init__(self, records: RecordStore, vectors: VectorStore, embedder: Embedder,
                 lexical: LexicalEncoder, *, batch_size: int = 32,
                 engine: IndexEngine | None = None, disk: DiskGuard | None = None) -> None:
        self.records = records
        self.disk = disk if disk is not None else DiskGuard()
        self.vectors = vectors
        self.embedder = embedder
        self.lexical = lexical
        self.batch_size = batch_size
        self.engine = engine if engine is not None else IndexEngine(lambda: records.outbox)
        self.engine.register("chunk", self)

    def open(self) -> int:
        """Make sure the chunk collection exists with the embedder's size, then replay
        pending chunk index work; returns how many outbox rows were replayed."""
        self.vectors.ensure_collection(CollectionSpec(
            name=CHUNK_COLLECTION, dense={DENSE: self.embedder.dimension},
            sparse=(BM25_VECTOR,), payload_indexes=_PAYLOAD_INDEXES))  # type: ignore[arg-type]
        return self.apply_outbox()

    def embed(self, chunks: Sequence[ChunkRecord], progress: Progress | None = None
              ) -> npt.NDArray[np.float32]:
        """Dense vectors of ``chunks``, ``batch_size`` at a time."""
        texts = [embedding_text(c) for c in chunks]
        parts: list[npt.NDArray[np.float32]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start:start + self.batch_size]
            parts.append(self.embedder.embed(batch))
            if progress is not None:
                progress(len(batch))
        if not parts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        return np.concatenate(parts, axis=0)

    def write(self, doc: DocumentRecord, chunks: Sequence[ChunkRecord],
              vectors: npt.NDArray[np.float32]) -> None:
        """Replace ``doc`` and its chunks (records first), then their vectors; refused
        (InsufficientStorageError) under the disk guard's floor, before any write."""
        self.disk.check(sum(8 * len(c.content) + 4096 for c in chunks))
        seqs, _old = self.records.documents.replace_document(doc, chunks)
        filled = [ChunkRecord(**{**c.__dict__, "source_path": doc.source_path}) for c in chunks]
        self._raise(self.engine.apply(seqs, {c.id: (embedding_text(c), v)
                                             for c, v in zip(filled, vectors, strict=True)}))

    def _raise(self, result: ApplyResult) -> None:
        failure = self.engine.first_failure(result)
        if failure is not None:
            raise failure  # durable: the rows stay pending, replayed at open

    # the "chunk" kind's indexer (hello_memory/stores/indexing.py) ----------------------
    def apply(self, namespace: str, entries: Sequence[OutboxEntry],
              prepared: Mapping[str, Any]) -> None:
        """Upsert the vectors of the entries' chunks that exist (the write's own vectors
        where their text still matches, else embedded now) and delete the others'."""
        ids = list(dict.fromkeys(e.item_id for e in entries))
        chunks = {c.id: c for c in self.records.documents.get_chunks(namespace, ids)}
        gone = [i for i in ids if i not in chunks]
        if gone:
            self.vectors.delete(CHUNK_COLLECTION, gone, namespace=namespace)
        present = [chunks[i] for i in ids if i in chunks]
        ready = {c.id: prepared[c.id][1] for c in present
                 if c.id in prepared and prepared[c.id][0] == embedding_text(c)}
        todo = [c for c in present if c.id not in ready]
        if todo:
            ready.update(zip([c.id for c in todo], self.embed(todo), strict=True))
        if present:
            self._upsert(present, [ready[c.id] for c in present])

    def _upsert(self, chunks: Sequence[ChunkRecord], vectors: Sequence[Any]) -> None:
        points = []
        for chunk, vector in zip(chunks, vectors, strict=True):
            sparse = self.lexical.document(embedding_text(chunk))
            points.append(VectorPoint(id=chunk.id, vectors={DENSE: np.asarray(vector).tolist()},
                                      payload=chunk_payload(chunk),
                                      sparse={BM25_VECTOR: sparse} if sparse else {}))
        for start in range(0, len(points), 256):
            self.vectors.upsert(CHUNK_COLLECTION, points[start:start + 256])

    def delete_documents(self, namespace: str, document_ids: Sequence[str]) -> tuple[int, int]:
        """Delete documents, their chunk records and vectors; (documents, chunks)."""
        docs, chunks, seqs = self.records.documents.delete_documents_queued(namespace,
                                                                          document_ids)
        self._raise(self.engine.apply(seqs))
        return docs, chunks

    def apply_outbox(self) -> int:
        """Replay every pending chunk row (the backlog); safe to repeat."""
        return self.engine.replay(["chunk"]).applied

    def reconcile(self, namespace: str) -> dict[str, int]:
        """Delete vectors without a chunk record and index records without a vector
        (e.g. after a Qdrant directory was restored from an older backup), through the
        engine: each repair is an outbox row, applied like a write."""
        self.apply_outbox()
        have = self.vectors.ids(CHUNK_COLLECTION, namespace=namespace)
        want = self.records.documents.all_chunk_ids(namespace)
        orphans = sorted(have - want)
        missing = sorted(want - have)
        outbox = self.records.outbox
        for op, ids in (("delete", orphans), ("add", missing)):
            for start in range(0, len(ids), 512):
                self._raise(self.engine.apply(outbox.enqueue(
                    "chunk", op, namespace, ids[start:start + 512])))
        return {"orphan_vectors_deleted": len(orphans), "chunks_indexed": len(missing)}
