"""The one outbox (schema v6, issue 16): index work queued in the same transaction as
the rows it follows (ARCHITECTURE decision 1), one row per indexed thing, keyed by its
kind ("memory", "media", "chunk") and stable UUID. The other repositories write their
rows through :meth:`OutboxRepository.queue` inside their own session; the engine of
hello_memory/stores/indexing.py reads and marks them."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from hello_memory.stores.records.handle import RecordsHandle
from hello_memory.stores.records.models import OutboxRow
from hello_memory.types import MemoryItem, MemoryType, utcnow
from hello_memory.validation import require_namespace

__all__ = ["KINDS", "OutboxEntry", "OutboxRecords", "OutboxRepository", "kind_of"]

# The kinds of indexed thing, each applied by its own indexer.
KINDS = ("memory", "media", "chunk")
# Rows are read and marked this many seqs per statement (SQLite binds at most 999).
_IN = 500


def kind_of(memory_type: MemoryType | str) -> str:
    """The outbox kind of a memory's index work: "media" for perceptual memories (their
    vectors live in the per-modality collections), else "memory"."""
    return "media" if MemoryType(memory_type) is MemoryType.PERCEPTUAL else "memory"


@dataclass(frozen=True)
class OutboxEntry:
    seq: int
    # "add" (a new record: embed, extract) | "upsert" (content or type changed: re-embed,
    # re-extract) | "payload" (filter fields only) | "delete"; indexers read the record
    # itself, so the op only says how much work a present record needs.
    op: str
    namespace: str
    item_id: str
    kind: str = "memory"

    @property
    def memory_id(self) -> str:
        """The id of the memory (or chunk) the row is about."""
        return self.item_id


def _entry(r: OutboxRow) -> OutboxEntry:
    return OutboxEntry(r.seq, r.op, r.namespace, r.item_id, r.kind)


class OutboxRepository:
    """The outbox rows of a :class:`RecordStore` (``records.outbox``)."""

    def __init__(self, records: RecordsHandle) -> None:
        self._records = records

    # writes, inside the caller's transaction ----------------------------------------
    @staticmethod
    def queue(s: Session, op: str, keys: Iterable[tuple[str, str]], kind: str = "memory",
              ) -> list[int]:
        """Queue ``op`` of ``kind`` for each ``(namespace, item_id)`` in session ``s``;
        returns the outbox seqs, in ``keys`` order."""
        return [e.seq for e in OutboxRepository.queue_entries(s, op, keys, kind)]

    @staticmethod
    def queue_entries(s: Session, op: str, keys: Iterable[tuple[str, str]],
                      kind: str = "memory") -> list[OutboxEntry]:
        """:meth:`queue`, returning the rows written (what the write path applies)."""
        if kind not in KINDS:
            raise ValueError(f"unknown outbox kind {kind!r}")
        return OutboxRepository._written(s, [OutboxRow(kind=kind, op=op, namespace=ns,
                                                       item_id=i) for ns, i in keys])

    @staticmethod
    def queue_items(s: Session, op: str, items: Sequence[MemoryItem]) -> list[OutboxEntry]:
        """Queue ``op`` for each memory of ``items``, of its kind (:func:`kind_of`), in
        session ``s``; returns the rows written, in ``items`` order."""
        return OutboxRepository._written(s, [
            OutboxRow(kind=kind_of(i.memory_type), op=op, namespace=i.namespace, item_id=i.id)
            for i in items])

    @staticmethod
    def _written(s: Session, boxes: list[OutboxRow]) -> list[OutboxEntry]:
        now = utcnow()
        for box in boxes:
            box.created_at = now
        s.add_all(boxes)
        s.flush()  # assigns the seqs
        return [_entry(b) for b in boxes]

    @staticmethod
    def queue_chunks(s: Session, op: str, namespace: str, chunk_ids: Iterable[str]) -> list[int]:
        """Queue ``op`` for each chunk of ``namespace`` in session ``s``; returns the seqs."""
        return OutboxRepository.queue(s, op, [(namespace, i) for i in chunk_ids], "chunk")

    @staticmethod
    def pending_counts(s: Session) -> dict[str, int]:
        """Unapplied rows by kind (every kind listed), in session ``s``."""
        counts = {str(kind): int(n) for kind, n in s.execute(
            select(OutboxRow.kind, func.count()).where(OutboxRow.applied_at.is_(None))
            .group_by(OutboxRow.kind))}
        return {kind: counts.get(kind, 0) for kind in KINDS}

    def enqueue(self, kind: str, op: str, namespace: str, ids: Sequence[str]) -> list[int]:
        """Queue ``op`` rows for ``ids`` in a transaction of their own (repairs:
        reconcile, reindex, retries); returns the seqs."""
        require_namespace(namespace)
        with self._records.transaction() as s:
            return self.queue(s, op, [(namespace, i) for i in ids], kind)

    # reads and marks -----------------------------------------------------------------
    def pending_outbox(self, limit: int = 1000, *, after: int = 0,
                       kinds: Collection[str] | None = None,
                       namespace: str | None = None) -> list[OutboxEntry]:
        """Unapplied rows in write order, from sequence number ``after`` on (exclusive);
        of ``kinds`` and one ``namespace`` when given."""
        q = select(OutboxRow).where(OutboxRow.applied_at.is_(None), OutboxRow.seq > after)
        if kinds is not None:
            q = q.where(OutboxRow.kind.in_(list(kinds)))
        if namespace is not None:
            q = q.where(OutboxRow.namespace == require_namespace(namespace))
        with self._records.transaction() as s:
            return [_entry(r) for r in s.scalars(q.order_by(OutboxRow.seq).limit(limit))]

    def entries(self, seqs: Sequence[int]) -> list[OutboxEntry]:
        """The rows among ``seqs`` still pending, in seq order."""
        wanted = list(dict.fromkeys(seqs))
        out: list[OutboxEntry] = []
        with self._records.transaction() as s:
            for start in range(0, len(wanted), _IN):
                out += [_entry(r) for r in s.scalars(select(OutboxRow).where(
                    OutboxRow.seq.in_(wanted[start:start + _IN]),
                    OutboxRow.applied_at.is_(None)))]
        return sorted(out, key=lambda e: e.seq)

    def pending_seqs(self, namespace: str, ids: Sequence[str]) -> list[int]:
        """The pending rows' seqs of these items of ``namespace`` (any kind)."""
        require_namespace(namespace)
        wanted = list(dict.fromkeys(ids))
        seqs: list[int] = []
        with self._records.transaction() as s:
            for start in range(0, len(wanted), _IN):
                seqs += s.scalars(select(OutboxRow.seq).where(
                    OutboxRow.namespace == namespace, OutboxRow.applied_at.is_(None),
                    OutboxRow.item_id.in_(wanted[start:start + _IN]))).all()
        return sorted(seqs)

    def namespaces(self, kinds: Collection[str] = KINDS) -> list[str]:
        """Every namespace that ever had index work of ``kinds`` (including ones whose
        records are all deleted since)."""
        with self._records.transaction() as s:
            return sorted(s.scalars(select(OutboxRow.namespace).distinct()
                                    .where(OutboxRow.kind.in_(list(kinds)))).all())

    def mark_applied(self, seqs: Sequence[int]) -> None:
        wanted = list(dict.fromkeys(seqs))
        if not wanted:
            return
        now = utcnow()
        with self._records.transaction() as s:
            for start in range(0, len(wanted), _IN):
                s.execute(update(OutboxRow).where(OutboxRow.seq.in_(wanted[start:start + _IN]))
                          .values(applied_at=now))


class OutboxRecords(RecordsHandle, Protocol):
    """What a repository that writes index work reads of its store (handle.py): the
    common members and the outbox repository its writes add rows to in the same
    transaction (the memories and the documents)."""

    outbox: OutboxRepository
