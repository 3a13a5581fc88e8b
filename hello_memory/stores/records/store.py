"""The record store: SQLAlchemy 2.x over SQLite by default, any SQLAlchemy URL.

Records are the source of truth. Every write commits its rows and an outbox row per
affected memory in ONE transaction; the caller then applies the outbox to Qdrant and
the graph and marks it applied. Rows left pending after a crash are replayed later.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, delete, event, func, select, update
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from hello_memory.errors import (
    BackendUnavailableError,
    InvalidInputError,
    NotFoundError,
    RecordStoreError,
)
from hello_memory.stores.records.migrations import migrate
from hello_memory.stores.records.models import AuditRow, MemoryRow, OutboxRow
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, Modality, utcnow
from hello_memory.validation import require_namespace, validate_item

__all__ = ["ItemFilter", "OutboxEntry", "RecordStore"]

# Fields callers may change with update(); id/namespace/recorded_time never change.
_UPDATABLE = {
    "content", "content_hash", "importance", "metadata", "status", "memory_type",
    "event_time", "user_id", "agent_id", "session_id", "access_count", "last_access",
}


@dataclass(frozen=True)
class OutboxEntry:
    seq: int
    op: str  # "upsert" (re-embed) | "payload" (filter fields only) | "delete"
    namespace: str
    memory_id: str


@dataclass(frozen=True)
class ItemFilter:
    """Structured filters (the symbolic side of retrieval). None means "any"."""

    memory_types: tuple[MemoryType, ...] | None = None
    status: MemoryStatus | None = MemoryStatus.ACTIVE
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    min_importance: float | None = None


def _to_item(row: MemoryRow) -> MemoryItem:
    return MemoryItem(
        id=row.id, namespace=row.namespace, content=row.content,
        memory_type=MemoryType(row.memory_type), modality=Modality(row.modality),
        user_id=row.user_id, agent_id=row.agent_id, session_id=row.session_id,
        event_time=row.event_time, recorded_time=row.recorded_time,
        importance=row.importance, access_count=row.access_count,
        last_access=row.last_access, status=MemoryStatus(row.status),
        metadata=dict(row.metadata_ or {}), content_hash=row.content_hash,
    )


def _to_row(item: MemoryItem) -> MemoryRow:
    return MemoryRow(
        id=item.id, namespace=item.namespace, content=item.content,
        content_hash=item.content_hash, memory_type=item.memory_type.value,
        modality=item.modality.value, user_id=item.user_id, agent_id=item.agent_id,
        session_id=item.session_id, event_time=item.event_time,
        recorded_time=item.recorded_time, importance=item.importance,
        access_count=item.access_count, last_access=item.last_access,
        status=item.status.value, metadata_=item.metadata,
    )


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA synchronous=NORMAL")  # safe with WAL: a crash loses no commit
    cur.close()


class RecordStore:
    """Typed records in a relational database. ``open()`` creates or upgrades the schema."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = url
        self._echo = echo
        self._engine: Engine | None = None
        self._sessions: sessionmaker[Session] | None = None
        self._lock = threading.Lock()

    # lifecycle ---------------------------------------------------------------------
    def open(self) -> None:
        if self._engine is not None:
            return
        try:
            engine = create_engine(self.url, echo=self._echo)
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise BackendUnavailableError(f"invalid record store URL {self.url!r}: {exc}") from exc
        if engine.url.get_backend_name() == "sqlite":
            db = engine.url.database
            if db and db != ":memory:":
                try:
                    Path(db).parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise BackendUnavailableError(
                        f"cannot create the directory of SQLite database {db!r}: {exc}"
                    ) from exc
            event.listen(engine, "connect", _sqlite_pragmas)
            try:
                with engine.connect() as conn:
                    if db and db != ":memory:":
                        conn.exec_driver_sql("PRAGMA journal_mode=WAL")
            except OperationalError as exc:
                raise BackendUnavailableError(f"cannot open SQLite database {db!r}: {exc}") from exc
        try:
            migrate(engine)
        except OperationalError as exc:
            engine.dispose()
            raise BackendUnavailableError(f"cannot reach record store {self.url!r}: {exc}") from exc
        except Exception:
            engine.dispose()
            raise
        self._engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
        self._engine = None
        self._sessions = None

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise RecordStoreError("record store is not open; call open() first")
        return self._engine

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One transaction: commits on success, rolls back on any error. SQLAlchemy
        errors leave as RecordStoreError."""
        if self._sessions is None:
            raise RecordStoreError("record store is not open; call open() first")
        try:
            with self._sessions.begin() as session:
                yield session
        except SQLAlchemyError as exc:
            raise RecordStoreError(f"record store transaction failed: {exc}") from exc

    # memory items ------------------------------------------------------------------
    def add_items(self, items: Sequence[MemoryItem]) -> list[int]:
        """Insert items and their outbox rows in one transaction; returns outbox seqs.
        Every item is validated first: one bad item writes nothing."""
        for item in items:
            validate_item(item)
        ids = [i.id for i in items]
        if len(set(ids)) != len(ids):
            raise InvalidInputError("duplicate ids in one batch")
        now = utcnow()
        with self.transaction() as s:
            taken = s.scalars(select(MemoryRow.id).where(MemoryRow.id.in_(ids))).all()
            if taken:
                raise InvalidInputError(f"memory id already exists: {taken[0]}")
            s.add_all([_to_row(i) for i in items])
            boxes = [OutboxRow(op="upsert", namespace=i.namespace, memory_id=i.id, created_at=now)
                     for i in items]
            s.add_all(boxes)
            s.flush()
            return [b.seq for b in boxes]

    def get_items(self, namespace: str, ids: Sequence[str]) -> list[MemoryItem]:
        """Items by id within ``namespace`` (missing ids are left out), in ``ids`` order."""
        require_namespace(namespace)
        with self.transaction() as s:
            rows = s.scalars(
                select(MemoryRow).where(MemoryRow.namespace == namespace, MemoryRow.id.in_(ids))
            ).all()
        by_id = {r.id: _to_item(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def get_item(self, namespace: str, memory_id: str) -> MemoryItem:
        found = self.get_items(namespace, [memory_id])
        if not found:
            raise NotFoundError(f"no memory {memory_id!r} in namespace {namespace!r}")
        return found[0]

    def _where(self, namespace: str, flt: ItemFilter) -> list[Any]:
        require_namespace(namespace)
        conds: list[Any] = [MemoryRow.namespace == namespace]
        if flt.memory_types is not None:
            conds.append(MemoryRow.memory_type.in_([MemoryType(t).value for t in flt.memory_types]))
        if flt.status is not None:
            conds.append(MemoryRow.status == MemoryStatus(flt.status).value)
        for name in ("user_id", "agent_id", "session_id"):
            value = getattr(flt, name)
            if value is not None:
                conds.append(getattr(MemoryRow, name) == value)
        if flt.since is not None:
            conds.append(MemoryRow.event_time >= flt.since)
        if flt.until is not None:
            conds.append(MemoryRow.event_time <= flt.until)
        if flt.min_importance is not None:
            conds.append(MemoryRow.importance >= flt.min_importance)
        return conds

    def list_items(
        self, namespace: str, flt: ItemFilter = ItemFilter(), *, limit: int | None = None,
        offset: int = 0,
    ) -> list[MemoryItem]:
        """Items matching ``flt``, oldest event first."""
        q = (select(MemoryRow).where(*self._where(namespace, flt))
             .order_by(MemoryRow.event_time, MemoryRow.id).offset(offset).limit(limit))
        with self.transaction() as s:
            return [_to_item(r) for r in s.scalars(q).all()]

    def count_items(self, namespace: str, flt: ItemFilter = ItemFilter()) -> int:
        q = select(func.count()).select_from(MemoryRow).where(*self._where(namespace, flt))
        with self.transaction() as s:
            return int(s.scalar(q) or 0)

    def update_item(self, namespace: str, memory_id: str, **changes: Any) -> MemoryItem:
        """Change fields of one item and queue its re-index; returns the new item."""
        unknown = set(changes) - _UPDATABLE
        if unknown:
            raise InvalidInputError(f"cannot update field(s) {sorted(unknown)}")
        with self.transaction() as s:
            row = s.scalar(select(MemoryRow).where(
                MemoryRow.namespace == require_namespace(namespace), MemoryRow.id == memory_id))
            if row is None:
                raise NotFoundError(f"no memory {memory_id!r} in namespace {namespace!r}")
            item = _to_item(row)
            old_content = item.content
            for key, value in changes.items():
                setattr(item, key, value)
            content_changed = item.content != old_content
            if content_changed and "content_hash" not in changes:
                item.content_hash = None
            validate_item(item)
            s.merge(_to_row(item))
            # New content must be re-embedded and re-extracted; anything else only
            # changes the vector's payload.
            s.add(OutboxRow(op="upsert" if content_changed else "payload", namespace=namespace,
                            memory_id=memory_id, created_at=utcnow()))
        return item

    def delete_items(self, namespace: str, ids: Sequence[str]) -> int:
        """Delete items of ``namespace`` by id and queue index deletions; returns count."""
        require_namespace(namespace)
        with self.transaction() as s:
            found = s.scalars(select(MemoryRow.id).where(
                MemoryRow.namespace == namespace, MemoryRow.id.in_(ids))).all()
            if not found:
                return 0
            s.execute(delete(MemoryRow).where(MemoryRow.namespace == namespace,
                                              MemoryRow.id.in_(found)))
            now = utcnow()
            s.add_all([OutboxRow(op="delete", namespace=namespace, memory_id=i, created_at=now)
                       for i in found])
        return len(found)

    def record_access(self, namespace: str, ids: Sequence[str]) -> None:
        """Bump access counts (search hits); does not touch the indexes."""
        require_namespace(namespace)
        with self.transaction() as s:
            s.execute(update(MemoryRow)
                      .where(MemoryRow.namespace == namespace, MemoryRow.id.in_(ids))
                      .values(access_count=MemoryRow.access_count + 1, last_access=utcnow()))

    def namespaces(self) -> list[str]:
        with self.transaction() as s:
            return sorted(s.scalars(select(MemoryRow.namespace).distinct()).all())

    def all_ids(self, namespace: str) -> set[str]:
        require_namespace(namespace)
        with self.transaction() as s:
            return set(s.scalars(select(MemoryRow.id).where(MemoryRow.namespace == namespace)))

    # outbox ------------------------------------------------------------------------
    def pending_outbox(self, limit: int = 1000) -> list[OutboxEntry]:
        with self.transaction() as s:
            rows = s.scalars(select(OutboxRow).where(OutboxRow.applied_at.is_(None))
                             .order_by(OutboxRow.seq).limit(limit)).all()
            return [OutboxEntry(r.seq, r.op, r.namespace, r.memory_id) for r in rows]

    def mark_applied(self, seqs: Sequence[int]) -> None:
        if not seqs:
            return
        with self.transaction() as s:
            s.execute(update(OutboxRow).where(OutboxRow.seq.in_(list(seqs)))
                      .values(applied_at=utcnow()))

    # audit -------------------------------------------------------------------------
    def add_audit(self, namespace: str, action: str, details: dict[str, Any]) -> None:
        require_namespace(namespace)
        with self.transaction() as s:
            s.add(AuditRow(at=utcnow(), namespace=namespace, action=action, details=details))

    def list_audit(self, namespace: str, limit: int = 100) -> list[dict[str, Any]]:
        require_namespace(namespace)
        with self.transaction() as s:
            rows = s.scalars(select(AuditRow).where(AuditRow.namespace == namespace)
                             .order_by(AuditRow.id.desc()).limit(limit)).all()
            return [{"at": r.at, "action": r.action, "details": r.details} for r in rows]
