"""The ingest service: the add path of the facade (issue 31).

``MemoryManager.add`` / ``add_many`` / ``add_embedded`` build and check every entry
here, then store them through the idempotent add of ``memory/dedup.py`` (look up,
embed, store; identical adds racing store one memory, issue 28) and let the superseder
mark the facts they update (``memory/supersede.py``). The graph links each write puts
in the entity graph are ``text/links.py`` ``GraphLinks``, a part of the stores' write.

The service is built by the facade from its parts (docs/ARCHITECTURE.md, Layers): the
stores, the working memory, the superseder, the namespace
resolver and the add settings (``memory.default_type``, ``memory.dedup_threshold``,
``memory.on_duplicate``, ``memory.event_time_from_text``), the configured LLM and
``memory.extract_facts`` (``remember_conversation``). It never imports the facade;
``memory/dedup.py`` reads ``stores``, ``working`` and ``dedup_threshold`` from it
(``dedup.DedupHost``), ``memory/extraction.py`` ``llm``, ``extract_facts`` and
``add_many`` (``extraction.FactWriter``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hello_memory.errors import InvalidInputError
from hello_memory.memory import dedup
from hello_memory.memory.dedup import DuplicateMode, duplicate_mode
from hello_memory.memory.importance import classify_memory_type, estimate_importance
from hello_memory.text.links import STORED_TYPES
from hello_memory.text.timeparse import find_time_ranges
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import (
    validate_batch,
    validate_content,
    validate_importance,
    validate_item,
    validate_memory_type,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from hello_memory.llm.base import LLMClient
    from hello_memory.memory.supersede import Superseder
    from hello_memory.memory.working import WorkingMemory
    from hello_memory.stores.bundle import Stores

__all__ = ["STORED_TYPES", "IngestService", "date_in_text"]

# A year written with its date: "2026-12-18", "18 December 2026", "2026年12月18日".
_WRITTEN_YEAR = re.compile(r"\d{4}|[零〇一二三四五六七八九]{4}")


def date_in_text(content: str, reference: datetime) -> datetime | None:
    """The start of the day a text names when it names exactly one full date (day,
    month and year written), else None: the event time ``memory.event_time_from_text``
    gives an add without one."""
    days = {r.start for r in find_time_ranges(content[:20_000], reference)
            if r.granularity == "day" and _WRITTEN_YEAR.search(r.text)}
    return days.pop() if len(days) == 1 else None


class IngestService:
    """Builds, checks and stores new memories (module doc). Building it reads and
    writes nothing."""

    def __init__(self, stores: Stores, working: WorkingMemory, *,
                 superseder: Superseder,
                 namespace: Callable[[str | None], str], default_type: MemoryType,
                 dedup_threshold: float, on_duplicate: DuplicateMode,
                 event_time_from_text: bool, clock: Callable[[], datetime],
                 llm: LLMClient | None = None, extract_facts: bool = False) -> None:
        self.stores = stores
        self.working = working
        self.superseder = superseder
        self._namespace = namespace  # None -> the facade's default namespace
        self.default_type = default_type
        self.dedup_threshold = dedup_threshold
        self.on_duplicate = on_duplicate
        self.event_time_from_text = event_time_from_text
        self._clock = clock
        self.llm = llm  # conversation extraction (memory/extraction.py); None: off
        self.extract_facts = extract_facts

    def build(self, content: Any, memory_type: MemoryType | str | None, importance: Any,
              metadata: Mapping[str, Any] | None, namespace: str | None,
              auto_classify: bool, **ids: Any) -> MemoryItem:
        """One entry checked and turned into a new, unstored memory."""
        validate_content(content, limits=self.stores.limits)
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInputError("metadata must be a mapping")
        if memory_type is not None:
            mtype = validate_memory_type(memory_type)
        elif auto_classify:
            mtype = classify_memory_type(content)
        else:
            mtype = self.default_type
        if mtype == MemoryType.PERCEPTUAL:
            raise InvalidInputError("add images, audio and perceptual text through "
                                    "manager.perceptual.add(...)")
        imp = (estimate_importance(content, metadata) if importance is None
               else validate_importance(importance))
        fields = {k: v for k, v in ids.items() if v is not None}
        return MemoryItem(content=content, namespace=self._namespace(namespace),
                          memory_type=mtype, importance=imp,
                          metadata=dict(metadata or {}), **fields)

    def add_embedded(self, entries: Iterable[Mapping[str, Any]], *,
                     on_duplicate: str | None = None,
                     embedded: Mapping[str, npt.NDArray[np.float32]] | None = None
                     ) -> list[MemoryItem]:
        """Store ``entries`` (``MemoryManager.add_many`` / ``add_embedded``): every
        entry is validated first (one bad entry stores nothing), then one embedding
        batch and one transaction for the stored types; ``embedded`` gives vectors by
        text computed beforehand, used for an entry whose stored text is exactly that.

        Idempotent (issue 15, memory/dedup.py): an entry whose content is already
        stored in its namespace and type (or repeats an earlier entry) follows
        ``on_duplicate`` (default ``memory.on_duplicate``): ``return`` gives back the
        stored memory, ``update`` merges the entry into it first, ``store`` keeps a
        copy. Returned items are in entry order; a repeated one has ``duplicate_of`` set
        (its own id), a new one lists ``near_duplicates`` (cosine >= dedup_threshold)."""
        mode = self.on_duplicate if on_duplicate is None else duplicate_mode(on_duplicate)
        allowed = {"content", "memory_type", "importance", "metadata", "namespace", "user_id",
                   "agent_id", "session_id", "event_time", "auto_classify"}
        entries = list(entries)
        items: list[MemoryItem] = []
        for n, entry in enumerate(entries):
            unknown = set(entry) - allowed
            if unknown:
                raise InvalidInputError(f"entry {n}: unknown field(s) {sorted(unknown)}")
            items.append(self.build(
                entry.get("content"), entry.get("memory_type"), entry.get("importance"),
                entry.get("metadata"), entry.get("namespace"),
                bool(entry.get("auto_classify", False)), user_id=entry.get("user_id"),
                agent_id=entry.get("agent_id"), session_id=entry.get("session_id"),
                event_time=entry.get("event_time")))
        if self.event_time_from_text:
            for entry, item in zip(entries, items, strict=True):
                if entry.get("event_time") is None:
                    item.event_time = date_in_text(item.content, self._clock()) or item.event_time
        for item in items:
            validate_item(item, self.stores.limits)
        validate_batch(len(items), self.stores.limits)  # before any embedding work
        # look up, embed, store; identical adds racing store one (issue 28, dedup.store)
        vectors: dict[str, Any] = {}
        plan, stored = dedup.store(self, items, mode, vectors, embedded=embedded)
        self.superseder.apply(stored, vectors)  # facts that update: memory/supersede.py
        out = list(items)
        for n, existing in plan.existing.items():
            if mode == "update":
                existing = self.merge_repeat(entries[n], existing)
            out[n] = dedup.as_duplicate(existing, existing.id)
        for n, first in plan.earlier.items():
            out[n] = dedup.as_duplicate(items[first], items[first].id)
        return out

    def add_many(self, entries: Iterable[Mapping[str, Any]], *,
                 on_duplicate: str | None = None) -> list[MemoryItem]:
        """:meth:`add_embedded` with every vector computed here."""
        return self.add_embedded(entries, on_duplicate=on_duplicate)

    def remember_conversation(self, turns: Sequence[Mapping[str, Any] | tuple[str, str]],
                              **options: Any) -> list[MemoryItem]:
        """Store the lasting facts of a conversation (``[{"role", "content"}, ...]``):
        extracted by the LLM when ``memory.extract_facts`` (or ``extract=True``) and
        an LLM is configured, else the turns themselves; see memory/extraction.py.
        ``options``: namespace, user_id, agent_id, session_id, event_time, extract."""
        from hello_memory.memory.extraction import remember_conversation

        return remember_conversation(self, turns, **options)

    def merge_repeat(self, entry: Mapping[str, Any], existing: MemoryItem) -> MemoryItem:
        """``on_duplicate="update"``: the repeated entry's fields onto the stored memory."""
        return dedup.merge_repeat(self, entry, existing)
