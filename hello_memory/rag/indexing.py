"""The chunk index: chunk records in the record store, their dense and BM25 vectors in
one Qdrant collection, written records first.

Replacing a document commits the document row, its new chunk rows, the deletion of
its old chunk rows and one ``hm_rag_outbox`` row per vector change in ONE
transaction; the vectors (embedded before the commit, so a failing embedder writes
nothing) are then upserted, the old ones deleted, and the outbox rows marked applied.
A crash in between leaves outbox rows that :meth:`ChunkIndex.apply_outbox` replays
(re-embedding from the records); searches join hits to records, so a stale vector is
never returned meanwhile. Chunk ids are fresh UUIDs on every write and never reused,
so replaying upserts and deletes in any order converges.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from hello_memory.embedding.base import Embedder
from hello_memory.rag.chunker import heading_prefixes
from hello_memory.text.bm25 import BM25_VECTOR, LexicalEncoder
from hello_memory.stores.records import RecordStore
from hello_memory.stores.records.documents import ChunkRecord, DocumentRecord
from hello_memory.stores.vector.base import CollectionSpec, VectorStore
from hello_memory.types import VectorPoint

__all__ = ["CHUNK_COLLECTION", "DENSE", "ChunkIndex", "chunk_payload", "embedding_text"]

log = logging.getLogger(__name__)

CHUNK_COLLECTION = "rag_chunks"
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
    """Write path and replay for document chunks; takes built stores."""

    def __init__(self, records: RecordStore, vectors: VectorStore, embedder: Embedder,
                 lexical: LexicalEncoder, *, batch_size: int = 32) -> None:
        self.records = records
        self.vectors = vectors
        self.embedder = embedder
        self.lexical = lexical
        self.batch_size = batch_size

    def open(self) -> int:
        """Make sure the chunk collection exists with the embedder's size, then replay
        pending chunk index work; returns how many outbox rows were replayed."""
        self.vectors.ensure_collection(CollectionSpec(
            name=CHUNK_COLLECTION, dense={DENSE: self.embedder.dimension},
            sparse=(BM25_VECTOR,), payload_indexes=_PAYLOAD_INDEXES))  # type: ignore[arg-type]
        replayed = self.apply_outbox()
        if replayed:
            log.info("replayed %d pending chunk index operations", replayed)
        return replayed

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
        """Replace ``doc`` and its chunks (records first), then their vectors."""
        seqs, old = self.records.documents.replace_document(doc, chunks)
        filled = [ChunkRecord(**{**c.__dict__, "source_path": doc.source_path}) for c in chunks]
        self._upsert(filled, vectors)
        if old:
            self.vectors.delete(CHUNK_COLLECTION, old, namespace=doc.namespace)
        self.records.outbox.mark_rag_applied(seqs)

    def _upsert(self, chunks: Sequence[ChunkRecord], vectors: npt.NDArray[np.float32]) -> None:
        points = []
        for chunk, vector in zip(chunks, vectors, strict=True):
            sparse = self.lexical.document(embedding_text(chunk))
            points.append(VectorPoint(id=chunk.id, vectors={DENSE: vector.tolist()},
                                      payload=chunk_payload(chunk),
                                      sparse={BM25_VECTOR: sparse} if sparse else {}))
        for start in range(0, len(points), 256):
            self.vectors.upsert(CHUNK_COLLECTION, points[start:start + 256])

    def delete_documents(self, namespace: str, document_ids: Sequence[str]) -> tuple[int, int]:
        """Delete documents, their chunk records and vectors; (documents, chunks)."""
        counts = self.records.documents.delete_documents(namespace, document_ids)
        if counts[1]:
            self.apply_outbox()
        return counts

    def apply_outbox(self, batch: int = 256) -> int:
        """Apply pending chunk outbox rows to Qdrant; safe to repeat."""
        done = 0
        while True:
            pending = self.records.outbox.pending_rag_outbox(limit=batch)
            if not pending:
                return done
            by_ns: dict[str, tuple[list[str], list[str]]] = {}
            for e in pending:
                ups, dels = by_ns.setdefault(e.namespace, ([], []))
                (dels if e.op == "delete" else ups).append(e.memory_id)
            for ns, (ups, dels) in by_ns.items():
                if dels:
                    self.vectors.delete(CHUNK_COLLECTION, dels, namespace=ns)
                chunks = self.records.documents.get_chunks(ns, ups)  # gone since: nothing to index
                if chunks:
                    self._upsert(chunks, self.embed(chunks))
            self.records.outbox.mark_rag_applied([e.seq for e in pending])
            done += len(pending)

    def reconcile(self, namespace: str) -> dict[str, int]:
        """Delete vectors without a chunk record and index records without a vector
        (e.g. after a Qdrant directory was restored from an older backup)."""
        self.apply_outbox()
        have = self.vectors.ids(CHUNK_COLLECTION, namespace=namespace)
        want = self.records.documents.all_chunk_ids(namespace)
        orphans = sorted(have - want)
        missing = sorted(want - have)
        if orphans:
            self.vectors.delete(CHUNK_COLLECTION, orphans, namespace=namespace)
        for start in range(0, len(missing), 512):
            chunks = self.records.documents.get_chunks(namespace, missing[start:start + 512])
            if chunks:
                self._upsert(chunks, self.embed(chunks))
        return {"orphan_vectors_deleted": len(orphans), "chunks_indexed": len(missing)}
