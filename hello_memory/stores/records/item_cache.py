"""Memory records kept in process for the search (issue 27, item 2).

Each search reads the records of its ~100 candidates; most of them were candidates of
the searches before. :class:`ItemCache` keeps the records read (bounded, least
recently used out) so that reading them again costs dictionary lookups instead of a
query and building ~100 items (2-3 ms at 10k memories).

It is only correct while every write to the records goes through this process's
repository, which tells the cache after each commit (:meth:`ItemCache.invalidate`):
the record store turns it on for SQLite, which one process holds (ARCHITECTURE.md:
the embedded directory opens in one process; the per-key locks are in-process there
too), and leaves it off where other processes may write (PostgreSQL: there what is
derived from the records is kept at the database's write generation instead,
stores/records/generation.py).

Races. A reader that misses reads the database and then fills the cache; a write that
commits in between must not leave the older record cached. Every invalidation adds 1
to a generation, and a fill only goes in while the generation is still the one the
reader saw before reading (:meth:`lookup`, :meth:`fill`): a write that committed
after the reader's read invalidates after it, so either the fill is refused or the
invalidation removes what it put in. Between a write's commit and its invalidation
(both inside the write call) a reader may still get the record before the write, as it
would have before the write call returned. The generation of each namespace (every
write to it, adds too) lets a caller cache what it derives from a namespace's records
(the multilingual view's listing, retrieval/_hybrid_language.py).

The items handed out are shared: callers read them and never change them (the
repository's ``get_items(..., shared=True)``; the retriever copies the hits it returns).

Where other processes write too (PostgreSQL), ``MemoryRepository.kept_records`` (a
:class:`~hello_memory.kept.KeptValues` of CACHE_ITEMS records) keeps a search's records
instead, each at the database's write generation of its namespace
(``hm_namespace_totals.generation``, stores/records/generation.py) that the search pinned
(``MemoryRepository.pinned``). Every write of a record moves that generation in its own
transaction, so records kept under the generation a search reads are the records as
they are; the access bookkeeping moves nothing (access.py), so their ``access_count``
and ``last_access`` may lag. No step of the search reads those two; the records of the
hits a search returns are read again (``MemoryRepository.released``).
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from hello_memory.types import MemoryItem

__all__ = ["CACHE_ITEMS", "ItemCache"]

# Records kept (a record is its text plus ~1 KB of fields: 20,000 is tens of MB).
CACHE_ITEMS = 20_000
# Each cache of the process (a store opened again gets a new one) numbers its
# namespace generations apart from every other's.
_EPOCHS = itertools.count(1)


class ItemCache:
    def __init__(self, capacity: int = CACHE_ITEMS) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()  # guards everything below
        self._items: OrderedDict[str, MemoryItem] = OrderedDict()
        self._generation = 0
        self._epoch = next(_EPOCHS)
        self._namespaces: dict[str, int] = {}

    def lookup(self, ids: Sequence[str]) -> tuple[dict[str, MemoryItem], int]:
        """The cached items of ``ids`` (any namespace: the caller checks) and the
        generation to pass to :meth:`fill` with what it reads for the others."""
        with self._lock:
            found = {}
            for memory_id in ids:
                item = self._items.get(memory_id)
                if item is not None:
                    found[memory_id] = item
                    self._items.move_to_end(memory_id)
            return found, self._generation

    def fill(self, items: Iterable[MemoryItem], generation: int) -> bool:
        """Keep ``items``, read from the database after :meth:`lookup` returned
        ``generation``, unless a write invalidated anything since (then nothing is
        kept: the read may predate that write's commit)."""
        with self._lock:
            if generation != self._generation:
                return False
            for item in items:
                self._items[item.id] = item
                self._items.move_to_end(item.id)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
            return True

    def invalidate(self, namespace: str, ids: Iterable[str] | None = None) -> None:
        """After a committed write of ``ids`` in ``namespace`` (every record of it when
        None): drop them and move both generations on."""
        with self._lock:
            self._generation += 1
            self._namespaces[namespace] = self._namespaces.get(namespace, 0) + 1
            if ids is None:
                for memory_id in [m for m, i in self._items.items() if i.namespace == namespace]:
                    del self._items[memory_id]
            else:
                for memory_id in ids:
                    self._items.pop(memory_id, None)

    def replace(self, items: Iterable[MemoryItem]) -> None:
        """Put newer versions of cached records in place (those not cached stay out),
        moving the generation on so a fill read before them is refused."""
        with self._lock:
            self._generation += 1
            for item in items:
                if item.id in self._items:
                    self._items[item.id] = item

    def cached(self, memory_id: str) -> MemoryItem | None:
        with self._lock:
            return self._items.get(memory_id)

    def namespace_generation(self, namespace: str) -> tuple[int, int]:
        """A value that changes with every write to ``namespace`` this process
        commits, and differs from every value another cache of the process gives."""
        with self._lock:
            return self._epoch, self._namespaces.get(namespace, 0)

    def clear(self) -> None:
        """Forget everything (the store closes): no value given before holds after."""
        with self._lock:
            self._items.clear()
            self._generation += 1
            self._epoch = next(_EPOCHS)
            self._namespaces.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
