"""The record store: SQLAlchemy 2.x over SQLite by default, any SQLAlchemy URL.

Records are the source of truth. Every write commits its rows and an outbox row per
affected memory in ONE transaction; the caller then applies the outbox to Qdrant and
the graph and marks it applied. Rows left pending after a crash are replayed later.

``RecordStore`` owns the engine's life (open, close, transactions) and what spans
every table (``purge_namespace``); the SQL of each aggregate lives in its repository,
reachable as an attribute: ``records.memories`` (memories.py), ``records.documents``
(documents.py: documents and chunks), ``records.outbox`` (outbox.py), ``records.audit``
(audit.py). The repositories share this store's sessions, so one transaction can
write the rows of several (a memory, its outbox rows and the totals).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, MetaData, create_engine, delete, event, select
from sqlalchemy.exc import DataError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from hello_memory.config import LimitsSettings
from hello_memory.errors import BackendUnavailableError, InvalidInputError, RecordStoreError
from hello_memory.stores.records.audit import AuditRepository
from hello_memory.stores.records.documents import DocumentRepository
from hello_memory.stores.records.item_cache import ItemCache
from hello_memory.stores.records.memories import MemoryRepository
from hello_memory.stores.records.migrations import migrate
from hello_memory.stores.records.models import ChunkRow, DocumentRow, MemoryRow
from hello_memory.stores.records.outbox import OutboxRepository
from hello_memory.validation import DEFAULT_LIMITS, require_namespace

__all__ = ["RecordStore"]

log = logging.getLogger(__name__)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA synchronous=NORMAL")  # safe with WAL: a crash loses no commit
    cur.close()


def _postgresql_session(dbapi_conn: Any, _record: Any) -> None:
    """Each PostgreSQL connection works in UTC (models.UTCDateTime): times come back in
    the session's zone, and in a server's zone west of UTC 0001-01-01 UTC is year 0,
    which no Python datetime holds."""
    autocommit = dbapi_conn.autocommit
    dbapi_conn.autocommit = True
    cur = dbapi_conn.cursor()
    cur.execute("SET TIME ZONE 'UTC'")
    cur.close()
    dbapi_conn.autocommit = autocommit



class RecordStore:
    """Typed records in a relational database. ``open()`` creates or upgrades the schema."""

    def __init__(self, url: str, *, echo: bool = False, mention_times: bool = True,
                 item_cache: bool | None = None, limits: LimitsSettings | None = None
                 ) -> None:
        self.url = url
        # The bounds every record written here is checked against (the ``limits``
        # settings, given by open_stores; docs/ARCHITECTURE.md, "Where settings reach
        # the parts"). The parts built over these records read them from here.
        self.limits = limits or DEFAULT_LIMITS
        self._echo = echo
        # Whether writes store the time ranges a memory's text mentions (hm_memory_times,
        # the ``memory.times_from_text`` setting); reads work either way.
        self.mention_times = mention_times
        # The search's record cache (item_cache.py): None = where this process holds
        # the records (SQLite); it is only correct while every write goes through it.
        self._item_cache_wanted = item_cache
        self.item_cache: ItemCache | None = None
        self._engine: Engine | None = None
        self._sessions: sessionmaker[Session] | None = None
        self._lock = threading.Lock()
        self.memories = MemoryRepository(self)
        self.documents = DocumentRepository(self)
        self.outbox = OutboxRepository(self)
        self.audit = AuditRepository(self)

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
        elif engine.url.get_backend_name() == "postgresql":
            event.listen(engine, "connect", _postgresql_session)
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
        wanted = self._item_cache_wanted
        if wanted if wanted is not None else engine.url.get_backend_name() == "sqlite":
            self.item_cache = ItemCache()

    def close(self) -> None:
        if self._engine is not None:
            try:
                self.memories.access_log.close()  # the waiting accesses, while it can
            except RecordStoreError as exc:
                log.warning("search access counts not written at close: %s", exc)
            self._engine.dispose()
        self._engine = None
        self._sessions = None
        if self.item_cache is not None:
            self.item_cache.clear()
        self.item_cache = None
        self.memories.kept_records.clear()

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise RecordStoreError("record store is not open; call open() first")
        return self._engine

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One transaction: commits on success, rolls back on any error. SQLAlchemy
        errors leave as RecordStoreError; a value the database cannot hold (PostgreSQL:
        NUL in text, a string longer than its column, a number out of range; SQLite:
        an integer past 64 bits) as InvalidInputError."""
        if self._sessions is None:
            raise RecordStoreError("record store is not open; call open() first")
        try:
            with self._sessions.begin() as session:
                yield session
        except (DataError, OverflowError) as exc:
            why = exc.orig if isinstance(exc, DataError) else exc
            raise InvalidInputError(f"the record store cannot hold a value given: {why}"
                                    ) from exc
        except SQLAlchemyError as exc:
            raise RecordStoreError(f"record store transaction failed: {exc}") from exc

    # a whole namespace -------------------------------------------------------------
    def purge_namespace(self, namespace: str) -> dict[str, int]:
        """Delete every row of ``namespace`` from every table of the database, in ONE
        transaction: rows whose ``namespace`` column holds it, and rows of a table
        without that column whose ``memory_id``, ``chunk_id`` or ``document_id`` is
        one of the namespace's. The tables are read from the database itself (not
        from this module's models), so tables of a later schema version, or the SQLite
        graph's, go too. Returns the rows deleted per table (tables with none left out).
        The caller clears the derived indexes (vectors, a graph server) afterwards."""
        ns = require_namespace(namespace)
        meta = MetaData()
        try:
            meta.reflect(self.engine)
        except SQLAlchemyError as exc:
            raise RecordStoreError(f"cannot read the record store's tables: {exc}") from exc
        counts: dict[str, int] = {}
        try:
            self._purge(ns, meta, counts)
        except BaseException:
            self.memories.forget_namespace(ns, deleted=False)  # rolled back, or not
            raise
        self.memories.forget_namespace(ns, deleted=True)
        return counts

    def _purge(self, ns: str, meta: MetaData, counts: dict[str, int]) -> None:
        with self.transaction() as s:
            keys: dict[str, list[str]] = {
                "memory_id": list(s.scalars(select(MemoryRow.id)
                                            .where(MemoryRow.namespace == ns))),
                "chunk_id": list(s.scalars(select(ChunkRow.id).where(ChunkRow.namespace == ns))),
                "document_id": list(s.scalars(select(DocumentRow.id)
                                              .where(DocumentRow.namespace == ns))),
            }
            for table in reversed(meta.sorted_tables):  # children before their parents
                n = 0
                if "namespace" in table.c:
                    n = _rowcount(s.execute(delete(table).where(table.c.namespace == ns)))
                else:
                    for column, ids in keys.items():
                        if column not in table.c:
                            continue
                        for start in range(0, len(ids), 500):
                            part = ids[start:start + 500]
                            n += _rowcount(s.execute(delete(table).where(
                                table.c[column].in_(part))))
                if n:
                    counts[table.name] = n


def _rowcount(result: Any) -> int:
    """Rows a DELETE touched (a CursorResult's rowcount; 0 where the driver says -1)."""
    return max(0, int(getattr(result, "rowcount", 0) or 0))