"""The access bookkeeping of search hits, off the request path (issue 27, item 2).

Every search records an access on the memories it returns (``access_count`` + 1,
``last_access``; consolidate reads the count). Done as one SQL ``UPDATE`` per search it
was a write transaction on the request path (about 1.3-2 ms of a 15 ms search at 10k
memories). :class:`AccessLog` keeps the accesses in memory instead, coalesced per
memory, and a background thread writes them every :data:`FLUSH_INTERVAL` seconds (or
sooner when :data:`HIGH_WATER` memories wait) in one transaction; ``flush()`` writes
them at once, and closing the record store flushes.

Reads stay exact inside the process: the repository's reads add the counts still
waiting to what the database returned (:meth:`AccessLog.read`). A flush that commits
while a read runs would make that sum count the flushed accesses twice or not at all,
so the log keeps a sequence number, odd while a flush commits (a seqlock): a read
that overlapped a commit is read again, and after a few tries it reads while holding
the flush lock, when no commit can happen. Another process sharing the database
(PostgreSQL) sees the counts once they are flushed: at most a flush interval late. A
process killed before a flush loses those accesses (bookkeeping, not memories).
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

__all__ = ["FLUSH_INTERVAL", "HIGH_WATER", "AccessLog", "Pending"]

log = logging.getLogger(__name__)

# Seconds between two writes of the waiting accesses (when any wait).
FLUSH_INTERVAL = 0.5
# This many memories waiting wake the writer before the interval is up.
HIGH_WATER = 5000
# A read that overlapped this many flush commits reads once more under the flush lock.
_READ_TRIES = 3

T = TypeVar("T")
R = TypeVar("R")
# (namespace, memory id) -> (accesses, the last one's time); read-only to its users
Pending = Mapping[tuple[str, str], Sequence[Any]]

_LOGS: weakref.WeakSet[AccessLog] = weakref.WeakSet()


def _after_fork() -> None:
    """A forked child starts with no waiting accesses (the parent writes its own) and
    fresh locks (one held by another thread at the fork would never be released)."""
    for access_log in list(_LOGS):
        access_log._reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class AccessLog:
    """Accesses waiting to be written, and the thread that writes them.

    ``write(pending, committing)`` writes ``pending`` in one transaction and calls
    ``committing()`` just before the commit; it raises when nothing was written. The
    log calls it from one thread at a time."""

    def __init__(self, write: Callable[[Pending, Callable[[], None]], None], *,
                 interval: float = FLUSH_INTERVAL, high_water: int = HIGH_WATER) -> None:
        self._write = write
        self.interval = interval
        self.high_water = high_water
        self._reset()
        _LOGS.add(self)

    def _reset(self) -> None:
        # Guards _pending, _seq, _thread and _stopping; readers wait on it while a
        # flush commits.
        self._cond = threading.Condition(threading.Lock())
        self._pending: dict[tuple[str, str], list[Any]] = {}  # key -> [count, last time]
        self._seq = 0  # odd while a flush commits
        # One flush at a time: two would both write the same waiting counts.
        self._flush_lock = threading.RLock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopping = False

    # --- writers ----------------------------------------------------------------------
    def record(self, namespace: str, ids: Sequence[str], when: datetime) -> None:
        """One access of each of ``ids`` (of ``namespace``) at ``when``."""
        with self._cond:
            for memory_id in dict.fromkeys(ids):
                entry = self._pending.get((namespace, memory_id))
                if entry is None:
                    self._pending[(namespace, memory_id)] = [1, when]
                else:
                    entry[0] += 1
                    entry[1] = max(entry[1], when)
            full = len(self._pending) >= self.high_water
            if self._thread is None and not self._stopping:
                self._thread = threading.Thread(target=self._run, name="hm-access",
                                                daemon=True)
                self._thread.start()
        if full:
            self._wake.set()

    def discard(self, namespace: str, ids: Sequence[str] | None = None) -> None:
        """Forget the waiting accesses of ``ids`` (every memory of ``namespace`` when
        None): they were deleted, and an id used again must not inherit them."""
        with self._cond:
            if ids is None:
                for key in [k for k in self._pending if k[0] == namespace]:
                    del self._pending[key]
            else:
                for memory_id in ids:
                    self._pending.pop((namespace, memory_id), None)

    def flush(self) -> int:
        """Write every waiting access now; returns how many memories were written.
        Raises what the write raised (the accesses then keep waiting)."""
        with self._flush_lock:
            with self._cond:
                batch = {k: (v[0], v[1]) for k, v in self._pending.items()}
            if not batch:
                return 0
            committed = False

            def committing() -> None:
                with self._cond:
                    self._seq += 1  # odd: a read now cannot tell before from after

            try:
                self._write(batch, committing)
                committed = True
            finally:
                with self._cond:
                    if committed:
                        for key, (count, _) in batch.items():
                            entry = self._pending.get(key)
                            if entry is None:
                                continue  # discarded meanwhile (deleted)
                            entry[0] -= count
                            if entry[0] <= 0:
                                del self._pending[key]
                    if self._seq % 2:
                        self._seq += 1
                    self._cond.notify_all()
            return len(batch)

    def close(self) -> None:
        """Stop the writer thread, then write what waits (a later ``record`` starts a
        new thread)."""
        with self._cond:
            self._stopping = True
            thread = self._thread
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        try:
            self.flush()
        finally:
            with self._cond:
                self._thread = None
                self._stopping = False
            self._wake.clear()

    def _run(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            with self._cond:
                if self._stopping:
                    return
            try:
                self.flush()
            except Exception as exc:  # the accesses keep waiting for the next try
                log.warning("could not write search access counts (will retry): %s", exc)

    # --- readers ----------------------------------------------------------------------
    def pending(self) -> int:
        """How many memories have accesses waiting."""
        with self._cond:
            return len(self._pending)

    def read(self, fetch: Callable[[], R], apply: Callable[[R, Pending], T]) -> T:
        """``apply(fetch(), waiting)``: what ``fetch`` read from the database with the
        accesses still waiting added, never counting a flushed access twice or not at
        all (see the module doc). ``apply`` runs under the log's lock, only once no
        flush committed since ``fetch`` began: the waiting counts cannot move then, and
        what ``fetch`` read is known to hold every flushed access."""
        for _ in range(_READ_TRIES):
            start = self.stable()
            got = fetch()
            with self._cond:
                if self._seq == start:
                    return apply(got, self._pending)
        with self._flush_lock:  # no flush commits while this holds it
            got = fetch()
            with self._cond:
                return apply(got, self._pending)

    def stable(self) -> int:
        """The sequence number once no flush is committing (waits for one that is)."""
        with self._cond:
            while self._seq % 2:
                self._cond.wait()
            return self._seq

    def unchanged_since(self, start: int, keys: Sequence[tuple[str, str]]) -> bool:
        """Whether no flush committed since :meth:`stable` returned ``start`` and no
        access of ``keys`` waits: what was read since then counts theirs exactly."""
        with self._cond:
            return self._seq == start and not any(k in self._pending for k in keys)

    @contextmanager
    def holding(self) -> Iterator[None]:
        """No flush (but one of this thread's) commits inside."""
        with self._flush_lock:
            yield
