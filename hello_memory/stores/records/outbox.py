"""The outbox: index operations queued in the same transaction as the rows they
follow (ARCHITECTURE decision 1), ``hm_outbox`` for memories and ``hm_rag_outbox`` for
document chunks. The other repositories write their rows through :meth:`queue` and
:meth:`queue_chunks`, inside their own session."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from hello_memory.stores.records.models import OutboxRow, RagOutboxRow
from hello_memory.types import utcnow
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.stores.records.store import RecordStore

__all__ = ["OutboxEntry", "OutboxRepository"]


@dataclass(frozen=True)
class OutboxEntry:
    seq: int
    op: str  # "upsert" (re-embed) | "payload" (filter fields only) | "delete"
    namespace: str
    memory_id: str



class OutboxRepository:
    """The outbox rows of a :class:`RecordStore` (``records.outbox``)."""

    def __init__(self, records: RecordStore) -> None:
        self._records = records

    # writes, inside the caller's transaction ----------------------------------------
    @staticmethod
    def queue(s: Session, op: str, keys: Iterable[tuple[str, str]]) -> list[int]:
        """Queue ``op`` for each ``(namespace, memory_id)`` in session ``s``; returns
        the outbox seqs, in ``keys`` order."""
        now = utcnow()
        boxes = [OutboxRow(op=op, namespace=ns, memory_id=i, created_at=now) for ns, i in keys]
        s.add_all(boxes)
        s.flush()
        return [b.seq for b in boxes]

    @staticmethod
    def queue_chunks(s: Session, op: str, namespace: str, chunk_ids: Iterable[str]) -> list[int]:
        """Queue ``op`` for each chunk of ``namespace`` in session ``s``; returns the seqs."""
        now = utcnow()
        boxes = [RagOutboxRow(op=op, namespace=namespace, chunk_id=i, created_at=now)
                 for i in chunk_ids]
        s.add_all(boxes)
        s.flush()
        return [b.seq for b in boxes]

    @staticmethod
    def pending_counts(s: Session) -> dict[str, int]:
        """Unapplied rows by kind ("memory", "chunk"), in session ``s``."""
        return {kind: int(s.scalar(select(func.count()).select_from(row)
                                   .where(row.applied_at.is_(None))) or 0)
                for kind, row in (("memory", OutboxRow), ("chunk", RagOutboxRow))}

    # reads and marks -----------------------------------------------------------------
    def pending_outbox(self, limit: int = 1000, *, after: int = 0) -> list[OutboxEntry]:
        """Unapplied rows in write order, from sequence number ``after`` on (exclusive)."""
        with self._records.transaction() as s:
            rows = s.scalars(select(OutboxRow).where(OutboxRow.applied_at.is_(None),
                                                     OutboxRow.seq > after)
                             .order_by(OutboxRow.seq).limit(limit)).all()
            return [OutboxEntry(r.seq, r.op, r.namespace, r.memory_id) for r in rows]

    def mark_applied(self, seqs: Sequence[int]) -> None:
        if not seqs:
            return
        with self._records.transaction() as s:
            s.execute(update(OutboxRow).where(OutboxRow.seq.in_(list(seqs)))
                      .values(applied_at=utcnow()))

    def pending_rag_outbox(self, limit: int = 1000, *, namespace: str | None = None
                           ) -> list[OutboxEntry]:
        """Unapplied chunk index operations, oldest first (``memory_id`` is the chunk
        id); of one namespace when given, else of all (the replay needs them all)."""
        q = select(RagOutboxRow).where(RagOutboxRow.applied_at.is_(None))
        if namespace is not None:
            q = q.where(RagOutboxRow.namespace == require_namespace(namespace))
        with self._records.transaction() as s:
            rows = s.scalars(q.order_by(RagOutboxRow.seq).limit(limit)).all()
            return [OutboxEntry(r.seq, r.op, r.namespace, r.chunk_id) for r in rows]

    def mark_rag_applied(self, seqs: Sequence[int]) -> None:
        if not seqs:
            return
        with self._records.transaction() as s:
            s.execute(update(RagOutboxRow).where(RagOutboxRow.seq.in_(list(seqs)))
                      .values(applied_at=utcnow()))
