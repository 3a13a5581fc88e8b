"""Ingested documents and their chunks (RAG): ``hm_documents`` and ``hm_chunks``.

Chunk writes follow the memory write path (ARCHITECTURE decision 1): rows and their
outbox rows commit in one transaction; the RAG pipeline then applies the outbox to
Qdrant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, select

from hello_memory.errors import InvalidInputError
from hello_memory.stores.records.models import ChunkRow, DocumentRow
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.stores.records.outbox import OutboxRecords

__all__ = ["ChunkRecord", "DocumentRecord", "DocumentRepository"]


@dataclass(frozen=True)
class DocumentRecord:
    """An ingested document (RAG): one per source path and namespace."""

    id: str
    namespace: str
    source_path: str
    content_hash: str
    ingested_at: datetime
    title: str | None = None
    modified_time: datetime | None = None
    language: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChunkRecord:
    """One chunk of a document; ``start``/``end`` are offsets into the document's
    Markdown text. ``source_path`` is filled in from the document on reads."""

    id: str
    document_id: str
    namespace: str
    ordinal: int
    content: str
    content_hash: str
    heading_path: str
    start: int
    end: int
    token_count: int
    language: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    source_path: str = ""


def _to_document(row: DocumentRow) -> DocumentRecord:
    return DocumentRecord(
        id=row.id, namespace=row.namespace, source_path=row.source_path,
        content_hash=row.content_hash, ingested_at=row.ingested_at, title=row.title,
        modified_time=row.modified_time, language=row.language,
        metadata=dict(row.metadata_ or {}))


def _to_chunk(row: ChunkRow, source_path: str = "") -> ChunkRecord:
    return ChunkRecord(
        id=row.id, document_id=row.document_id, namespace=row.namespace, ordinal=row.ordinal,
        content=row.content, content_hash=row.content_hash, heading_path=row.heading_path,
        start=row.start_offset, end=row.end_offset, token_count=row.token_count,
        language=row.language, metadata=dict(row.metadata_ or {}), source_path=source_path)


def _codepoints(column: Any, dialect: str) -> Any:
    """``column`` ordered by code point, as SQLite (BINARY) and Python order text: a
    PostgreSQL database's collation may ignore punctuation (glibc's en_US.UTF-8)."""
    return column.collate("C") if dialect == "postgresql" else column


class DocumentRepository:
    """The documents and chunks of a :class:`RecordStore` (``records.documents``)."""

    def __init__(self, records: OutboxRecords) -> None:
        self._records = records

    def find_document(self, namespace: str, document: str) -> DocumentRecord | None:
        """A document of ``namespace`` by id or by source path."""
        require_namespace(namespace)
        with self._records.transaction() as s:
            row = s.scalar(select(DocumentRow).where(
                DocumentRow.namespace == namespace,
                (DocumentRow.id == document) | (DocumentRow.source_path == document)))
            return _to_document(row) if row is not None else None

    def list_documents(self, namespace: str) -> list[DocumentRecord]:
        require_namespace(namespace)
        with self._records.transaction() as s:
            rows = s.scalars(select(DocumentRow).where(DocumentRow.namespace == namespace)
                             .order_by(_codepoints(DocumentRow.source_path,
                                                   self._records.engine.dialect.name))).all()
            return [_to_document(r) for r in rows]

    def replace_document(self, doc: DocumentRecord, chunks: Sequence[ChunkRecord]
                         ) -> tuple[list[int], list[str]]:
        """Insert or replace ``doc`` and all of its chunks in ONE transaction, queueing
        vector deletes for the old chunks and upserts for the new; returns the outbox
        seqs and the ids of the chunks replaced.
        A document already stored under the same source path keeps its row only if it
        has ``doc.id``; otherwise the call is refused (the caller looks it up first)."""
        require_namespace(doc.namespace)
        if any(c.document_id != doc.id or c.namespace != doc.namespace for c in chunks):
            raise InvalidInputError("every chunk must belong to the document and its namespace")
        if len({c.id for c in chunks}) != len(chunks):
            raise InvalidInputError("duplicate chunk ids in one document")
        with self._records.transaction() as s:
            other = s.scalar(select(DocumentRow.id).where(
                DocumentRow.namespace == doc.namespace, DocumentRow.source_path == doc.source_path,
                DocumentRow.id != doc.id))
            if other is not None:
                raise InvalidInputError(f"{doc.source_path!r} is already document {other}")
            old = s.scalars(select(ChunkRow.id).where(ChunkRow.namespace == doc.namespace,
                                                      ChunkRow.document_id == doc.id)).all()
            if old:
                s.execute(delete(ChunkRow).where(ChunkRow.id.in_(old)))
            s.merge(DocumentRow(
                id=doc.id, namespace=doc.namespace, source_path=doc.source_path, title=doc.title,
                content_hash=doc.content_hash, modified_time=doc.modified_time,
                language=doc.language, ingested_at=doc.ingested_at, metadata_=doc.metadata))
            s.flush()  # the document row must exist before its chunks (foreign key)
            s.add_all([ChunkRow(
                id=c.id, document_id=c.document_id, namespace=c.namespace, ordinal=c.ordinal,
                content=c.content, content_hash=c.content_hash, heading_path=c.heading_path,
                start_offset=c.start, end_offset=c.end, token_count=c.token_count,
                language=c.language, metadata_=c.metadata) for c in chunks])
            outbox = self._records.outbox
            seqs = (outbox.queue_chunks(s, "delete", doc.namespace, old)
                    + outbox.queue_chunks(s, "upsert", doc.namespace, [c.id for c in chunks]))
            return seqs, list(old)

    def delete_documents(self, namespace: str, document_ids: Sequence[str]) -> tuple[int, int]:
        """Delete documents with their chunks, queueing vector deletes; returns
        (documents, chunks) deleted."""
        docs, chunks, _ = self.delete_documents_queued(namespace, document_ids)
        return docs, chunks

    def delete_documents_queued(self, namespace: str, document_ids: Sequence[str]
                                ) -> tuple[int, int, list[int]]:
        """:meth:`delete_documents`, also returning the outbox seqs it wrote."""
        require_namespace(namespace)
        with self._records.transaction() as s:
            docs = s.scalars(select(DocumentRow.id).where(
                DocumentRow.namespace == namespace, DocumentRow.id.in_(document_ids))).all()
            if not docs:
                return 0, 0, []
            chunks = s.scalars(select(ChunkRow.id).where(
                ChunkRow.namespace == namespace, ChunkRow.document_id.in_(docs))).all()
            s.execute(delete(ChunkRow).where(ChunkRow.namespace == namespace,
                                             ChunkRow.document_id.in_(docs)))
            s.execute(delete(DocumentRow).where(DocumentRow.namespace == namespace,
                                                DocumentRow.id.in_(docs)))
            seqs = self._records.outbox.queue_chunks(s, "delete", namespace, chunks)
        return len(docs), len(chunks), seqs

    def get_chunks(self, namespace: str, ids: Sequence[str]) -> list[ChunkRecord]:
        """Chunks by id within ``namespace`` (missing ids left out), in ``ids`` order,
        each with its document's source path."""
        require_namespace(namespace)
        if not ids:
            return []
        with self._records.transaction() as s:
            rows = s.execute(
                select(ChunkRow, DocumentRow.source_path)
                .join(DocumentRow, DocumentRow.id == ChunkRow.document_id)
                .where(ChunkRow.namespace == namespace, ChunkRow.id.in_(list(ids)))).all()
        by_id = {row.id: _to_chunk(row, path) for row, path in rows}
        return [by_id[i] for i in ids if i in by_id]

    def document_chunks(self, namespace: str, document_id: str) -> list[ChunkRecord]:
        require_namespace(namespace)
        with self._records.transaction() as s:
            rows = s.execute(
                select(ChunkRow, DocumentRow.source_path)
                .join(DocumentRow, DocumentRow.id == ChunkRow.document_id)
                .where(ChunkRow.namespace == namespace, ChunkRow.document_id == document_id)
                .order_by(ChunkRow.ordinal)).all()
        return [_to_chunk(row, path) for row, path in rows]

    def document_stats(self, namespace: str) -> dict[str, int]:
        """Counts of documents, chunks and chunk tokens in ``namespace``."""
        require_namespace(namespace)
        with self._records.transaction() as s:
            docs = s.scalar(select(func.count()).select_from(DocumentRow)
                            .where(DocumentRow.namespace == namespace))
            chunks, tokens = s.execute(
                select(func.count(), func.coalesce(func.sum(ChunkRow.token_count), 0))
                .where(ChunkRow.namespace == namespace)).one()
        return {"documents": int(docs or 0), "chunks": int(chunks), "tokens": int(tokens)}

    def all_chunk_ids(self, namespace: str) -> set[str]:
        require_namespace(namespace)
        with self._records.transaction() as s:
            return set(s.scalars(select(ChunkRow.id).where(ChunkRow.namespace == namespace)))
