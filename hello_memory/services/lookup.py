"""The lookup service: one memory by its id or its short handle.

``MemoryManager.get``, ``resolve_id``, ``short_ids`` and ``mentioned_times`` delegate
here (issue 31). A short handle is the first ``HANDLE_CHARS`` or more characters of an
id, about 6 tokens where the whole uuid costs about 25: the context block shows it and
every call that takes an id takes it too (docs/TOOLS.md, "The context block").

Every method takes the namespace already resolved; the facade turns None into its
default namespace first. Working memory is read as well as the stored memories.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from hello_memory.errors import InvalidInputError
from hello_memory.types import MemoryItem

if TYPE_CHECKING:
    from hello_memory.memory.working import WorkingMemory
    from hello_memory.stores.bundle import Stores
    from hello_memory.text.timeparse import TimeRange as TimeSpan

__all__ = ["HANDLE_CHARS", "ID_CHARS", "LookupService"]

HANDLE_CHARS = 8
ID_CHARS = 36
_HANDLE = re.compile(r"[0-9a-f-]+")


class LookupService:
    """Ids, short handles and single memories of the stores and the working memory
    (module doc). Building it reads nothing."""

    def __init__(self, stores: Stores, working: WorkingMemory) -> None:
        self.stores = stores
        self.working = working

    def resolve_id(self, ns: str, memory_id: str) -> str:
        """The full id of ``memory_id``, which may be a short handle: the first
        HANDLE_CHARS or more characters of an id, as the context block shows them
        (docs/TOOLS.md, "The context block"). A full id, or a handle no memory of the
        namespace starts with, is returned as it is (the caller then finds it or
        not); a handle more than one memory starts with is an InvalidInputError."""
        if not (isinstance(memory_id, str) and HANDLE_CHARS <= len(memory_id) < ID_CHARS
                and _HANDLE.fullmatch(memory_id)):
            return memory_id
        found = self._ids_starting(ns, memory_id)
        if len(found) > 1:
            raise InvalidInputError(f"{memory_id!r} starts more than one memory id in "
                                    f"namespace {ns!r}: give more of the id")
        return found[0] if found else memory_id

    def short_ids(self, ns: str, memory_ids: Iterable[str]) -> dict[str, str]:
        """The shortest handle of each id of at least HANDLE_CHARS characters that no
        other memory of ``ns`` starts with (the whole id where another one does), the
        stored ids read in one statement (a context block shows a handle per line;
        docs/PERFORMANCE.md, "Short handles")."""
        ids = list(dict.fromkeys(memory_ids))
        handles = {i: i[:HANDLE_CHARS] for i in ids
                   if len(i) == ID_CHARS and _HANDLE.fullmatch(i[:HANDLE_CHARS])}
        found = self._ids_starting_each(ns, list(dict.fromkeys(handles.values())))
        return {i: handles[i] if i in handles and len(found[handles[i]]) <= 1 else i
                for i in ids}

    def _ids_starting(self, ns: str, prefix: str) -> list[str]:
        """At most two ids of the namespace's memories (working and stored) that start
        with ``prefix``: enough to tell one from many."""
        return self._ids_starting_each(ns, [prefix])[prefix]

    def _ids_starting_each(self, ns: str, prefixes: Sequence[str]) -> dict[str, list[str]]:
        """:meth:`_ids_starting` of each prefix."""
        stored = self.stores.records.memories.ids_starting_each(ns, prefixes, limit=2)
        return {p: list(dict.fromkeys([*self.working.ids_starting(ns, p), *stored[p]]))
                for p in prefixes}

    def get(self, ns: str, memory_id: str) -> MemoryItem:
        """One memory, working or stored, by its id or handle; NotFoundError if none."""
        memory_id = self.resolve_id(ns, memory_id)
        item = self.working.get(ns, memory_id)
        return item if item is not None else self.stores.records.memories.get_item(ns, memory_id)

    def mentioned_times(self, ns: str, memory_id: str) -> list[TimeSpan]:
        """The time ranges the memory's text mentions, resolved against its event time
        when it was written (``memory.times_from_text``; the symbolic view filters on
        them, see hello_memory/retrieval/views.py)."""
        memory_id = self.resolve_id(ns, memory_id)
        self.stores.records.memories.get_item(ns, memory_id)  # NotFoundError for an unknown id
        return self.stores.records.memories.mentioned_times(ns, memory_id)
