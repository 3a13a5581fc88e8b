"""The read side of :class:`~hello_memory.stores.records.memories.MemoryRepository`:
:class:`ItemFilter` and :data:`ItemOrder` (what a listing selects and in which order),
the plain SQL of the per-topic search, the bounds of a mentioned-time query, and
:class:`MemoryQueries`, the mixin ``MemoryRepository`` inherits with its filter
translation (``_where``) and its lookups beyond reading items by id or filter: by
topic, fact key, content hash and mentioned time, the namespace totals (and their
repair), and the store-wide counts. :mod:`hello_memory.stores.records.memories`
re-exports every module-level name defined here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import TextClause, and_, exists, func, or_, select, text, update

from hello_memory.errors import InvalidInputError
from hello_memory.stores.records._memory_rows import (
    _ITEM_COLUMNS,
    _active,
    _row_item,
    _with_access,
    item_topic,
)
from hello_memory.stores.records.generation import bump_totals
from hello_memory.stores.records.models import (
    TOPIC_CHARS,
    MemoryRow,
    MemoryTimeRow,
    NamespaceTotalsRow,
)
from hello_memory.text.timeparse import TimeRange
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, Modality
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.stores.records.access import AccessLog
    from hello_memory.stores.records.outbox import OutboxRecords


# list_items orders: oldest event first (the default), newest first, most important
# first (newer first among equals; served by ix_items_ns_type_importance).
ItemOrder = Literal["event_time", "-event_time", "-importance"]


_HEX = "0123456789abcdef"
# Leading hex digits from which a prefix's range of ids is read without a LIMIT: at
# most about one in 16**4 of the ids of every namespace.
NARROW_HEX = 4


def _hex_head(prefix: str) -> str:
    """The leading lowercase-hex digits of ``prefix``."""
    n = 0
    while n < len(prefix) and prefix[n] in _HEX:
        n += 1
    return prefix[:n]


def hex_after(prefix: str) -> str | None:
    """An upper bound of every id that starts with ``prefix``: the least lowercase-hex
    string above the prefix's leading hex digits, of their length (``"0a9f-1"`` ->
    ``"0aa0"``); None when it has none, or they are all ``f``. Hex digits keep their
    order under any collation, where a character like ``:`` (the code point after
    ``9``) may not (PostgreSQL's locales)."""
    digits = list(_hex_head(prefix))
    for k in range(len(digits) - 1, -1, -1):
        if digits[k] != "f":
            digits[k] = _HEX[_HEX.index(digits[k]) + 1]
            return "".join(digits[:k + 1]) + "0" * (len(digits) - k - 1)
        digits[k] = "0"
    return None


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


def _order_by(order: str) -> tuple[Any, ...]:
    orders: dict[str, tuple[Any, ...]] = {
        "event_time": (MemoryRow.event_time, MemoryRow.id),
        "-event_time": (MemoryRow.event_time.desc(), MemoryRow.id.desc()),
        "-importance": (MemoryRow.importance.desc(), MemoryRow.event_time.desc()),
    }
    if order not in orders:
        raise InvalidInputError(f"order must be one of {sorted(orders)}, got {order!r}")
    return orders[order]


# The longest mention a range query looks back for: a year (and a leap day).
MENTION_SPAN_DAYS = 366
# The longest mention that answers a question about a shorter time inside it (a trip,
# a week away), not a month or a year (RepositoryMemories.mentioning, issue 26).
SHORT_MENTION_DAYS = 14
# How far a mention may stick out of a question's range and still be inside it: less
# than a day, so the next day stays out, and more than any two UTC offsets of one place
# differ ("26 November" said in October, UTC+2, asked about in November, UTC+1).
MENTION_OFFSET_SLACK = timedelta(hours=12)
# The most members one side of a fact chain's window read may return before the read
# takes the other side (MemoryQueries._valid_at): bounded work per add of a fact.
WINDOW_PROBE = 256
# A Han character, as a regular expression both SQLite (through SQLAlchemy) and
# PostgreSQL read (the two main Han blocks of text/tokenize.py).
_HAN_CLASS = "[\u3400-\u9fff]"


def _shifted(when: datetime, by: timedelta) -> datetime:
    """``when + by``, held at the calendar's ends (a question "since 0001-01-01" asks
    about all of time, not an OverflowError)."""
    try:
        return when + by
    except OverflowError:
        return when.replace(year=1, month=1, day=1) if by < timedelta(0) else when.replace(
            year=9999, month=12, day=31)


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


@lru_cache(maxsize=128)
def _ranges_sql(n: int) -> TextClause:
    """The ids in ``n`` ranges of the primary key (``:lo0`` <= id < ``:hi0`` ..) of the
    memories of namespace ``:ns``: one key seek per range. ORed in one WHERE, SQLite's
    planner scans the whole key instead; ``namespace || ''`` keeps it off the
    namespace's indexes (through one of them it reads the whole namespace and sorts).
    Plain SQL built once per ``n``, as :func:`_topics_sql`."""
    one = ("SELECT id FROM hm_memory_items WHERE id >= :lo{n} AND id < :hi{n} "
           "AND namespace || '' = :ns")
    return text(" UNION ALL ".join(one.format(n=i) for i in range(n)))


class MemoryQueries:
    """The lookups of :class:`~hello_memory.stores.records.memories.MemoryRepository`
    (which inherits them and sets the two attributes below): its filter translation
    and the reads by topic, fact, hash and mentioned time, the totals, the store-wide
    counts."""

    _records: OutboxRecords
    access_log: AccessLog

    if TYPE_CHECKING:  # MemoryRepository's own (memories.py)
        def get_items(self, namespace: str, ids: Sequence[str], *, shared: bool = False
                      ) -> list[MemoryItem]: ...

    def _items_read(self, fetch: Callable[[], list[MemoryItem]], *, shared: bool = False
                    ) -> list[MemoryItem]:
        """``fetch()`` with the accesses still waiting counted (access.py)."""
        return self.access_log.read(
            fetch, lambda items, pending: _with_access(items, pending, shared=shared)
            if pending else items)

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

    def holds_cjk(self, namespace: str) -> bool:
        """Whether any memory of the namespace holds a Han character: one EXISTS query,
        which stops at the first (the multilingual view's switch, retrieval/_hybrid_language.py).
        SQLAlchemy gives SQLite a REGEXP function; PostgreSQL has its own."""
        q = select(exists().where(MemoryRow.namespace == require_namespace(namespace),
                                  MemoryRow.content.regexp_match(_HAN_CLASS)))
        with self._records.transaction() as s:
            return bool(s.scalar(q))

    def holds_inactive(self, namespace: str) -> bool:
        """Whether any memory of the namespace is not active (forgotten): one EXISTS
        query, by seeks (every type, every other status) on an index led by namespace,
        type and status, so its cost does not grow with the namespace (the search
        leaves the status condition out of its vector queries where none is,
        memory/episodic.py ``payload_filters``)."""
        q = select(exists().where(
            MemoryRow.namespace == require_namespace(namespace),
            MemoryRow.memory_type.in_([t.value for t in MemoryType]),
            MemoryRow.status.in_([s.value for s in MemoryStatus if s != MemoryStatus.ACTIVE])))
        with self._records.transaction() as s:
            return bool(s.scalar(q))

    def ids_starting(self, namespace: str, prefix: str, *, limit: int = 2) -> list[str]:
        """Ids of this namespace's memories that start with ``prefix`` (a short handle,
        docs/TOOLS.md), at most ``limit``, in id order."""
        return self.ids_starting_each(namespace, [prefix], limit=limit)[prefix]

    def ids_starting_each(self, namespace: str, prefixes: Sequence[str], *, limit: int = 2
                          ) -> dict[str, list[str]]:
        """:meth:`ids_starting` of each prefix, in one transaction: the ids of every
        prefix that begins with at least :data:`NARROW_HEX` hex digits (a handle) come
        from one statement, a range of the primary key per prefix.

        ``LIKE`` uses no index: with only ``id >= prefix``, SQLite's planner read the
        whole namespace through one of its indexes and sorted it, once per handle (a
        context block asks one per line it shows: a 73 ms block at 10,000 memories
        whose search took 5.5; docs/PERFORMANCE.md, "Short handles")."""
        ns = require_namespace(namespace)
        out: dict[str, list[str]] = {p: [] for p in prefixes}
        bound = {p: after for p in out if len(_hex_head(p)) >= NARROW_HEX
                 and (after := hex_after(p)) is not None}
        narrow = list(bound)
        with self._records.transaction() as s:
            for p in out.keys() - set(narrow):  # a short or odd prefix: LIMIT bounds it
                out[p] = list(s.scalars(
                    select(MemoryRow.id).where(MemoryRow.namespace == ns, MemoryRow.id >= p,
                                               MemoryRow.id.startswith(p, autoescape=True))
                    .order_by(MemoryRow.id).limit(limit)))
            for start in range(0, len(narrow), 100):  # SQLite allows 500 compound terms
                chunk = narrow[start:start + 100]
                params = {"ns": ns, **{f"lo{n}": p for n, p in enumerate(chunk)},
                          **{f"hi{n}": bound[p] for n, p in enumerate(chunk)}}
                found = s.scalars(_ranges_sql(len(chunk)), params)
                for memory_id in sorted(found):
                    for p in chunk:
                        if memory_id.startswith(p) and len(out[p]) < limit:
                            out[p].append(memory_id)
        return out

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
                return ([_row_item(r) for r in s.execute(
                    select(*_ITEM_COLUMNS).where(MemoryRow.id.in_(ids)))] if ids else [])

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
        rows = select(NamespaceTotalsRow.namespace)
        if namespace is not None:
            q = q.where(MemoryRow.namespace == namespace)
            rows = rows.where(NamespaceTotalsRow.namespace == namespace)
        with self._records.transaction() as s:
            # the rows are kept, their generation moved on (a row made again would
            # start afresh: models.NamespaceTotalsRow)
            listed = list(s.scalars(rows))
            counted = {ns: (int(n), int(t)) for ns, n, t in s.execute(q)}
            bump_totals(s, dict.fromkeys([*listed, *counted], (0, 0)))
            for ns in dict.fromkeys([*listed, *counted]):
                n, t = counted.get(ns, (0, 0))
                s.execute(update(NamespaceTotalsRow).where(NamespaceTotalsRow.namespace == ns)
                          .values(items=n, tokens=t))
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
                  after: int = 32, shared: bool = False,
                  exclude: Collection[str] = ()) -> list[MemoryItem]:
        """Active memories of ``namespace`` whose content states the fact ``key``
        (``subject|attribute``, hello_memory/text/facts.py), superseded ones too,
        oldest valid first, read through ix_items_ns_fact_key. ``around``: only the
        window of the chain a memory valid from then can change (memory/supersede.py):
        those valid at that time (started then or before, not ended before it) and the
        first ``after`` that start after it, each part found without reading the
        whole chain (:meth:`_valid_at`; issue 27). ``shared``: the caller only reads
        the items (as ``get_items``): where the store keeps a record cache the query
        reads the records from the cache, a record that stopped being active in
        between left out (every add of a fact reads its chain: issue 27).
        ``exclude``: ids left out of the chain (those of a batch not decided yet),
        before the window's limit counts."""
        require_namespace(namespace)
        base: tuple[Any, ...] = (MemoryRow.namespace == namespace,
                                 MemoryRow.fact_key == key,
                                 MemoryRow.status == MemoryStatus.ACTIVE.value)
        if exclude:
            base += (MemoryRow.id.not_in(sorted(exclude)),)
        order = (MemoryRow.valid_from, MemoryRow.recorded_time, MemoryRow.id)
        # the ids alone, then the records by id (from the record cache where the store
        # keeps one and the caller only reads): every add of a fact reads its chain
        with self._records.transaction() as s:
            if around is None:
                ids = list(s.scalars(select(MemoryRow.id).where(*base).order_by(*order)))
            else:
                ids = self._valid_at(s, base, around) + list(s.scalars(
                    select(MemoryRow.id).where(*base, MemoryRow.valid_from > around)
                    .order_by(*order).limit(after)))
        return [m for m in self.get_items(namespace, ids, shared=shared)
                if m.status == MemoryStatus.ACTIVE]

    @staticmethod
    def _valid_at(s: Any, base: tuple[Any, ...], when: datetime) -> list[str]:
        """The ids of the chain (``base``) valid at ``when`` (started then or before,
        not ended before it), in start order. Those are found from whichever side is
        short: the members started by ``when`` (a memory learnt older than the chain,
        as a bulk import newest first adds them), or the open ones and those ending
        after it (a chain learnt in time order). Only a long chain read around its
        middle on both sides is scanned."""
        cols = (MemoryRow.id, MemoryRow.valid_from, MemoryRow.valid_to,
                MemoryRow.recorded_time)

        def rows(*cond: Any, limit: int | None = WINDOW_PROBE + 1) -> list[Any]:
            return list(s.execute(select(*cols).where(*base, *cond).limit(limit)))

        found = rows(MemoryRow.valid_from <= when)
        if len(found) > WINDOW_PROBE:
            found = rows(MemoryRow.valid_to.is_(None)) + rows(MemoryRow.valid_to >= when)
            if len(found) > WINDOW_PROBE:
                found = rows(MemoryRow.valid_from <= when, or_(
                    MemoryRow.valid_to.is_(None), MemoryRow.valid_to >= when), limit=None)
        valid = {r.id: r for r in found if r.valid_from <= when
                 and (r.valid_to is None or r.valid_to >= when)}
        return sorted(valid, key=lambda i: (valid[i].valid_from, valid[i].recorded_time, i))

    # duplicates and mentioned times (issue 15) ----------------------------------------
    def find_by_hash(self, namespace: str, hashes: Sequence[str]) -> list[MemoryItem]:
        """The active memories of ``namespace`` whose ``content_hash`` is one of
        ``hashes`` (any type, superseded ones included: the caller checks validity),
        oldest recorded first: one query on ix_items_ns_hash per 500 hashes, so an
        add_many of N memories costs one lookup, not N."""
        require_namespace(namespace)
        wanted = list(dict.fromkeys(h for h in hashes if h))
        def fetch() -> list[MemoryItem]:
            found: list[MemoryItem] = []
            with self._records.transaction() as s:
                for start in range(0, len(wanted), 500):
                    # namespace and hash only, so the planner takes ix_items_ns_hash
                    # (with the status / validity conditions it picks
                    # ix_items_ns_valid_to and reads the whole namespace); the few rows
                    # found are checked here.
                    found += map(_row_item, s.execute(select(*_ITEM_COLUMNS).where(
                        MemoryRow.namespace == namespace,
                        MemoryRow.content_hash.in_(wanted[start:start + 500]))))
            kept = [i for i in found if _active(i.status)]
            kept.sort(key=lambda i: (i.recorded_time, i.id))
            return kept

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
