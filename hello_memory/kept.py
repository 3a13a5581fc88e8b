"""Values kept while a write generation stands (issue 27; docs/PERFORMANCE.md, "Other
fast paths on the search path").

A store counts the writes of each namespace (a *generation*:
``MemoryRepository.generation``, ``SQLiteGraphStore.generation``), in the process where
it alone writes its data, in the database where other processes write too
(``hm_namespace_totals.generation``, stores/records/generation.py). What is derived
from that data can be kept under the generation it was read at and used while the
generation is unchanged. :class:`KeptValues` is that table: bounded, least recently
used out, safe across threads. The search keeps its derived values in one
(``HybridRetriever._kept`` / ``_kept_each``), the SQL graph store its name lookups, and
the memory records a search reads where the record cache is off
(``MemoryRepository.kept_records``). The caller takes the generation *before* it
reads, so a write committed during the read leaves a value marked with the older
generation, which the next call reads again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Generic, TypeVar

__all__ = ["KeptValues"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class KeptValues(Generic[K, V]):
    """At most ``capacity`` values, each under a key with the generation it was read at."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._values: OrderedDict[K, tuple[Hashable, V]] = OrderedDict()

    def get(self, keys: Sequence[K], generation: Hashable) -> dict[K, V]:
        """Those of ``keys`` kept at ``generation`` (now the most recently used)."""
        found: dict[K, V] = {}
        with self._lock:
            for key in keys:
                kept = self._values.get(key)
                if kept is not None and kept[0] == generation:
                    self._values.move_to_end(key)
                    found[key] = kept[1]
        return found

    def put(self, values: Mapping[K, V], generation: Hashable) -> None:
        """Keep ``values`` at ``generation``; the least recently used beyond
        ``capacity`` go."""
        with self._lock:
            for key, value in values.items():
                self._values[key] = (generation, value)
                self._values.move_to_end(key)
            while len(self._values) > self.capacity:
                self._values.popitem(last=False)

    def get_or_read(self, key: K, generation: Hashable, read: Callable[[], V]) -> V:
        """The value kept under ``key`` at ``generation``, else ``read()``, kept."""
        found = self.get([key], generation)
        if key in found:
            return found[key]
        value = read()
        self.put({key: value}, generation)
        return value

    def clear(self) -> None:
        """Forget every value (their store closes)."""
        with self._lock:
            self._values.clear()

    def __len__(self) -> int:
        return len(self._values)
