"""The record store: SQLAlchemy 2.x over SQLite by default, any SQLAlchemy URL.

Records are the source of truth. Every write commits its rows and an outbox row per
affected memory in ONE transaction; the caller then applies the outbox to Qdrant and
the graph and marks it applied. Rows left pending after a crash are replayed later.

Per-call reads of the progressive loader stay bounded by their limit, not by the size
of the namespace (schema v4): every row stores its topic key and token count, written
with the row; ``hm_namespace_totals`` holds each namespace's active-memory count and
token total. The totals are a running sum, not a query: ``SUM(tokens)`` over an index
would still visit every row of the namespace (linear in N), while one primary-key row
costs O(1) to read. Every change of a row's status, content or existence goes through
``add_items``, ``update_item`` or ``delete_items``, and each applies its delta to the
totals in the SAME transaction as the rows, so a rollback or crash can never leave
them out of step; ``recount_totals`` rebuilds them from the rows (a repair, O(N)).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import (
    Engine,
    MetaData,
    TextClause,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DataError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from hello_memory.errors import (
    BackendUnavailableError,
    InvalidInputError,
    NotFoundError,
    RecordStoreError,
)
from hello_memory.stores.records.migrations import migrate
from hello_memory.stores.records.models import (
    EXPRESSION_CHARS,
    TOPIC_CHARS,
    AuditRow,
    ChunkRow,
    DocumentRow,
    MemoryRow,
    MemoryTimeRow,
    NamespaceTotalsRow,
    OutboxRow,
    RagOutboxRow,
)
from hello_memory.text.facts import fact_key
from hello_memory.text.timeparse import TimeRange, find_time_ranges
from hello_memory.text.tokens import default_token_counter
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, Modality, utcnow
from hello_memory.validation import require_namespace, validate_item

__all__ = ["ChunkRecord", "DocumentRecord", "ItemFilter", "OutboxEntry", "RecordStore",
           "item_topic", "topic_for"]

# list_items orders: oldest event first (the default), newest first, most important
# first (newer first among equals; served by ix_items_ns_type_importance).
ItemOrder = Literal["event_time", "-event_time", "-importance"]

# Fields callers may change with update(); id/namespace/recorded_time never change.
_UPDATABLE = {
    "content", "content_hash", "importance", "metadata", "status", "memory_type",
    "event_time", "user_id", "agent_id", "session_id", "access_count", "last_access",
    "valid_from", "valid_to", "superseded_by",
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
    # Validity (issue 15): ``as_of`` keeps the memories true at that time
    # (valid_from <= as_of < valid_to); without it, ``current`` True keeps only those
    # still true (valid_to NULL: not superseded), False every one. ``current`` None
    # follows ``status``: the default (active) keeps the current ones, ``status=None``
    # ("every memory": export, reconcile, reindex) keeps superseded ones too.
    as_of: datetime | None = None
    current: bool | None = None

    def only_current(self) -> bool:
        """Whether memories no longer true (superseded) are left out."""
        if self.as_of is not None:
            return False
        return self.status is not None if self.current is None else self.current


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


def _to_item(row: MemoryRow) -> MemoryItem:
    return MemoryItem(
        id=row.id, namespace=row.namespace, content=row.content,
        memory_type=MemoryType(row.memory_type), modality=Modality(row.modality),
        user_id=row.user_id, agent_id=row.agent_id, session_id=row.session_id,
        event_time=row.event_time, recorded_time=row.recorded_time,
        importance=row.importance, access_count=row.access_count,
        last_access=row.last_access, status=MemoryStatus(row.status),
        metadata=dict(row.metadata_ or {}), content_hash=row.content_hash,
        valid_from=row.valid_from or row.event_time, valid_to=row.valid_to,
        superseded_by=row.superseded_by,
    )


def topic_for(metadata: Any, session_id: str | None, memory_id: str) -> str:
    """The topic key of a memory: ``metadata["topic"]`` (on one line) when set, else
    its ``session_id``, else its own id (the progressive loader's grouping)."""
    topic = metadata.get("topic") if isinstance(metadata, dict) else None
    if topic is not None and str(topic).strip():
        return " ".join(str(topic).split())  # keys are printed in one-line index entries
    return session_id or memory_id


def item_topic(item: MemoryItem) -> str:
    return topic_for(item.metadata, item.session_id, item.id)


def count_tokens(content: str) -> int:
    """The stored ``tokens`` of a memory: the default token counter's count."""
    return default_token_counter().count(content)


# The time expressions of a memory are looked for in its first MENTION_CHARS characters
# (the parser costs about 1 ms per 600 characters; a memory is a thought, not a book).
MENTION_CHARS = 20_000
# The longest mention a range query looks back for: a year (and a leap day).
MENTION_SPAN_DAYS = 366


def mentioned_times(content: str, event_time: datetime) -> list[TimeRange]:
    """The time ranges ``content`` mentions, resolved against ``event_time`` by the same
    en + zh rules the retriever reads questions with (hello_memory/text/timeparse.py):
    "yesterday" in a memory of 2023-05-08 is 2023-05-07 (issue 15, times from the text)."""
    return find_time_ranges(content[:MENTION_CHARS], event_time)


def _time_rows(item: MemoryItem) -> list[dict[str, Any]]:
    return [{"memory_id": item.id, "namespace": item.namespace, "start_time": r.start,
             "end_time": r.end, "granularity": r.granularity,
             "expression": r.text[:EXPRESSION_CHARS]}
            for r in mentioned_times(item.content, item.event_time)]


def _to_row(item: MemoryItem) -> MemoryRow:
    return MemoryRow(
        id=item.id, namespace=item.namespace, content=item.content,
        content_hash=item.content_hash, memory_type=item.memory_type.value,
        modality=item.modality.value, user_id=item.user_id, agent_id=item.agent_id,
        session_id=item.session_id, event_time=item.event_time,
        recorded_time=item.recorded_time, importance=item.importance,
        access_count=item.access_count, last_access=item.last_access,
        status=item.status.value, metadata_=item.metadata,
        topic=item_topic(item)[:TOPIC_CHARS], tokens=count_tokens(item.content),
        valid_from=item.valid_from or item.event_time, valid_to=item.valid_to,
        superseded_by=item.superseded_by,
        fact_key=fact_key(item.content, item.metadata, item.user_id),
    )


@lru_cache(maxsize=128)
def _topics_sql(n: int) -> TextClause:
    """The ids of the newest active memories of ``n`` topics (``:t0`` .. ``:t{n-1}``),
    ``:k`` each: one index search per topic. Plain SQL, built once per ``n``: building
    the same statement as 20 SQLAlchemy subqueries costs more than running it."""
    # Superseded memories (valid_to set, issue 15) are no longer true: left out, as
    # ItemFilter's default leaves them out of every other read.
    one = ("SELECT id FROM (SELECT id FROM hm_memory_items WHERE namespace = :ns AND "
           "topic = :t{n} AND status = :active AND valid_to IS NULL "
           "ORDER BY event_time DESC LIMIT :k) AS q{n}")
    return text(" UNION ALL ".join(one.format(n=i) for i in range(n)))


def _active(status: str | MemoryStatus) -> bool:
    return MemoryStatus(status) is MemoryStatus.ACTIVE


def _bump_totals(s: Session, deltas: dict[str, list[int]]) -> None:
    """Add ``[items, tokens]`` deltas to each namespace's totals row (created at the
    first write): an atomic upsert where the dialect has one, so concurrent first
    writes of a namespace cannot collide."""
    dialect = s.get_bind().dialect.name
    for ns, (n, tokens) in deltas.items():
        if n == 0 and tokens == 0:
            continue
        grow = {"items": NamespaceTotalsRow.items + n, "tokens": NamespaceTotalsRow.tokens + tokens}
        if dialect in ("sqlite", "postgresql"):
            ins = (sqlite_insert if dialect == "sqlite" else pg_insert)(NamespaceTotalsRow)
            s.execute(ins.values(namespace=ns, items=n, tokens=tokens)
                      .on_conflict_do_update(index_elements=["namespace"], set_=grow))
            continue
        done = s.execute(update(NamespaceTotalsRow)
                         .where(NamespaceTotalsRow.namespace == ns).values(**grow))
        if not done.rowcount:  # type: ignore[attr-defined]
            s.execute(insert(NamespaceTotalsRow).values(namespace=ns, items=n, tokens=tokens))


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


def _codepoints(column: Any, dialect: str) -> Any:
    """``column`` ordered by code point, as SQLite (BINARY) and Python order text: a
    PostgreSQL database's collation may ignore punctuation (glibc's en_US.UTF-8)."""
    return column.collate("C") if dialect == "postgresql" else column


class RecordStore:
    """Typed records in a relational database. ``open()`` creates or upgrades the schema."""

    def __init__(self, url: str, *, echo: bool = False, mention_times: bool = True) -> None:
        self.url = url
        self._echo = echo
        # Whether writes store the time ranges a memory's text mentions (hm_memory_times,
        # the ``memory.times_from_text`` setting); reads work either way.
        self.mention_times = mention_times
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
            rows = [_to_row(i) for i in items]
            s.add_all(rows)
            if self.mention_times:
                times = [t for i in items for t in _time_rows(i)]
                if times:  # after the rows they point to; one executemany
                    s.flush()
                    s.execute(insert(MemoryTimeRow), times)
            deltas: dict[str, list[int]] = {}
            for row in rows:
                if _active(row.status):
                    d = deltas.setdefault(row.namespace, [0, 0])
                    d[0] += 1
                    d[1] += row.tokens
            _bump_totals(s, deltas)
            boxes = [OutboxRow(op="upsert", namespace=i.namespace, memory_id=i.id, created_at=now)
                     for i in items]
            s.add_all(boxes)
            s.flush()
            return [b.seq for b in boxes]

    def get_items(self, namespace: str, ids: Sequence[str]) -> list[MemoryItem]:
        """Items by id within ``namespace`` (missing ids are left out), in ``ids`` order."""
        require_namespace(namespace)
        # Looked up by primary key alone, the namespace checked on the rows: with
        # ``namespace = ? AND id IN (...)`` SQLite picks a namespace index and scans the
        # whole namespace (50 ms per search at 100k memories instead of 0.2 ms).
        with self.transaction() as s:
            rows = s.scalars(select(MemoryRow).where(MemoryRow.id.in_(ids))).all()
        by_id = {r.id: _to_item(r) for r in rows if r.namespace == namespace}
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
        if flt.as_of is not None:
            conds.append(func.coalesce(MemoryRow.valid_from, MemoryRow.event_time) <= flt.as_of)
            conds.append(MemoryRow.valid_to.is_(None) | (MemoryRow.valid_to > flt.as_of))
        elif flt.only_current():
            conds.append(MemoryRow.valid_to.is_(None))
        return conds

    def list_items(
        self, namespace: str, flt: ItemFilter = ItemFilter(), *, limit: int | None = None,
        offset: int = 0, order: ItemOrder = "event_time",
    ) -> list[MemoryItem]:
        """Items matching ``flt``, oldest event first; ``order="-event_time"``: newest
        first; ``"-importance"``: most important first, newer first among equals (with
        one memory type and a ``limit``, read off an index: bounded by the limit)."""
        orders: dict[str, tuple[Any, ...]] = {
            "event_time": (MemoryRow.event_time, MemoryRow.id),
            "-event_time": (MemoryRow.event_time.desc(), MemoryRow.id.desc()),
            "-importance": (MemoryRow.importance.desc(), MemoryRow.event_time.desc()),
        }
        if order not in orders:
            raise InvalidInputError(f"order must be one of {sorted(orders)}, got {order!r}")
        q = (select(MemoryRow).where(*self._where(namespace, flt))
             .order_by(*orders[order]).offset(offset).limit(limit))
        with self.transaction() as s:
            return [_to_item(r) for r in s.scalars(q).all()]

    def recent_by_topic(self, namespace: str, topics: Sequence[str], limit: int
                        ) -> dict[str, list[MemoryItem]]:
        """The ``limit`` newest active memories of each topic key (see :func:`topic_for`),
        newest first. One statement: a UNION ALL of one LIMIT search per topic on
        ix_items_ns_topic, then the rows by primary key, so the cost follows
        ``len(topics) * limit``, not the namespace's size."""
        require_namespace(namespace)
        keys = list(dict.fromkeys(topics))
        out: dict[str, list[MemoryItem]] = {t: [] for t in keys}
        if limit <= 0 or not keys:
            return out
        with self.transaction() as s:
            ids: list[str] = []
            for start in range(0, len(keys), 100):  # SQLite allows 500 compound terms
                chunk = keys[start:start + 100]
                params: dict[str, Any] = {f"t{n}": key[:TOPIC_CHARS] for n, key in enumerate(chunk)}
                params.update(ns=namespace, active=MemoryStatus.ACTIVE.value, k=limit)
                ids += s.scalars(_topics_sql(len(chunk)), params).all()
            rows = s.scalars(select(MemoryRow).where(MemoryRow.id.in_(ids))).all() if ids else []
        for item in sorted(map(_to_item, rows), key=lambda i: (-i.event_time.timestamp(), i.id)):
            key = item_topic(item)  # keys longer than the column share a prefix: exact
            if key in out and len(out[key]) < limit:
                out[key].append(item)
        return out

    def namespace_totals(self, namespace: str) -> tuple[int, int]:
        """(active memories, their tokens) of ``namespace``: one primary-key read."""
        require_namespace(namespace)
        with self.transaction() as s:
            row = s.get(NamespaceTotalsRow, namespace)
            return (row.items, row.tokens) if row is not None else (0, 0)

    def recount_totals(self, namespace: str | None = None) -> dict[str, tuple[int, int]]:
        """Rebuild the totals of one namespace (every one when None) from the rows:
        a repair for totals edited out of band, linear in the rows; returns them."""
        if namespace is not None:
            require_namespace(namespace)
        q = (select(MemoryRow.namespace, func.count(), func.coalesce(func.sum(MemoryRow.tokens), 0))
             .where(MemoryRow.status == MemoryStatus.ACTIVE.value).group_by(MemoryRow.namespace))
        clear = delete(NamespaceTotalsRow)
        if namespace is not None:
            q = q.where(MemoryRow.namespace == namespace)
            clear = clear.where(NamespaceTotalsRow.namespace == namespace)
        with self.transaction() as s:
            counted = {ns: (int(n), int(t)) for ns, n, t in s.execute(q)}
            s.execute(clear)
            s.add_all([NamespaceTotalsRow(namespace=ns, items=n, tokens=t)
                       for ns, (n, t) in counted.items()])
        return counted

    def session_orders(self, namespace: str, sessions: Sequence[str]
                       ) -> dict[str, tuple[str, ...]]:
        """Active memory ids of each session in ``sessions``, in event-time, then
        recorded-time order (ids only: the neighbour context of retrieval)."""
        require_namespace(namespace)
        wanted = list(dict.fromkeys(sessions))
        if not wanted:
            return {}
        q = (select(MemoryRow.session_id, MemoryRow.id)
             .where(MemoryRow.namespace == namespace, MemoryRow.session_id.in_(wanted),
                    MemoryRow.status == MemoryStatus.ACTIVE.value)
             .order_by(MemoryRow.session_id, MemoryRow.event_time, MemoryRow.recorded_time,
                       MemoryRow.id))
        out: dict[str, list[str]] = {sess: [] for sess in wanted}
        with self.transaction() as s:
            for sess, memory_id in s.execute(q):
                out[str(sess)].append(memory_id)
        return {sess: tuple(ids) for sess, ids in out.items()}

    def same_fact(self, namespace: str, key: str) -> list[MemoryItem]:
        """Active memories of ``namespace`` whose content states the fact ``key``
        (``subject|attribute``, hello_memory/text/facts.py), superseded ones too,
        oldest valid first: one read of ix_items_ns_fact_key."""
        require_namespace(namespace)
        q = (select(MemoryRow).where(MemoryRow.namespace == namespace,
                                     MemoryRow.fact_key == key,
                                     MemoryRow.status == MemoryStatus.ACTIVE.value)
             .order_by(MemoryRow.valid_from, MemoryRow.recorded_time, MemoryRow.id))
        with self.transaction() as s:
            return [_to_item(r) for r in s.scalars(q).all()]

    # duplicates and mentioned times (issue 15) ----------------------------------------
    def find_by_hash(self, namespace: str, hashes: Sequence[str]) -> list[MemoryItem]:
        """The active memories of ``namespace`` whose ``content_hash`` is one of
        ``hashes`` (any type, superseded ones included: the caller checks validity),
        oldest recorded first: one query on ix_items_ns_hash per 500 hashes, so an
        add_many of N memories costs one lookup, not N."""
        require_namespace(namespace)
        wanted = list(dict.fromkeys(h for h in hashes if h))
        rows: list[MemoryRow] = []
        with self.transaction() as s:
            for start in range(0, len(wanted), 500):
                # namespace and hash only, so the planner takes ix_items_ns_hash (with
                # the status / validity conditions it picks ix_items_ns_valid_to and
                # reads the whole namespace); the few rows found are checked here.
                rows += s.scalars(select(MemoryRow).where(
                    MemoryRow.namespace == namespace,
                    MemoryRow.content_hash.in_(wanted[start:start + 500]))).all()
        kept = [r for r in rows if _active(r.status)]
        kept.sort(key=lambda r: (r.recorded_time, r.id))
        return [_to_item(r) for r in kept]

    def mentioning(self, namespace: str, start: datetime, end: datetime,
                   flt: ItemFilter = ItemFilter(), *, limit: int = 1000) -> list[str]:
        """Ids of the memories matching ``flt`` whose text mentions a time overlapping
        ``[start, end)`` (hm_memory_times), at most ``limit``, latest mention first.
        Mentions starting more than MENTION_SPAN_DAYS before ``start`` are not looked at
        (a bounded range of ix_memory_times_ns_start, not every older mention): a
        mention longer than a year ("from 2010 to 2020") is stored but too vague to
        answer a question about one day of it."""
        q = (select(MemoryTimeRow.memory_id)
             .join(MemoryRow, MemoryRow.id == MemoryTimeRow.memory_id)
             .where(MemoryTimeRow.namespace == require_namespace(namespace),
                    MemoryTimeRow.start_time < end,
                    MemoryTimeRow.start_time >= start - timedelta(days=MENTION_SPAN_DAYS),
                    MemoryTimeRow.end_time > start,
                    *self._where(namespace, flt))
             .order_by(MemoryTimeRow.start_time.desc(), MemoryTimeRow.memory_id)
             .limit(4 * limit))
        with self.transaction() as s:
            return list(dict.fromkeys(s.scalars(q)))[:limit]

    def with_mentioned_times(self, namespace: str, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` whose text mentions any time (on ix_memory_times_memory)."""
        require_namespace(namespace)
        found: set[str] = set()
        wanted = list(dict.fromkeys(ids))
        with self.transaction() as s:
            for start in range(0, len(wanted), 500):
                found.update(s.scalars(select(MemoryTimeRow.memory_id).where(
                    MemoryTimeRow.memory_id.in_(wanted[start:start + 500]),
                    MemoryTimeRow.namespace == namespace)))
        return found

    def mentioned_times(self, namespace: str, memory_id: str) -> list[TimeRange]:
        """The time ranges stored for one memory, in start order."""
        require_namespace(namespace)
        with self.transaction() as s:
            rows = s.scalars(select(MemoryTimeRow).where(
                MemoryTimeRow.memory_id == memory_id, MemoryTimeRow.namespace == namespace)
                .order_by(MemoryTimeRow.start_time, MemoryTimeRow.id)).all()
            return [TimeRange(r.start_time, r.end_time, r.expression,
                              r.granularity)  # type: ignore[arg-type]
                    for r in rows]

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
            old_content, old_event = item.content, item.event_time
            before = (1, row.tokens) if _active(row.status) else (0, 0)
            for key, value in changes.items():
                setattr(item, key, value)
            content_changed = item.content != old_content
            if content_changed and "content_hash" not in changes:
                item.content_hash = None
            validate_item(item)
            new = _to_row(item)
            s.merge(new)
            if content_changed or item.event_time != old_event:
                # The mentioned times follow the text and the time it is read against.
                s.execute(delete(MemoryTimeRow).where(MemoryTimeRow.memory_id == memory_id))
                times = _time_rows(item) if self.mention_times else []
                if times:
                    s.flush()
                    s.execute(insert(MemoryTimeRow), times)
            after = (1, new.tokens) if _active(new.status) else (0, 0)
            _bump_totals(s, {namespace: [after[0] - before[0], after[1] - before[1]]})
            # New content must be re-embedded and re-extracted; anything else only
            # changes the vector's payload.
            s.add(OutboxRow(op="upsert" if content_changed else "payload", namespace=namespace,
                            memory_id=memory_id, created_at=utcnow()))
        return item

    def delete_items(self, namespace: str, ids: Sequence[str]) -> int:
        """Delete items of ``namespace`` by id and queue index deletions; returns count."""
        require_namespace(namespace)
        with self.transaction() as s:
            rows = s.execute(select(MemoryRow.id, MemoryRow.status, MemoryRow.tokens).where(
                MemoryRow.namespace == namespace, MemoryRow.id.in_(ids))).all()
            found = [r.id for r in rows]
            if not found:
                return 0
            s.execute(delete(MemoryTimeRow).where(MemoryTimeRow.memory_id.in_(found)))
            s.execute(delete(MemoryRow).where(MemoryRow.namespace == namespace,
                                              MemoryRow.id.in_(found)))
            gone = [r.tokens for r in rows if _active(r.status)]
            _bump_totals(s, {namespace: [-len(gone), -sum(gone)]})
            now = utcnow()
            s.add_all([OutboxRow(op="delete", namespace=namespace, memory_id=i, created_at=now)
                       for i in found])
        return len(found)

    def record_access(self, namespace: str, ids: Sequence[str]) -> None:
        """Bump access counts (search hits); does not touch the indexes."""
        require_namespace(namespace)
        with self.transaction() as s:  # primary-key lookups only (see get_items)
            mine = [i for i, ns in s.execute(select(MemoryRow.id, MemoryRow.namespace)
                                             .where(MemoryRow.id.in_(ids))) if ns == namespace]
            if mine:
                s.execute(update(MemoryRow).where(MemoryRow.id.in_(mine))
                          .values(access_count=MemoryRow.access_count + 1,
                                  last_access=utcnow()))

    def namespaces(self) -> list[str]:
        with self.transaction() as s:
            return sorted(s.scalars(select(MemoryRow.namespace).distinct()).all())

    def gauges(self) -> dict[str, dict[Any, int]]:
        """Store-wide counts for monitoring (docs/OBSERVABILITY.md): memories by
        ``(memory_type, status)`` and pending outbox rows by kind; no namespace."""
        with self.transaction() as s:
            memories = {(str(t), str(st)): int(n) for t, st, n in s.execute(
                select(MemoryRow.memory_type, MemoryRow.status, func.count())
                .group_by(MemoryRow.memory_type, MemoryRow.status))}
            outbox = {kind: int(s.scalar(select(func.count()).select_from(row)
                                         .where(row.applied_at.is_(None))) or 0)
                      for kind, row in (("memory", OutboxRow), ("chunk", RagOutboxRow))}
        return {"memories": memories, "outbox": outbox}

    def all_ids(self, namespace: str) -> set[str]:
        require_namespace(namespace)
        with self.transaction() as s:
            return set(s.scalars(select(MemoryRow.id).where(MemoryRow.namespace == namespace)))

    # outbox ------------------------------------------------------------------------
    def pending_outbox(self, limit: int = 1000, *, after: int = 0) -> list[OutboxEntry]:
        """Unapplied rows in write order, from sequence number ``after`` on (exclusive)."""
        with self.transaction() as s:
            rows = s.scalars(select(OutboxRow).where(OutboxRow.applied_at.is_(None),
                                                     OutboxRow.seq > after)
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

    # documents and chunks (RAG) ----------------------------------------------------
    # Chunk writes follow the memory write path: rows and their hm_rag_outbox rows
    # commit in one transaction; the RAG pipeline then applies the outbox to Qdrant.
    def find_document(self, namespace: str, document: str) -> DocumentRecord | None:
        """A document of ``namespace`` by id or by source path."""
        require_namespace(namespace)
        with self.transaction() as s:
            row = s.scalar(select(DocumentRow).where(
                DocumentRow.namespace == namespace,
                (DocumentRow.id == document) | (DocumentRow.source_path == document)))
            return _to_document(row) if row is not None else None

    def list_documents(self, namespace: str) -> list[DocumentRecord]:
        require_namespace(namespace)
        with self.transaction() as s:
            rows = s.scalars(select(DocumentRow).where(DocumentRow.namespace == namespace)
                             .order_by(_codepoints(DocumentRow.source_path,
                                                   self.engine.dialect.name))).all()
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
        now = utcnow()
        with self.transaction() as s:
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
            boxes = ([RagOutboxRow(op="delete", namespace=doc.namespace, chunk_id=i,
                                   created_at=now) for i in old]
                     + [RagOutboxRow(op="upsert", namespace=doc.namespace, chunk_id=c.id,
                                     created_at=now) for c in chunks])
            s.add_all(boxes)
            s.flush()
            return [b.seq for b in boxes], list(old)

    def delete_documents(self, namespace: str, document_ids: Sequence[str]) -> tuple[int, int]:
        """Delete documents with their chunks, queueing vector deletes; returns
        (documents, chunks) deleted."""
        require_namespace(namespace)
        with self.transaction() as s:
            docs = s.scalars(select(DocumentRow.id).where(
                DocumentRow.namespace == namespace, DocumentRow.id.in_(document_ids))).all()
            if not docs:
                return 0, 0
            chunks = s.scalars(select(ChunkRow.id).where(
                ChunkRow.namespace == namespace, ChunkRow.document_id.in_(docs))).all()
            s.execute(delete(ChunkRow).where(ChunkRow.namespace == namespace,
                                             ChunkRow.document_id.in_(docs)))
            s.execute(delete(DocumentRow).where(DocumentRow.namespace == namespace,
                                                DocumentRow.id.in_(docs)))
            now = utcnow()
            s.add_all([RagOutboxRow(op="delete", namespace=namespace, chunk_id=i, created_at=now)
                       for i in chunks])
        return len(docs), len(chunks)

    def get_chunks(self, namespace: str, ids: Sequence[str]) -> list[ChunkRecord]:
        """Chunks by id within ``namespace`` (missing ids left out), in ``ids`` order,
        each with its document's source path."""
        require_namespace(namespace)
        if not ids:
            return []
        with self.transaction() as s:
            rows = s.execute(
                select(ChunkRow, DocumentRow.source_path)
                .join(DocumentRow, DocumentRow.id == ChunkRow.document_id)
                .where(ChunkRow.namespace == namespace, ChunkRow.id.in_(list(ids)))).all()
        by_id = {row.id: _to_chunk(row, path) for row, path in rows}
        return [by_id[i] for i in ids if i in by_id]

    def document_chunks(self, namespace: str, document_id: str) -> list[ChunkRecord]:
        require_namespace(namespace)
        with self.transaction() as s:
            rows = s.execute(
                select(ChunkRow, DocumentRow.source_path)
                .join(DocumentRow, DocumentRow.id == ChunkRow.document_id)
                .where(ChunkRow.namespace == namespace, ChunkRow.document_id == document_id)
                .order_by(ChunkRow.ordinal)).all()
        return [_to_chunk(row, path) for row, path in rows]

    def document_stats(self, namespace: str) -> dict[str, int]:
        """Counts of documents, chunks and chunk tokens in ``namespace``."""
        require_namespace(namespace)
        with self.transaction() as s:
            docs = s.scalar(select(func.count()).select_from(DocumentRow)
                            .where(DocumentRow.namespace == namespace))
            chunks, tokens = s.execute(
                select(func.count(), func.coalesce(func.sum(ChunkRow.token_count), 0))
                .where(ChunkRow.namespace == namespace)).one()
        return {"documents": int(docs or 0), "chunks": int(chunks), "tokens": int(tokens)}

    def all_chunk_ids(self, namespace: str) -> set[str]:
        require_namespace(namespace)
        with self.transaction() as s:
            return set(s.scalars(select(ChunkRow.id).where(ChunkRow.namespace == namespace)))

    def pending_rag_outbox(self, limit: int = 1000, *, namespace: str | None = None
                           ) -> list[OutboxEntry]:
        """Unapplied chunk index operations, oldest first (``memory_id`` is the chunk
        id); of one namespace when given, else of all (the replay needs them all)."""
        q = select(RagOutboxRow).where(RagOutboxRow.applied_at.is_(None))
        if namespace is not None:
            q = q.where(RagOutboxRow.namespace == require_namespace(namespace))
        with self.transaction() as s:
            rows = s.scalars(q.order_by(RagOutboxRow.seq).limit(limit)).all()
            return [OutboxEntry(r.seq, r.op, r.namespace, r.chunk_id) for r in rows]

    def mark_rag_applied(self, seqs: Sequence[int]) -> None:
        if not seqs:
            return
        with self.transaction() as s:
            s.execute(update(RagOutboxRow).where(RagOutboxRow.seq.in_(list(seqs)))
                      .values(applied_at=utcnow()))

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
        return counts


def _rowcount(result: Any) -> int:
    """Rows a DELETE touched (a CursorResult's rowcount; 0 where the driver says -1)."""
    return max(0, int(getattr(result, "rowcount", 0) or 0))
