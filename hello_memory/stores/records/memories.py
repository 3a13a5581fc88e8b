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

The repository is split over three modules, each under its own concern: this one holds
:class:`MemoryRepository` (its item reads and writes), the write errors and the
update's constants; ``_memory_rows.py`` the row <-> item conversions, the derived
columns and the totals upsert; ``_memory_queries.py`` :class:`ItemFilter`,
:data:`ItemOrder` and the ``MemoryQueries`` mixin with the lookups (topic, fact, hash,
mentioned times, totals). Every name stays importable from here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Table, bindparam, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from hello_memory.errors import InvalidInputError, NotFoundError, RecordStoreError
from hello_memory.kept import KeptValues
from hello_memory.stores.records._memory_queries import (
    _HAN_CLASS as _HAN_CLASS,
)
from hello_memory.stores.records._memory_queries import (
    MENTION_OFFSET_SLACK as MENTION_OFFSET_SLACK,
)
from hello_memory.stores.records._memory_queries import (
    MENTION_SPAN_DAYS as MENTION_SPAN_DAYS,
)
from hello_memory.stores.records._memory_queries import (
    SHORT_MENTION_DAYS as SHORT_MENTION_DAYS,
)
from hello_memory.stores.records._memory_queries import (
    ItemFilter,
    ItemOrder,
    MemoryQueries,
    _order_by,
)
from hello_memory.stores.records._memory_queries import (
    _shifted as _shifted,
)
from hello_memory.stores.records._memory_queries import (
    _topics_sql as _topics_sql,
)
from hello_memory.stores.records._memory_rows import (
    _ITEM_COLUMNS,
    _active,
    _keeps_key,
    _row_item,
    _row_values,
    _to_item,
    _to_row,
    _with_access,
    count_tokens,
    dedup_key,
    item_topic,
    mention_time_rows,
    mentioned_times,
    topic_for,
)
from hello_memory.stores.records._memory_rows import (
    MENTION_CHARS as MENTION_CHARS,
)
from hello_memory.stores.records.access import AccessLog, Pending
from hello_memory.stores.records.generation import bump_totals
from hello_memory.stores.records.item_cache import CACHE_ITEMS
from hello_memory.stores.records.models import (
    MemoryRow,
    MemoryTimeRow,
    NamespaceTotalsRow,
    UTCDateTime,
)
from hello_memory.stores.records.outbox import OutboxEntry, kind_of
from hello_memory.types import MemoryItem, MemoryStatus, copy_item, utcnow
from hello_memory.validation import require_namespace, validate_item

if TYPE_CHECKING:
    from hello_memory.stores.records.outbox import OutboxRecords

__all__ = ["DuplicateKeyError", "ItemFilter", "ItemOrder", "MemoryRepository",
           "WriteConflictError", "count_tokens", "dedup_key", "item_topic",
           "mentioned_times", "topic_for"]


class WriteConflictError(RecordStoreError):
    """A compare-and-swap write found the row changed (or gone) since the version the
    caller read (schema v7 ``version``); nothing of the write was committed. Callers
    that pass an expected version catch it: they re-read, or leave the memory for the
    next run (services/lifecycle.py)."""


class DuplicateKeyError(RecordStoreError):
    """An add with ``keyed=True`` found a current memory holding the same dedup key
    (an identical add committed first); nothing of the batch was committed. The add
    path catches it and returns the memory stored first (memory/dedup.py)."""


# Fields callers may change with update(); id/namespace/recorded_time never change.
_UPDATABLE = {
    "content", "content_hash", "importance", "metadata", "status", "memory_type",
    "event_time", "user_id", "agent_id", "session_id", "access_count", "last_access",
    "valid_from", "valid_to", "superseded_by",
}

# The columns an update rewrites from the item (the key, the version and the identity
# columns are the update's own business).
_ROW_ATTRS = ("content", "content_hash", "memory_type", "modality", "user_id", "agent_id",
              "session_id", "event_time", "importance", "access_count", "last_access",
              "status", "metadata_", "topic", "tokens", "valid_from", "valid_to",
              "superseded_by", "fact_key")


# The fields a write may set that the access log also writes.
_ACCESS_FIELDS = frozenset({"access_count", "last_access"})


class MemoryRepository(MemoryQueries):
    """The memory items of a :class:`RecordStore` (``records.memories``); its
    transactions are the store's, so a write and its outbox rows commit together."""

    def __init__(self, records: OutboxRecords) -> None:
        self._records = records
        # Search hits' accesses, written off the request path (access.py).
        self.access_log = AccessLog(self._write_access)
        # the generations pinned by the searches running in each thread (pinned())
        self._pins = threading.local()
        # a search's records where the record cache is off, (namespace, id) -> record at
        # the generation the search pinned (item_cache.py); emptied when the store closes
        self.kept_records: KeptValues[tuple[str, str], MemoryItem] = KeptValues(CACHE_ITEMS)

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
        """A value that changes with every write committed to ``namespace`` (adds,
        updates, deletes; not the access bookkeeping), for caching what is derived
        from its records. Where this process holds the records (the record cache is
        on) the cache's own count; elsewhere (PostgreSQL, where other processes write
        too) the database's, ``hm_namespace_totals.generation``, which every write
        transaction moves on (models.NamespaceTotalsRow): one primary-key read, once
        per search while :meth:`pinned`. The two never give the same value."""
        cache = self._records.item_cache
        if cache is not None:
            return cache.namespace_generation(namespace)
        pins: dict[str, tuple[int, int]] | None = getattr(self._pins, "held", None)
        if pins is not None and namespace in pins:
            return pins[namespace]
        with self._records.transaction() as s:
            value = s.scalar(select(NamespaceTotalsRow.generation)
                             .where(NamespaceTotalsRow.namespace == namespace))
        # epoch 0 (a record cache numbers its epochs from 1); -1: no row, so no memory
        # written since the namespace was made or purged (a row starts at >= 0)
        return 0, -1 if value is None else int(value)

    @contextmanager
    def pinned(self, namespace: str) -> Iterator[None]:
        """Within: :meth:`generation` of ``namespace`` is read once, in this thread,
        where it is the database's (a search asks it at every value it keeps; issue
        27). What is derived under it is read after it, so a write committed since
        leaves at worst a newer value kept under an older generation, which the next
        search, reading the newer one, does not use."""
        pins: dict[str, tuple[int, int]] | None = getattr(self._pins, "held", None)
        if self._records.item_cache is not None or (pins is not None and namespace in pins):
            yield
            return
        if pins is None:
            pins = self._pins.held = {}
        generation = self.generation(namespace)
        assert generation is not None
        pins[namespace] = generation
        try:
            yield
        finally:
            del pins[namespace]

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
            validate_item(item, self._records.limits)
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
            # one executemany of plain values, no ORM object per row (issue 27)
            rows = [_row_values(i) | {"version": 1, "dedup_key": (
                dedup_key(i) if keyed and i.status == MemoryStatus.ACTIVE
                and i.valid_to is None else None)} for i in items]
            try:  # the unique index speaks here, inside the transaction
                s.execute(insert(MemoryRow), rows)
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
            # every namespace written moves its generation, an inactive add's too
            deltas: dict[str, list[int]] = {row["namespace"]: [0, 0] for row in rows}
            for row in rows:
                if _active(row["status"]):
                    d = deltas[row["namespace"]]
                    d[0] += 1
                    d[1] += row["tokens"]
            bump_totals(s, deltas)
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
            generation = self._pinned(namespace) if shared else None
            if generation is not None:
                return self._kept_items(namespace, ids, generation)
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

    def _pinned(self, namespace: str) -> tuple[int, int] | None:
        """The database's write generation of ``namespace`` a search in this thread
        pinned (:meth:`pinned`), else None."""
        pins: dict[str, tuple[int, int]] | None = getattr(self._pins, "held", None)
        return None if pins is None else pins.get(namespace)

    def _kept_items(self, namespace: str, ids: Sequence[str], generation: tuple[int, int]
                    ) -> list[MemoryItem]:
        """:meth:`get_items` shared, where the records are kept at the database's write
        generation the search pinned (:attr:`kept_records`): those not kept are read
        and kept. Their access counts are the database's when read (see
        :meth:`released`)."""
        kept = self.kept_records.get([(namespace, i) for i in ids], generation)
        found = {memory_id: item for (_, memory_id), item in kept.items()}
        missing = [i for i in dict.fromkeys(ids) if i not in found]
        if missing:
            fresh = self._fetch_items(namespace, missing)
            self.kept_records.put({(namespace, i.id): i for i in fresh}, generation)
            found.update((i.id, i) for i in fresh)
        return [found[i] for i in ids if i in found]

    def released(self, namespace: str, items: Sequence[MemoryItem]) -> list[MemoryItem]:
        """Shared records of ``namespace`` (:meth:`get_items` with ``shared``) as the
        caller's own, to change and hand out: copies, or where they were kept at the
        database's write generation, read again (their access counts, which no write
        moves, may lag there; one that is gone since stays a copy)."""
        if self._records.item_cache is None and self._pinned(namespace) is not None:
            fresh = {i.id: i for i in self._items_read(
                lambda: self._fetch_items(namespace, [i.id for i in items]))}
            return [fresh.get(i.id) or copy_item(i, own_metadata=True) for i in items]
        return [copy_item(i, own_metadata=True) for i in items]

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

    def get_item(self, namespace: str, memory_id: str) -> MemoryItem:
        found = self.get_items(namespace, [memory_id])
        if not found:
            raise NotFoundError(f"no memory {memory_id!r} in namespace {namespace!r}")
        return found[0]

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

    def list_texts(self, namespace: str, flt: ItemFilter = ItemFilter(), *,
                   limit: int | None = None, order: ItemOrder = "event_time",
                   chars: int = 2000) -> list[tuple[str, str, str]]:
        """(id, memory type, the first ``chars`` characters of the content) of what
        :meth:`list_items` would return, in its order: three columns instead of whole
        records, for a reader of texts where no record cache holds them (the
        multilingual view on PostgreSQL; docs/PERFORMANCE.md, "Search on PostgreSQL")."""
        q = (select(MemoryRow.id, MemoryRow.memory_type,
                    func.substr(MemoryRow.content, 1, chars))
             .where(*self._where(namespace, flt)).order_by(*_order_by(order)).limit(limit))
        with self._records.transaction() as s:
            return [(str(i), str(t), str(c)) for i, t, c in s.execute(q)]

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
                    totals: dict[str, list[int]] = {}
                    done = self._update(s, namespace, memory_id, changes, expect_version,
                                        totals)
                    bump_totals(s, totals)
                    return done
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
                expect_version: int | None, totals: dict[str, list[int]]
                ) -> tuple[MemoryItem, list[OutboxEntry]]:
        """One update inside the caller's transaction; its change to the namespace's
        totals is added to ``totals``, which the caller writes last (bump_totals)."""
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
        validate_item(item, self._records.limits)
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
        d = totals.setdefault(namespace, [0, 0])
        d[0] += after[0] - before[0]
        d[1] += after[1] - before[1]
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
                totals: dict[str, list[int]] = {}
                done = self._delete(s, namespace, ids, expect, strict=False, totals=totals)
                bump_totals(s, totals)
        finally:  # after the commit (or the rollback)
            self._invalidate(namespace, ids)
        gone = {e.item_id for e in done[1]} if expect is not None else None
        self.access_log.discard(namespace, [i for i in ids if gone is None or i in gone])
        return done

    def _delete(self, s: Session, namespace: str, ids: Sequence[str],
                expect: Mapping[str, int] | None, *, strict: bool,
                totals: dict[str, list[int]]) -> tuple[int, list[OutboxEntry]]:
        """One delete inside the caller's transaction; its change to the namespace's
        totals is added to ``totals``, which the caller writes last (bump_totals)."""
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
        d = totals.setdefault(namespace, [0, 0])
        d[0] -= len(gone)
        d[1] -= sum(gone)
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
            # The totals row last, once: like every write, no memory row after it.
            totals: dict[str, list[int]] = {namespace: [0, 0]}
            _, queued = self._delete(s, namespace, list(remove), remove, strict=True,
                                     totals=totals)
            made: MemoryItem | None = None
            if target is not None:
                memory_id, version, changes = target
                if changes:
                    made, updated = self._update(s, namespace, memory_id, changes, version,
                                                 totals)
                    queued += updated
                else:  # nothing to change (an interrupted run merged them): still there?
                    now = s.scalar(select(MemoryRow.version).where(
                        MemoryRow.namespace == namespace, MemoryRow.id == memory_id))
                    if now is None or (now or 1) != version:
                        raise WriteConflictError(f"memory {memory_id!r} changed since "
                                                 "it was read")
            if add is not None:
                validate_item(add, self._records.limits)
                row = _to_row(add)
                s.add(row)
                s.flush()
                if self._records.mention_times:
                    times = mention_time_rows(add)
                    if times:
                        s.execute(insert(MemoryTimeRow), times)
                if _active(row.status):
                    totals[namespace][0] += 1
                    totals[namespace][1] += row.tokens
                queued += self._records.outbox.queue_items(s, "add", [add])
                made = add
            bump_totals(s, totals)
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

