"""The one disk guard (``storage.min_free_bytes``; docs/RELIABILITY.md "Disk space").

The embedded engines (SQLite, Qdrant Edge) crash with SIGBUS on a full disk instead of
failing the write, so writes are refused (:class:`InsufficientStorageError`, HTTP 507)
while the data directory's file system has less than the configured free space. The
guard is checked in two places:

- **before work starts**: each write path and job asks :meth:`DiskGuard.check` with an
  estimate of what it will write (``Stores.add`` / ``update``, the REST upload, RAG
  ingestion of text and paths, ``import-chats``, the maintenance jobs), so a refused
  write costs no parsing or embedding;
- **in the record store itself**: every write that feeds an index queues outbox rows in
  its own transaction (ARCHITECTURE decision 1), and the guard refuses any flush that
  queues new index work (an outbox row other than a delete) while under the floor.
  The transaction rolls back, so nothing is written, and a new route or job cannot
  forget the check: memories, media, document chunks, consolidation, reconcile and
  reindex all queue outbox rows. Deletes still go through (they are how space is
  freed); reads never write outbox rows.
"""

from __future__ import annotations

import os
import shutil
import threading
import weakref
from typing import TYPE_CHECKING, Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from hello_memory.errors import InsufficientStorageError, StoreError
from hello_memory.stores.records.models import OutboxRow

if TYPE_CHECKING:
    from hello_memory.stores.records import RecordStore

__all__ = ["DiskGuard"]


class DiskGuard:
    """The free-space floor of one data directory; inactive until :meth:`configure`
    gives it a path and a positive floor."""

    def __init__(self) -> None:
        self.path: str | None = None
        self.min_free_bytes = 0

    def configure(self, path: str | os.PathLike[str], min_free_bytes: int) -> None:
        self.path = os.fspath(path)
        self.min_free_bytes = int(min_free_bytes)

    @property
    def active(self) -> bool:
        return self.path is not None and self.min_free_bytes > 0

    def check(self, incoming: int = 0) -> None:
        """Raise :class:`InsufficientStorageError` when writing about ``incoming`` bytes
        would leave less than the floor free."""
        if not self.active or self.path is None:
            return
        probe = self.path  # the data directory may not exist yet: its nearest parent
        while probe and not os.path.exists(probe):
            parent = os.path.dirname(probe)
            if parent == probe:
                break
            probe = parent
        try:
            free = shutil.disk_usage(probe or ".").free
        except OSError:
            return
        if free - max(0, incoming) < self.min_free_bytes:
            raise InsufficientStorageError(
                f"only {free:,} bytes free on the data directory's disk, less than "
                f"storage.min_free_bytes ({self.min_free_bytes:,}): the write was refused "
                "and nothing was written; free space (the store reopens once there is)")

    def watch(self, records: RecordStore) -> None:
        """Enforce the floor in ``records``: a flush that queues index work (an outbox
        row that is not a delete) raises before anything is written."""
        with _lock:
            _watched[records] = self


# The record stores under a guard. One listener for every Session of the process finds
# the guard of the store a session writes to (a handful of stores: a short scan).
_watched: weakref.WeakKeyDictionary[RecordStore, DiskGuard] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _guard_of(session: Session) -> DiskGuard | None:
    bind = session.bind
    if bind is None:
        return None
    with _lock:
        watched = list(_watched.items())
    for records, guard in watched:
        try:
            if records.engine is bind:
                return guard
        except StoreError:  # that store is closed
            continue
    return None


@event.listens_for(Session, "before_flush")
def _refuse_index_work_under_the_floor(session: Session, _context: Any,
                                       _instances: Any) -> None:
    if not any(isinstance(o, OutboxRow) and o.op != "delete" for o in session.new):
        return
    guard = _guard_of(session)
    if guard is not None:
        guard.check()
