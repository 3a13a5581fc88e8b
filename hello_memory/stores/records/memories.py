"""Memory items: the rows of ``hm_memory_items``, the time ranges their text mentions
(``hm_memory_times``) and each namespace's running totals (``hm_namespace_totals``).

Per-call reads of the progressive loader stay bounded by their limit, not by the size
of the namespace (schema v4): every row stores its topic key and token count, written
with the row; ``hm_namespace_totals`` holds each namespace's active-memory count and
token total. The totals are a running sum, not a query: ``SUM(tokens)`` over an index
would still visit every row of the namespace (linear in N), while one primary-key row
costs O(1) to read. Every change of a row's status, content or existence goes through
``add_items``, ``update_item`` or ``delete_items``, and each applies its delta to the
totals and writes its outbox rows in the SAME transaction as the rows (ARCHITECTURE
decision 1), so a rollback or crash can never leave them out of step;
``recount_totals`` rebuilds them from the rows (a repair, O(N)).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, cast

from sqlalchemy import (
    Table,
    TextClause,
    and_,
    bindparam,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from hello_memory.errors import InvalidInputError, NotFoundError, RecordStoreError
from hello_memory.stores.records.access import AccessLog, Pending
from hello_memory.stores.records.models import (
    EXPRESSION_CHARS,
    TOPIC_CHARS,
    MemoryRow,
    MemoryTimeRow,
    NamespaceTotalsRow,
    UTCDateTime,
)
from hello_memory.stores.records.outbox import OutboxEntry, kind_of
from hello_memory.text.facts import fact_key
from hello_memory.text.timeparse import TimeRange, mentioned_ranges
from hello_memory.text.tokens import default_token_counter
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, Modality, utcnow
from hello_memory.validation import require_namespace, validate_item

if TYPE_CHECKING:
    from hello_memory.stores.records.store import RecordStore

__all__ = ["DuplicateKeyError", "ItemFilter", "ItemOrder", "MemoryRepository",
           "WriteConflictError", "count_tokens", "dedup_key", "item_topic",
           "mentioned_times", "topic_for"]


class WriteConflictError(RecordStoreError):
    """A compare-and-swap write found the row changed (or gone) since the version the
    caller read (schema v7 ``version``); nothing of the write was committed. Callers
    that pass an expected version catch it: they re-read, or leave the memory for the
    next run (memory/lifecycle.py)."""


class DuplicateKeyError(RecordStoreError):
    """An add with ``keyed=True`` found a current memory holding the same dedup key
    (an identical add committed first); nothing of the batch was committed. The add
    path catches it and returns the memory stored first (memory/dedup.py)."""


def dedup_key(item: MemoryItem) -> str:
    """The idempotent add's key of a memory within its namespace (schema v7,
    ``ux_items_ns_dedup_key``): SHA-256 of its type, its ``user_id`` and its
    ``content_hash`` (issue 28: one user's memory is never another's duplicate)."""
    assert item.content_hash is not None  # validate_item set it
    raw = json.dumps([MemoryType(item.memory_type).value, item.user_id, item.content_hash])
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def _keeps_key(before: MemoryItem, after: MemoryItem) -> bool:
    """Whether an updated memory is still the current active memory of the same key
    (else its key is released: a forgotten, superseded or rewritten memory no longer
    stands for that content)."""
    return (after.status == MemoryStatus.ACTIVE and after.valid_to is None
            and dedup_key(before) == dedup_key(after))

# first (newer first among equals; served by ix_items_ns_type_importance).
ItemOrder = Literal["event_time", "-event_time", "-importance"]

# Fields callers may change with update(); id/namespace/recorded_time never change.
_UPDATABLE = {
    "content", "content_hash", "importance", "metadata", "status", "memory_type",
    "event_time", "user_id", "agent_id", "session_id", "access_count", "last_access",
    "valid_from", "valid_to", "superseded_by",
}




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

# The columns an update rewrites from the item (the key, the version and the identity
# columns are the update's own business).
_ROW_ATTRS = ("content", "content_hash", "memory_type", "modality", "user_id", "agent_id",
              "session_id", "event_time", "importance", "access_count", "last_access",
              "status", "metadata_", "topic", "tokens", "valid_from", "valid_to",
              "superseded_by", "fact_key")


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
        superseded_by=row.superseded_by, version=row.version or 1,
    )


# The columns an item is built from, read as plain rows (no ORM objects): building
# ~100 ORM rows per search cost a third more than the rows themselves (issue 27).
_ITEM_COLUMNS = (MemoryRow.id, MemoryRow.namespace, MemoryRow.content, MemoryRow.memory_type,
                 MemoryRow.modality, MemoryRow.user_id, MemoryRow.agent_id,
                 MemoryRow.session_id, MemoryRow.event_time, MemoryRow.recorded_time,
                 MemoryRow.importance, MemoryRow.access_count, MemoryRow.last_access,
                 MemoryRow.status, MemoryRow.metadata_, MemoryRow.content_hash,
                 MemoryRow.valid_from, MemoryRow.valid_to, MemoryRow.superseded_by,
                 MemoryRow.version)


def _row_item(row: Any) -> MemoryItem:
    """:func:`_to_item` of a row of :data:`_ITEM_COLUMNS`."""
    (memory_id, namespace, content, memory_type, modality, user_id, agent_id, session_id,
     event_time, recorded_time, importance, access_count, last_access, status, metadata,
     content_hash, valid_from, valid_to, superseded_by, version) = row
    return MemoryItem(
        id=memory_id, namespace=namespace, content=content,
        memory_type=MemoryType(memory_type), modality=Modality(modality),
        user_id=user_id, agent_id=agent_id, session_id=session_id,
        event_time=event_time, recorded_time=recorded_time,
        importance=importance, access_count=access_count,
        last_access=last_access, status=MemoryStatus(status),
        metadata=dict(metadata or {}), content_hash=content_hash,
        valid_from=valid_from or event_time, valid_to=valid_to,
        superseded_by=superseded_by, version=version or 1,
    )


def _with_access(items: list[MemoryItem], pending: Pending, *, shared: bool = False
                 ) -> list[MemoryItem]:
    """``items`` with the accesses still waiting in the log (access.py) counted: a
    fresh item is changed in place (once, however often a list holds it), a shared one
    (item_cache.py) copied first."""
    out: list[MemoryItem] = []
    done: set[int] = set()
    for item in items:
        entry = pending.get((item.namespace, item.id))
        if entry is not None:
            if shared:
                item = copy.copy(item)
            if id(item) not in done:
                done.add(id(item))
                item.access_count += entry[0]
                item.last_access = entry[1]
        out.append(item)
    return out


def _order_by(order: str) -> tuple[Any, ...]:
    orders: dict[str, tuple[Any, ...]] = {
        "event_time": (MemoryRow.event_time, MemoryRow.id),
        "-event_time": (MemoryRow.event_time.desc(), MemoryRow.id.desc()),
        "-importance": (MemoryRow.importance.desc(), MemoryRow.event_time.desc()),
    }
    if order not in orders:
        raise InvalidInputError(f"order must be one of {sorted(orders)}, got {order!r}")
    return orders[order]


# The fields a write may set that the access log also writes.
_ACCESS_FIELDS = frozenset({"access_count", "last_access"})



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
# The longest mention that answers a question about a shorter time inside it (a trip,
# a week away), not a month or a year (RepositoryMemories.mentioning, issue 26).
SHORT_MENTION_DAYS = 14
# How far a mention may stick out of a question's range and still be inside it: less
# than a day, so the next day stays out, and more than any two UTC offsets of one place
# differ ("26 November" said in October, UTC+2, asked about in November, UTC+1).
MENTION_OFFSET_SLACK = timedelta(hours=12)
# A Han character, as a regular expression both SQLite (through SQLAlchemy) and
# PostgreSQL read (the two main Han blocks of text/tokenize.py).
_HAN_CLASS = "[\u3400-\u9fff]"


def mentioned_times(content: str, event_time: datetime) -> list[TimeRange]:
    """The time ranges ``content`` mentions, resolved against ``event_time`` by the same
    en + zh rules the retriever reads questions with (hello_memory/text/timeparse.py):
    "yesterday" in a memory of 2023-05-08 is 2023-05-07 (issue 15, times from the text);
    a date without a year points the way its wording does ("dentist on 9 December",
    said in November, is this December: ``timeparse.mentioned_ranges``, issue 26)."""
    return mentioned_ranges(content[:MENTION_CHARS], event_time)


def _shifted(when: datetime, by: timedelta) -> datetime:
    """``when + by``, held at the calendar's ends (a question "since 0001-01-01" asks
    about all of time, not an OverflowError)."""
    try:
        return when + by
    except OverflowError:
        return when.replace(year=1, month=1, day=1) if by < timedelta(0) else when.replace(
            year=9999, month=12, day=31)


def mention_time_rows(item: MemoryItem) -> list[dict[str, Any]]:
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


class MemoryRepository:
    """The memory items of a :class:`RecordStore` (``records.memories``); its
    transactions are the store's, so a write and its outbox rows commit together."""

    def __init__(self, records: RecordStore) -> None:
        self._records = records
        # Search hits' accesses, written off the request path (access.py).
        self.access_log = AccessLog(self._write_access)

    # the in-process record cache (item_cache.py): on where this process holds the records
    def _invalidate(self, namespace: str, ids: Sequence[str] | None = None) -> None:
        cache = self._records.item_cache
        if cache is not None:
            cache.invalidate(namespace, ids)

    def forget_namespace(self, namespace: str, *, deleted: bool) -> None:
        """After a transaction that deleted (``deleted``), or may have deleted, every
        record of ``namespace`` (``RecordStore.purge_namespace``)."""
        self._invalidate(namespace)
        if deleted:
            self.access_log.discard(namespace)

    def generation(self, namespace: str) -> tuple[int, int] | None:
        """A value that changes with every write this process commits to
        ``namespace`` (adds, updates, deletes; not the access bookkeeping), for caching
        what is derived from its records; None where other processes may write the
        records too (nothing derived may be cached then)."""
        cache = self._records.item_cache
        return None if cache is None else cache.namespace_generation(namespace)

    def _items_read(self, fetch: Callable[[], list[MemoryItem]], *, shared: bool = False
                    ) -> list[MemoryItem]:
        """``fetch()`` with the accesses still waiting counted (access.py)."""
        return self.access_log.read(
            fetch, lambda items, pending: _with_access(items, pending, shared=shared)
            if pending else items)

    def add_items(self, items: Sequence[MemoryItem], *, keyed: bool = False
                  ) -> list[OutboxEntry]:
        """Insert items and their outbox rows in one transaction; returns those rows (the
        write path applies them, :meth:`~hello_memory.stores.indexing.IndexEngine.apply_entries`).
        Every item is validated first: one bad item writes nothing. With ``keyed`` (the
        idempotent add) each current active item holds its :func:`dedup_key`; when a
        memory holding one of those keys is already committed, nothing is written and
        :class:`DuplicateKeyError` is raised (the unique index decides, so two
        processes racing on one PostgreSQL database are serialised too)."""
        for item in items:
            validate_item(item)
        ids = [i.id for i in items]
        if len(set(ids)) != len(ids):
            raise InvalidInputError("duplicate ids in one batch")
        try:
            return self._add_items(items, ids, keyed)
        finally:  # after the commit (or the rollback): the namespaces' listings changed
            for namespace in dict.fromkeys(i.namespace for i in items):
                self._invalidate(namespace, [i.id for i in items if i.namespace == namespace])

    def _add_items(self, items: Sequence[MemoryItem], ids: list[str], keyed: bool
                   ) -> list[OutboxEntry]:
        with self._records.transaction() as s:
            taken = s.scalars(select(MemoryRow.id).where(MemoryRow.id.in_(ids))).all()
            if taken:
                raise InvalidInputError(f"memory id already exists: {taken[0]}")
            rows = [_to_row(i) for i in items]
            if keyed:
                for item, row in zip(items, rows, strict=True):
                    if item.status == MemoryStatus.ACTIVE and item.valid_to is None:
                        row.dedup_key = dedup_key(item)
            s.add_all(rows)
            try:
                s.flush()  # the unique index speaks here, inside the transaction
            except IntegrityError as exc:
                if not keyed:
                    raise
                raise DuplicateKeyError("a memory with the same content, type and user "
                                        "was stored first") from exc
            if self._records.mention_times:
                times = [t for i in items for t in mention_time_rows(i)]
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
            # one "add" row per item, of its kind (ARCHITECTURE decision 1)
            return self._records.outbox.queue_items(s, "add", items)

    def get_items(self, namespace: str, ids: Sequence[str], *, shared: bool = False
                  ) -> list[MemoryItem]:
        """Items by id within ``namespace`` (missing ids are left out), in ``ids`` order.

        ``shared``: the caller only reads the items and never changes them (the
        search): they may come from the record cache (item_cache.py) where the store
        keeps one, and be the same objects other callers get."""
        require_namespace(namespace)
        cache = self._records.item_cache if shared else None
        if cache is None:
            return self._items_read(lambda: self._fetch_items(namespace, ids))

        def fetch() -> tuple[dict[str, MemoryItem], list[MemoryItem], int]:
            found, generation = cache.lookup(ids)
            missing = [i for i in dict.fromkeys(ids) if i not in found]
            fresh = self._fetch_rows(missing) if missing else []
            found.update((i.id, i) for i in fresh)
            return found, fresh, generation

        def apply(got: tuple[dict[str, MemoryItem], list[MemoryItem], int],
                  pending: Pending) -> list[MemoryItem]:
            found, fresh, generation = got
            # Filled only here: no flush committed since the rows were read, so they
            # hold the stored counts the cache must hold (see _write_access).
            if fresh:
                cache.fill(fresh, generation)
            items = [found[i] for i in ids if i in found and found[i].namespace == namespace]
            return _with_access(items, pending, shared=True) if pending else items

        return self.access_log.read(fetch, apply)

    def _fetch_rows(self, ids: Sequence[str]) -> list[MemoryItem]:
        """The records of ``ids``, whatever their namespace (the caller checks it)."""
        # Looked up by primary key alone, the namespace checked on the rows: with
        # ``namespace = ? AND id IN (...)`` SQLite picks a namespace index and scans the
        # whole namespace (50 ms per search at 100k memories instead of 0.2 ms).
        out: list[MemoryItem] = []
        with self._records.transaction() as s:
            for start in range(0, len(ids), 500):  # SQLite binds at most 999
                out += map(_row_item, s.execute(select(*_ITEM_COLUMNS).where(
                    MemoryRow.id.in_(ids[start:start + 500]))))
        return out

    def _fetch_items(self, namespace: str, ids: Sequence[str]) -> list[MemoryItem]:
        by_id = {i.id: i for i in self._fetch_rows(list(dict.fromkeys(ids)))
                 if i.namespace == namespace}
        return [by_id[i] for i in ids if i in by_id]

    def holds_cjk(self, namespace: str) -> bool:
        """Whether any memory of the namespace holds a Han character: one EXISTS query,
        which stops at the first (the multilingual view's switch, retrieval/hybrid.py).
        SQLAlchemy gives SQLite a REGEXP function; PostgreSQL has its own."""
        q = select(exists().where(MemoryRow.namespace == require_namespace(namespace),
                                  MemoryRow.content.regexp_match(_HAN_CLASS)))
        with self._records.transaction() as s:
            return bool(s.scalar(q))

    def ids_starting(self, namespace: str, prefix: str, *, limit: int = 2) -> list[str]:
        """Ids of this namespace's memories that start with ``prefix`` (a short handle,
        docs/TOOLS.md), at most ``limit``, in id order."""
        q = (select(MemoryRow.id)
             .where(MemoryRow.namespace == require_namespace(namespace),
                    MemoryRow.id >= prefix, MemoryRow.id.startswith(prefix, autoescape=True))
             .order_by(MemoryRow.id).limit(limit))
        with self._records.transaction() as s:
            return list(s.scalars(q))

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
        q = (select(*_ITEM_COLUMNS).where(*self._where(namespace, flt))
             .order_by(*_order_by(order)).offset(offset).limit(limit))

        def fetch() -> list[MemoryItem]:
            with self._records.transaction() as s:
                return [_row_item(r) for r in s.execute(q)]

        return self._items_read(fetch)

    def list_ids(self, namespace: str, flt: ItemFilter = ItemFilter(), *,
                 limit: int | None = None, order: ItemOrder = "event_time") -> list[str]:
        """The ids :meth:`list_items` would return, in its order (ids only: the
        records can then come from the record cache, ``get_items(..., shared=True)``)."""
        q = (select(MemoryRow.id).where(*self._where(namespace, flt))
             .order_by(*_order_by(order)).limit(limit))
        with self._records.transaction() as s:
            return list(s.scalars(q))

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
        def fetch() -> list[MemoryItem]:
            with self._records.transaction() as s:
                ids: list[str] = []
                for start in range(0, len(keys), 100):  # SQLite allows 500 compound terms
                    chunk = keys[start:start + 100]
                    params: dict[str, Any] = {f"t{n}": key[:TOPIC_CHARS]
                                              for n, key in enumerate(chunk)}
                    params.update(ns=namespace, active=MemoryStatus.ACTIVE.value, k=limit)
                    ids += s.scalars(_topics_sql(len(chunk)), params).all()
                rows = (s.scalars(select(MemoryRow).where(MemoryRow.id.in_(ids))).all()
                        if ids else [])
                return [_to_item(r) for r in rows]

        for item in sorted(self._items_read(fetch),
                           key=lambda i: (-i.event_time.timestamp(), i.id)):
            key = item_topic(item)  # keys longer than the column share a prefix: exact
            if key in out and len(out[key]) < limit:
                out[key].append(item)
        return out

    def namespace_totals(self, namespace: str) -> tuple[int, int]:
        """(active memories, their tokens) of ``namespace``: one primary-key read."""
        require_namespace(namespace)
        with self._records.transaction() as s:
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
        with self._records.transaction() as s:
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
        with self._records.transaction() as s:
            for sess, memory_id in s.execute(q):
                out[str(sess)].append(memory_id)
        return {sess: tuple(ids) for sess, ids in out.items()}

    def same_fact(self, namespace: str, key: str, *, around: datetime | None = None,
                  after: int = 32) -> list[MemoryItem]:
        """Active memories of ``namespace`` whose content states the fact ``key``
        (``subject|attribute``, hello_memory/text/facts.py), superseded ones too,
        oldest valid first: one read of ix_items_ns_fact_key. ``around``: only the
        window of the chain a memory valid from then can change (memory/supersede.py):
        those valid at that time (started then or before, not ended before it) and the
        first ``after`` that start after it."""
        require_namespace(namespace)
        base = (MemoryRow.namespace == namespace, MemoryRow.fact_key == key,
                MemoryRow.status == MemoryStatus.ACTIVE.value)
        order = (MemoryRow.valid_from, MemoryRow.recorded_time, MemoryRow.id)
        queries = [select(MemoryRow).where(*base).order_by(*order)]
        if around is not None:
            start = func.coalesce(MemoryRow.valid_from, MemoryRow.event_time)
            queries = [
                select(MemoryRow).where(*base, start <= around, or_(
                    MemoryRow.valid_to.is_(None), MemoryRow.valid_to >= around)
                ).order_by(*order),
                select(MemoryRow).where(*base, start > around)
                .order_by(start, MemoryRow.recorded_time, MemoryRow.id).limit(after)]

        def fetch() -> list[MemoryItem]:
            with self._records.transaction() as s:
                return [_to_item(r) for q in queries for r in s.scalars(q).all()]

        return self._items_read(fetch)

    # duplicates and mentioned times (issue 15) ----------------------------------------
    def find_by_hash(self, namespace: str, hashes: Sequence[str]) -> list[MemoryItem]:
        """The active memories of ``namespace`` whose ``content_hash`` is one of
        ``hashes`` (any type, superseded ones included: the caller checks validity),
        oldest recorded first: one query on ix_items_ns_hash per 500 hashes, so an
        add_many of N memories costs one lookup, not N."""
        require_namespace(namespace)
        wanted = list(dict.fromkeys(h for h in hashes if h))
        def fetch() -> list[MemoryItem]:
            rows: list[MemoryRow] = []
            with self._records.transaction() as s:
                for start in range(0, len(wanted), 500):
                    # namespace and hash only, so the planner takes ix_items_ns_hash
                    # (with the status / validity conditions it picks
                    # ix_items_ns_valid_to and reads the whole namespace); the few rows
                    # found are checked here.
                    rows += s.scalars(select(MemoryRow).where(
                        MemoryRow.namespace == namespace,
                        MemoryRow.content_hash.in_(wanted[start:start + 500]))).all()
            kept = [r for r in rows if _active(r.status)]
            kept.sort(key=lambda r: (r.recorded_time, r.id))
            return [_to_item(r) for r in kept]

        return self._items_read(fetch)

    def mentioning(self, namespace: str, start: datetime, end: datetime,
                   flt: ItemFilter = ItemFilter(), *, limit: int = 1000) -> list[str]:
        """Ids of the memories matching ``flt`` whose text mentions a time inside
        ``[start, end)`` (hm_memory_times), at most ``limit``, latest mention first.

        Inside means contained (issue 26), give or take MENTION_OFFSET_SLACK: "this
        year" or "in November" does not answer "what did I do last Thursday?", though it
        overlaps it. A short mention that holds the whole question range counts too (a
        trip "18-21 December" or a week answers "what am I doing on 19 December?"): a
        day, a week or a range of at most SHORT_MENTION_DAYS. Mentions starting more
        than MENTION_SPAN_DAYS before ``start`` are not looked at (a bounded range of
        ix_memory_times_ns_start)."""
        short = timedelta(days=SHORT_MENTION_DAYS)
        # a day written in another UTC offset (a plan said in summer time for a day in
        # winter time) is still that day: containment allows MENTION_OFFSET_SLACK
        slack = MENTION_OFFSET_SLACK
        inside = and_(MemoryTimeRow.start_time >= _shifted(start, -slack),
                      MemoryTimeRow.end_time <= _shifted(end, slack))
        holds = and_(MemoryTimeRow.start_time <= start, MemoryTimeRow.end_time >= end,
                     MemoryTimeRow.start_time >= _shifted(start, -short),
                     MemoryTimeRow.end_time <= _shifted(end, short),
                     MemoryTimeRow.granularity.in_(("instant", "day", "week", "range")))
        q = (select(MemoryTimeRow.memory_id)
             .join(MemoryRow, MemoryRow.id == MemoryTimeRow.memory_id)
             .where(MemoryTimeRow.namespace == require_namespace(namespace),
                    MemoryTimeRow.start_time < end,
                    MemoryTimeRow.start_time >= _shifted(start,
                                                         -timedelta(days=MENTION_SPAN_DAYS)),
                    MemoryTimeRow.end_time > start,
                    or_(inside, holds),
                    *self._where(namespace, flt))
             .order_by(MemoryTimeRow.start_time.desc(), MemoryTimeRow.memory_id)
             .limit(4 * limit))
        with self._records.transaction() as s:
            return list(dict.fromkeys(s.scalars(q)))[:limit]

    def with_mentioned_times(self, namespace: str, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` whose text mentions any time (on ix_memory_times_memory)."""
        require_namespace(namespace)
        found: set[str] = set()
        wanted = list(dict.fromkeys(ids))
        with self._records.transaction() as s:
            for start in range(0, len(wanted), 500):
                found.update(s.scalars(select(MemoryTimeRow.memory_id).where(
                    MemoryTimeRow.memory_id.in_(wanted[start:start + 500]),
                    MemoryTimeRow.namespace == namespace)))
        return found

    def mentioned_times(self, namespace: str, memory_id: str) -> list[TimeRange]:
        """The time ranges stored for one memory, in start order."""
        require_namespace(namespace)
        with self._records.transaction() as s:
            rows = s.scalars(select(MemoryTimeRow).where(
                MemoryTimeRow.memory_id == memory_id, MemoryTimeRow.namespace == namespace)
                .order_by(MemoryTimeRow.start_time, MemoryTimeRow.id)).all()
            return [TimeRange(r.start_time, r.end_time, r.expression,
                              r.granularity)  # type: ignore[arg-type]
                    for r in rows]

    def count_items(self, namespace: str, flt: ItemFilter = ItemFilter()) -> int:
        q = select(func.count()).select_from(MemoryRow).where(*self._where(namespace, flt))
        with self._records.transaction() as s:
            return int(s.scalar(q) or 0)

    def update_item(self, namespace: str, memory_id: str, **changes: Any) -> MemoryItem:
        """Change fields of one item and queue its re-index; returns the new item."""
        return self.update_queued(namespace, memory_id, **changes)[0]

    def update_queued(self, namespace: str, memory_id: str, *,
                      expect_version: int | None = None, **changes: Any
                      ) -> tuple[MemoryItem, list[OutboxEntry]]:
        """:meth:`update_item`, also returning the outbox rows its transaction wrote
        (the write path applies those, and only those).

        The row is rewritten by a compare-and-swap on its ``version`` (schema v7): the
        UPDATE holds only while the row is still the version this call read, so a
        concurrent writer's acknowledged change is never overwritten with a stale
        copy. Without ``expect_version`` a lost race is retried on the fresh row; with
        it (a job that decided on what it read) a row changed since that version
        raises :class:`WriteConflictError` and nothing is written. A row deleted in
        between is a :class:`NotFoundError`."""
        unknown = set(changes) - _UPDATABLE
        if unknown:
            raise InvalidInputError(f"cannot update field(s) {sorted(unknown)}")
        with self._access_settled(changes):
            start = self.access_log.stable()
            try:
                item, rows = self._update_retried(namespace, memory_id, changes,
                                                  expect_version)
            finally:  # after the commit (or the rollback)
                self._invalidate(namespace, [memory_id])
        return self._returned(namespace, [item], start)[0], rows

    @contextmanager
    def _access_settled(self, changes: Mapping[str, Any]) -> Iterator[None]:
        """Around a write that sets an access field itself: the accesses recorded
        before it are written first, and no flush commits until it has (else they
        would land on top of the value it sets)."""
        if not _ACCESS_FIELDS & set(changes):
            yield
            return
        with self.access_log.holding():
            self.access_log.flush()
            yield

    def _returned(self, namespace: str, items: list[MemoryItem], start: int
                  ) -> list[MemoryItem]:
        """Items a write built from the rows it read, their access fields made exact:
        read again (with the waiting accesses counted) when some of theirs wait or a
        flush committed since ``start`` (``AccessLog.stable``)."""
        if self.access_log.unchanged_since(start, [(namespace, i.id) for i in items]):
            return items
        fresh = {i.id: i for i in self._items_read(
            lambda: self._fetch_items(namespace, [i.id for i in items]))}
        for item in items:
            if item.id in fresh:
                item.access_count = fresh[item.id].access_count
                item.last_access = fresh[item.id].last_access
        return items

    def _update_retried(self, namespace: str, memory_id: str, changes: Mapping[str, Any],
                        expect_version: int | None) -> tuple[MemoryItem, list[OutboxEntry]]:
        raced = False
        while True:
            try:
                with self._records.transaction() as s:
                    return self._update(s, namespace, memory_id, changes, expect_version)
            except WriteConflictError:
                if expect_version is not None:
                    raise
                raced = True  # another writer committed between our read and write
            except NotFoundError:
                if not raced:
                    raise
                # Read, then deleted by another writer before the UPDATE ran: to this
                # caller the memory is gone, as if the delete had come first.
                raise NotFoundError(f"no memory {memory_id!r} in namespace {namespace!r} "
                                    "(deleted while it was being updated)") from None

    def _update(self, s: Session, namespace: str, memory_id: str, changes: Mapping[str, Any],
                expect_version: int | None) -> tuple[MemoryItem, list[OutboxEntry]]:
        row = s.scalar(select(MemoryRow).where(
            MemoryRow.namespace == require_namespace(namespace), MemoryRow.id == memory_id))
        if row is None:
            raise NotFoundError(f"no memory {memory_id!r} in namespace {namespace!r}")
        version = row.version or 1
        if expect_version is not None and version != expect_version:
            raise WriteConflictError(f"memory {memory_id!r} changed since version "
                                     f"{expect_version} (now {version})")
        item = _to_item(row)
        before_item = _to_item(row)
        old_content, old_event, old_type = item.content, item.event_time, item.memory_type
        before = (1, row.tokens) if _active(row.status) else (0, 0)
        for key, value in changes.items():
            setattr(item, key, value)
        content_changed = item.content != old_content
        if content_changed and "content_hash" not in changes:
            item.content_hash = None
        validate_item(item)
        new = _to_row(item)
        # Only the columns this update changes: a search's access count, bumped in
        # between without a version (bookkeeping), is not written back stale.
        values = {attr: getattr(new, attr) for attr in _ROW_ATTRS
                  if getattr(new, attr) != getattr(row, attr)}
        values["dedup_key"] = row.dedup_key if _keeps_key(before_item, item) else None
        done = s.execute(
            update(MemoryRow)
            .where(MemoryRow.id == memory_id, MemoryRow.namespace == namespace,
                   MemoryRow.version == version)
            .values(**values, version=version + 1)
            .execution_options(synchronize_session=False))
        if done.rowcount != 1:  # type: ignore[attr-defined]
            raise WriteConflictError(f"memory {memory_id!r} changed or was deleted while "
                                     "it was being updated")
        item.version = version + 1
        if content_changed or item.event_time != old_event:
            # The mentioned times follow the text and the time it is read against.
            s.execute(delete(MemoryTimeRow).where(MemoryTimeRow.memory_id == memory_id))
            times = mention_time_rows(item) if self._records.mention_times else []
            if times:
                s.execute(insert(MemoryTimeRow), times)
        after = (1, new.tokens) if _active(new.status) else (0, 0)
        _bump_totals(s, {namespace: [after[0] - before[0], after[1] - before[1]]})
        # New content must be re-embedded and re-extracted, a new type re-derives
        # the graph links (only semantic memories have any); anything else only
        # changes the vector's payload.
        op = "upsert" if content_changed or item.memory_type != old_type else "payload"
        kinds = dict.fromkeys((kind_of(old_type), kind_of(item.memory_type)))
        rows = [r for kind in kinds for r in self._records.outbox.queue_entries(
            s, op, [(namespace, memory_id)], kind)]
        return item, rows

    def delete_items(self, namespace: str, ids: Sequence[str]) -> int:
        """Delete items of ``namespace`` by id and queue index deletions; returns count."""
        return self.delete_queued(namespace, ids)[0]

    def delete_queued(self, namespace: str, ids: Sequence[str], *,
                      expect: Mapping[str, int] | None = None
                      ) -> tuple[int, list[OutboxEntry]]:
        """:meth:`delete_items`, also returning the outbox rows its transaction wrote.
        With ``expect`` (id -> the version the caller read) only the rows still at that
        version are deleted (a compare-and-swap: one updated since is kept, and is not
        among the returned rows' ``item_id``)."""
        require_namespace(namespace)
        try:
            with self._records.transaction() as s:
                done = self._delete(s, namespace, ids, expect, strict=False)
        finally:  # after the commit (or the rollback)
            self._invalidate(namespace, ids)
        gone = {e.item_id for e in done[1]} if expect is not None else None
        self.access_log.discard(namespace, [i for i in ids if gone is None or i in gone])
        return done

    def _delete(self, s: Session, namespace: str, ids: Sequence[str],
                expect: Mapping[str, int] | None, *, strict: bool
                ) -> tuple[int, list[OutboxEntry]]:
        rows = s.execute(select(MemoryRow.id, MemoryRow.status, MemoryRow.tokens,
                                MemoryRow.memory_type, MemoryRow.version).where(
            MemoryRow.namespace == namespace, MemoryRow.id.in_(ids))).all()
        if expect is not None:
            rows = [r for r in rows if (r.version or 1) == expect.get(r.id)]
            if strict and len(rows) != len(set(ids)):
                raise WriteConflictError("a memory changed or was deleted since it was read")
        found = [r.id for r in rows]
        if not found:
            return 0, []
        if expect is None:
            s.execute(delete(MemoryTimeRow).where(MemoryTimeRow.memory_id.in_(found)))
            s.execute(delete(MemoryRow).where(MemoryRow.namespace == namespace,
                                              MemoryRow.id.in_(found)))
        else:
            kept = []
            # one compare-and-swap per row (the version read above), in id order: two
            # jobs deleting overlapping rows take their locks in the same order
            for r in sorted(rows, key=lambda r: r.id):
                done = s.execute(delete(MemoryRow).where(
                    MemoryRow.namespace == namespace, MemoryRow.id == r.id,
                    MemoryRow.version == (r.version or 1)))
                if done.rowcount == 1:  # type: ignore[attr-defined]
                    kept.append(r)
                elif strict:
                    raise WriteConflictError(f"memory {r.id!r} changed since it was read")
            rows, found = kept, [r.id for r in kept]
            if not found:
                return 0, []
            s.execute(delete(MemoryTimeRow).where(MemoryTimeRow.memory_id.in_(found)))
        gone = [r.tokens for r in rows if _active(r.status)]
        _bump_totals(s, {namespace: [-len(gone), -sum(gone)]})
        queued: list[OutboxEntry] = []
        for kind in dict.fromkeys(kind_of(r.memory_type) for r in rows):
            queued += self._records.outbox.queue_entries(
                s, "delete", [(namespace, r.id) for r in rows
                              if kind_of(r.memory_type) == kind], kind)
        return len(found), queued

    def merge_queued(self, namespace: str, *, add: MemoryItem | None = None,
                     target: tuple[str, int, Mapping[str, Any]] | None = None,
                     remove: Mapping[str, int]) -> tuple[MemoryItem | None, list[OutboxEntry]]:
        """One merge of ``consolidate`` in ONE transaction (schema v7 compare-and-swap):
        insert ``add`` (a new memory) or update ``target`` ((id, the version read,
        changes)), and delete every memory of ``remove`` (id -> the version read).
        When any of them changed or went away since it was read, nothing is written
        and :class:`WriteConflictError` is raised: a merge built from what a job read
        never overwrites or deletes an update acknowledged after that read.
        Returns the new or updated memory and the outbox rows written."""
        require_namespace(namespace)
        touched = [*remove, *([target[0]] if target is not None else []),
                   *([add.id] if add is not None else [])]
        start = self.access_log.stable()
        try:
            made, queued = self._merge(namespace, add, target, remove)
        finally:  # after the commit (or the rollback)
            self._invalidate(namespace, touched)
        self.access_log.discard(namespace, list(remove))
        if made is not None and target is not None:
            made = self._returned(namespace, [made], start)[0]
        return made, queued

    def _merge(self, namespace: str, add: MemoryItem | None,
               target: tuple[str, int, Mapping[str, Any]] | None,
               remove: Mapping[str, int]) -> tuple[MemoryItem | None, list[OutboxEntry]]:
        with self._records.transaction() as s:
            # The deletes first: on SQLite the first write takes the database's write
            # lock, so what is read after it (the target) cannot change before commit.
            _, queued = self._delete(s, namespace, list(remove), remove, strict=True)
            made: MemoryItem | None = None
            if target is not None:
                memory_id, version, changes = target
                if changes:
                    made, updated = self._update(s, namespace, memory_id, changes, version)
                    queued += updated
                else:  # nothing to change (an interrupted run merged them): still there?
                    now = s.scalar(select(MemoryRow.version).where(
                        MemoryRow.namespace == namespace, MemoryRow.id == memory_id))
                    if now is None or (now or 1) != version:
                        raise WriteConflictError(f"memory {memory_id!r} changed since "
                                                 "it was read")
            if add is not None:
                validate_item(add)
                row = _to_row(add)
                s.add(row)
                s.flush()
                if self._records.mention_times:
                    times = mention_time_rows(add)
                    if times:
                        s.execute(insert(MemoryTimeRow), times)
                if _active(row.status):
                    _bump_totals(s, {namespace: [1, row.tokens]})
                queued += self._records.outbox.queue_items(s, "add", [add])
                made = add
        return made, queued

    def record_access(self, namespace: str, ids: Sequence[str]) -> None:
        """Bump access counts (search hits) of the memories of ``namespace`` among
        ``ids``; does not touch the indexes. Off the request path: the access log
        (access.py) writes them within ``access.FLUSH_INTERVAL`` seconds, or at
        :meth:`flush_access` / closing the store; every read of this repository counts
        them meanwhile."""
        require_namespace(namespace)
        if ids:
            self.access_log.record(namespace, list(ids), utcnow())

    def flush_access(self) -> int:
        """Write the waiting accesses now (tests; the store flushes on close); returns
        how many memories were written."""
        return self.access_log.flush()

    def _write_access(self, pending: Pending, committing: Callable[[], None]) -> None:
        """One transaction for every waiting access: the count added and the last
        access set per memory, by primary key and namespace (a memory of another
        namespace, or one gone since, is left alone)."""
        table = cast(Table, MemoryRow.__table__)
        stmt = (update(table)
                .where(table.c.id == bindparam("b_id"), table.c.namespace == bindparam("b_ns"))
                .values(access_count=table.c.access_count + bindparam("b_n"),
                        last_access=bindparam("b_at", type_=UTCDateTime())))
        params = [{"b_id": memory_id, "b_ns": namespace, "b_n": n, "b_at": at}
                  for (namespace, memory_id), (n, at) in sorted(pending.items())]
        cache = self._records.item_cache
        with self._records.transaction() as s:
            s.execute(stmt, params)
            committing()
        if cache is not None:
            # The cached records hold the counts as stored: add what was just written.
            # Still inside the flush's commit window (AccessLog.flush): a reader fills
            # the cache only when no flush committed since it read (get_items), so
            # every cached record read before this commit is here, none read after it.
            cache.replace([replace(i, access_count=i.access_count + pending[key][0],
                                   last_access=pending[key][1])
                           for key in pending
                           if (i := cache.cached(key[1])) is not None and i.namespace == key[0]])

    def count_of_type(self, namespace: str, memory_type: MemoryType, *,
                      modality: Modality | None = None,
                      status: MemoryStatus | None = MemoryStatus.ACTIVE) -> int:
        """Memories of one type (of one modality when given) in ``namespace``, current
        or superseded, of ``status`` (None: any)."""
        conds = [MemoryRow.namespace == require_namespace(namespace),
                 MemoryRow.memory_type == MemoryType(memory_type).value]
        if modality is not None:
            conds.append(MemoryRow.modality == Modality(modality).value)
        if status is not None:
            conds.append(MemoryRow.status == MemoryStatus(status).value)
        with self._records.transaction() as s:
            return int(s.scalar(select(func.count()).select_from(MemoryRow).where(*conds)) or 0)

    def namespaces(self) -> list[str]:
        with self._records.transaction() as s:
            return sorted(s.scalars(select(MemoryRow.namespace).distinct()).all())

    def gauges(self) -> dict[str, dict[Any, int]]:
        """Store-wide counts for monitoring (docs/OBSERVABILITY.md): memories by
        ``(memory_type, status)`` and pending outbox rows by kind; no namespace."""
        with self._records.transaction() as s:
            memories = {(str(t), str(st)): int(n) for t, st, n in s.execute(
                select(MemoryRow.memory_type, MemoryRow.status, func.count())
                .group_by(MemoryRow.memory_type, MemoryRow.status))}
            outbox = self._records.outbox.pending_counts(s)
        return {"memories": memories, "outbox": outbox}

    def all_ids(self, namespace: str) -> set[str]:
        require_namespace(namespace)
        with self._records.transaction() as s:
            return set(s.scalars(select(MemoryRow.id).where(MemoryRow.namespace == namespace)))
