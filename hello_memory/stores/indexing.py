"""The one index-maintenance engine (ARCHITECTURE decision 1, "The write path").

Every write commits its records and one outbox row per indexed thing it touched in
ONE transaction (``hm_outbox``: ``kind``, ``op``, ``namespace``, ``item_id``). The
derived indexes are then brought in line by an :class:`Indexer` per kind ("memory":
the ``memories`` collection and the graph; "media": the perceptual collections;
"chunk": the document chunk collection), through one apply loop here:

* **Converge, do not replay.** An indexer never replays the event a row describes: it
  reads the CURRENT record of every id it is given (exists → upsert the index from
  the record; gone → delete it from the index), keyed by the record's stable UUID, so
  applying a row twice, late or out of order converges to the same state.
* **Per-key locks.** The loop holds a striped in-process lock per ``(namespace, id)``
  and, when the records are on PostgreSQL, a transaction-scoped advisory lock per key
  in the database (:class:`DbKeyLocks`), so several processes sharing one database
  (``hello-memory serve`` x N, docs/DEPLOY.md) are serialised per key like threads;
  it holds them from re-reading which rows are still pending (for a group holding an ``upsert``, the
  one op that drops graph links before deriving them again), through reading the
  record and writing the index, to marking the rows applied. A delete that commits after an add
  cannot be overtaken by the add's late upsert, two updates cannot leave the older
  payload, and an index entry is only ever rewritten while a row of it is pending, so
  a crash half-way through leaves a row that the next open replays.
* **Own rows on the write path.** A write applies only the seqs its own transaction
  wrote (:meth:`IndexEngine.apply`); the rest of the backlog (rows a crash left
  pending, rows of a kind whose indexer was not registered yet) is replayed at open
  and by ``reconcile`` (:meth:`IndexEngine.replay`).
* **Failing rows are isolated.** A row whose index work fails stays pending and is
  reported (:attr:`IndexEngine.failures`); the others of the batch still apply.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import zlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from hello_memory.errors import IndexWorkError, StoreError
from hello_memory.stores.records.outbox import KINDS, OutboxEntry, OutboxRepository

log = logging.getLogger(__name__)

__all__ = ["CHUNK_COLLECTION", "KINDS", "ApplyResult", "DbKeyLocks", "IndexEngine",
           "IndexFailure", "Indexer", "KeyLocks", "typed_failure"]

# The collection of the "chunk" kind (RAG document chunks, hello_memory/rag/indexing.py),
# named here so maintenance finds it without importing the RAG layer.
CHUNK_COLLECTION = "rag_chunks"


class Indexer(Protocol):
    """Brings one kind's index in line with its records. ``apply`` reads the current
    record of each entry's ``item_id`` in ``namespace`` and upserts (record present) or
    deletes (record gone) its index entries, idempotently, keyed by the id;
    ``prepared`` holds work the caller already did (e.g. ``{id: (text, vector)}`` from
    the write path), to be used only where it still matches the record."""

    def apply(self, namespace: str, entries: Sequence[OutboxEntry],
              prepared: Mapping[str, Any]) -> None: ...


@dataclass
class IndexFailure:
    """An item whose index work failed (its outbox rows stay pending): what
    ``reconcile`` reports, and ``jobs reconcile --retry / --drop-failed`` act on."""

    namespace: str
    memory_id: str
    error: str
    attempts: int = 1
    kind: str = "memory"

    def as_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "memory_id": self.memory_id, "kind": self.kind,
                "error": self.error, "attempts": self.attempts}


def typed_failure(exc: BaseException, item_id: str) -> StoreError:
    """Any failure of index work as a StoreError (an untyped ValueError from an
    analysis library must not escape open() or reconcile)."""
    if isinstance(exc, StoreError):
        return exc
    return IndexWorkError(f"index work for {item_id} failed: {type(exc).__name__}: {exc}")


@dataclass
class ApplyResult:
    """What one apply did: rows applied, and the raw error of each failing item."""

    applied: int = 0
    failed: dict[str, BaseException] = field(default_factory=dict)


class KeyLocks:
    """Striped in-process locks keyed by ``(namespace, id)``. Several keys are taken
    in stripe order, so two threads locking overlapping sets cannot deadlock."""

    def __init__(self, stripes: int = 1024) -> None:
        self._locks = [threading.Lock() for _ in range(stripes)]

    def _stripe(self, namespace: str, key: str) -> int:
        return zlib.crc32(f"{namespace}\x00{key}".encode("utf-8", "surrogatepass")) % len(
            self._locks)

    @contextmanager
    def hold(self, namespace: str, keys: Collection[str]) -> Iterator[None]:
        stripes = sorted({self._stripe(namespace, k) for k in keys})
        taken: list[threading.Lock] = []
        try:
            for s in stripes:
                self._locks[s].acquire()
                taken.append(self._locks[s])
            yield
        finally:
            for lock in reversed(taken):
                lock.release()


class DbKeyLocks:
    """Per-key locks across processes: PostgreSQL advisory locks keyed by
    ``(namespace, id)``, taken in one transaction on a connection of their own and
    released when it ends (``pg_advisory_xact_lock``, so a process killed while holding
    them releases them with its connection). Several keys are taken in key order,
    pipelined in one round trip, so two processes locking overlapping sets cannot
    deadlock. Keys are 32-bit hashes under the class id ``CLASS_ID``: two keys that
    collide are merely serialised together.

    ``url`` is the records database's SQLAlchemy URL; the connections come from a pool
    of their own, so a thread holding locks never waits for a connection that another
    thread holds while it waits for those locks (docs/ARCHITECTURE.md, "The write
    path")."""

    CLASS_ID = 0x686D  # "hm": advisory keys of the index engine

    def __init__(self, url: Any, *, pool_size: int = 4, max_overflow: int = 60) -> None:
        from sqlalchemy import create_engine

        self._engine = create_engine(url, pool_size=pool_size, max_overflow=max_overflow,
                                     pool_pre_ping=True)

    @staticmethod
    def key(namespace: str, item_id: str) -> int:
        digest = hashlib.blake2b(f"{namespace}\x00{item_id}".encode("utf-8", "surrogatepass"),
                                 digest_size=4).digest()
        return int.from_bytes(digest, "big", signed=True)

    @contextmanager
    def hold(self, namespace: str, keys: Collection[str]) -> Iterator[None]:
        from sqlalchemy.exc import SQLAlchemyError

        wanted = sorted({self.key(namespace, k) for k in keys})
        try:
            conn = self._engine.connect()
        except SQLAlchemyError as exc:
            raise IndexWorkError(f"cannot take the index locks: {exc}") from exc
        try:
            tx = conn.begin()
            try:
                cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
                try:
                    cur.executemany("SELECT pg_advisory_xact_lock(%s, %s)",
                                    [(self.CLASS_ID, k) for k in wanted])
                finally:
                    cur.close()
            except Exception as exc:
                tx.rollback()
                raise IndexWorkError(f"cannot take the index locks: {exc}") from exc
            try:
                yield
            finally:
                tx.rollback()  # nothing was written: ending the transaction frees the locks
        finally:
            conn.close()

    def close(self) -> None:
        self._engine.dispose()


def _groups(entries: Sequence[OutboxEntry]) -> dict[tuple[str, str], list[OutboxEntry]]:
    out: dict[tuple[str, str], list[OutboxEntry]] = {}
    for e in entries:
        out.setdefault((e.kind, e.namespace), []).append(e)
    return out


@contextmanager
def _nothing() -> Iterator[None]:
    yield


class IndexEngine:
    """The apply loop over one outbox (see the module doc)."""

    def __init__(self, outbox: Callable[[], OutboxRepository], *, stripes: int = 1024,
                 batch: int = 256, shared_url: Callable[[], Any] | None = None) -> None:
        self._outbox = outbox
        self.indexers: dict[str, Indexer] = {}
        self.locks = KeyLocks(stripes)
        # ``shared_url()``: the records database's URL, read when the first rows are
        # applied (the store is open by then); on PostgreSQL the per-key locks are
        # taken in the database as well (DbKeyLocks), elsewhere in-process only.
        self._shared_url = shared_url
        self._db_locks: DbKeyLocks | None = None
        self._db_checked = False
        self._db_mutex = threading.Lock()
        self.batch = batch
        # item id -> its failing index work (this process's view; every open replays)
        self.failures: dict[str, IndexFailure] = {}

    def db_locks(self) -> DbKeyLocks | None:
        """The cross-process locks when the records are on PostgreSQL, else None."""
        if not self._db_checked:
            with self._db_mutex:
                if not self._db_checked and self._shared_url is not None:
                    url = self._shared_url()
                    if url is not None and str(getattr(url, "drivername", url)).startswith(
                            "postgresql"):
                        self._db_locks = DbKeyLocks(url)
                self._db_checked = True
        return self._db_locks

    def close(self) -> None:
        """Release the cross-process locks' connections (the engine can open again)."""
        with self._db_mutex:
            locks, self._db_locks, self._db_checked = self._db_locks, None, False
        if locks is not None:
            locks.close()

    def register(self, kind: str, indexer: Indexer) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown kind of indexed thing {kind!r}; one of {KINDS}")
        self.indexers[kind] = indexer

    # the write path: only the caller's rows -------------------------------------------
    def apply(self, seqs: Sequence[int], prepared: Mapping[str, Any] | None = None,
              ) -> ApplyResult:
        """Apply the outbox rows ``seqs`` (those a write just committed) and no other."""
        result = ApplyResult()
        wanted = list(dict.fromkeys(seqs))
        for start in range(0, len(wanted), self.batch):
            entries = self._outbox().entries(wanted[start:start + self.batch])
            self._apply_entries(entries, prepared or {}, result)
        return result

    def apply_entries(self, entries: Sequence[OutboxEntry],
                      prepared: Mapping[str, Any] | None = None) -> ApplyResult:
        """:meth:`apply` for rows the caller already has (its repository returned
        them: no read of the outbox to find their keys)."""
        result = ApplyResult()
        for start in range(0, len(entries), self.batch):
            self._apply_entries(entries[start:start + self.batch], prepared or {}, result)
        return result

    # open and reconcile: the backlog -----------------------------------------------------
    def replay(self, kinds: Collection[str] | None = None) -> ApplyResult:
        """Apply every pending row of ``kinds`` (default: every registered kind)."""
        kinds = [k for k in (kinds if kinds is not None else self.indexers)
                 if k in self.indexers]
        result, after = ApplyResult(), 0
        while kinds:
            pending = self._outbox().pending_outbox(limit=self.batch, after=after,
                                                    kinds=kinds)
            if not pending:
                break
            after = pending[-1].seq
            self._apply_entries(pending, {}, result)
        if result.applied:
            log.info("replayed %d pending index operations", result.applied)
        return result

    def _apply_entries(self, entries: Sequence[OutboxEntry], prepared: Mapping[str, Any],
                       result: ApplyResult) -> None:
        for (kind, ns), group in _groups(entries).items():
            indexer = self.indexers.get(kind)
            if indexer is None:
                continue  # left pending: replayed once its indexer is registered
            keys = {e.item_id for e in group}
            db = self.db_locks()
            with self.locks.hold(ns, keys), (db.hold(ns, keys) if db else _nothing()):
                self._apply_locked(kind, ns, indexer, group, prepared, result)

    def _apply_locked(self, kind: str, ns: str, indexer: Indexer,
                      group: Sequence[OutboxEntry], prepared: Mapping[str, Any],
                      result: ApplyResult) -> None:
        # Rows another thread applied while this one waited for the locks are done.
        # Re-applying an "upsert" (graph links dropped, then derived again) could leave
        # an index entry half-rewritten with no row left pending if the process died
        # in between: those are re-read. Re-applying any other op only writes the
        # current state again (no removal first), so it is not worth a read.
        outbox = self._outbox()
        live = (outbox.entries([e.seq for e in group])
                if any(e.op == "upsert" for e in group) else list(group))
        if not live:
            return
        try:
            indexer.apply(ns, live, prepared)
            done = live
        except Exception:  # noqa: BLE001 - isolate the failing item, apply the others
            done = self._isolate(kind, ns, indexer, live, prepared, result)
        outbox.mark_applied([e.seq for e in done])
        for e in done:
            self.failures.pop(e.item_id, None)
        result.applied += len(done)

    def _isolate(self, kind: str, ns: str, indexer: Indexer, live: Sequence[OutboxEntry],
                 prepared: Mapping[str, Any], result: ApplyResult) -> list[OutboxEntry]:
        by_key: dict[str, list[OutboxEntry]] = {}
        for e in live:
            by_key.setdefault(e.item_id, []).append(e)
        done: list[OutboxEntry] = []
        for key, rows in by_key.items():
            try:
                indexer.apply(ns, rows, prepared)
                done += rows
            except Exception as exc:  # noqa: BLE001 - the row stays pending, reported
                result.failed[key] = exc
                self.note_failure(ns, key, exc, kind)
        return done

    def note_failure(self, namespace: str, item_id: str, exc: BaseException,
                     kind: str = "memory") -> None:
        """Record that index work for ``item_id`` failed (listed by ``reconcile``)."""
        typed = typed_failure(exc, item_id)
        log.warning("index work for %s %s in %r left pending: %s", kind, item_id,
                    namespace, typed)
        known = self.failures.get(item_id)
        attempts = known.attempts + 1 if known else 1
        self.failures[item_id] = IndexFailure(namespace, item_id, str(typed), attempts, kind)

    def first_failure(self, result: ApplyResult, keys: Collection[str] = ()) -> StoreError | None:
        """The typed error of the first failing item of ``keys`` (all when empty)."""
        for key, exc in result.failed.items():
            if not keys or key in keys:
                return typed_failure(exc, key)
        return None
