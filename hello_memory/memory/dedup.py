"""Idempotent add (issue 15): the same content in the same namespace and memory type
is one memory, and memories nearly the same are pointed out.

Content identity is ``validation.content_hash`` (SHA-256 of the NFC text with its
whitespace runs made one space), stored in ``hm_memory_items.content_hash`` and looked
up on the ``ix_items_ns_hash`` index: one query per namespace of a batch
(:meth:`MemoryRepository.find_by_hash`), never one per memory. What happens to a duplicate
is ``memory.on_duplicate``:

- ``return`` (default): nothing is written; the memory already stored is returned;
- ``update``: the stored memory takes the new add's importance and event time (when
  given) and its metadata merged over the old, and is returned;
- ``store``: a copy is stored (the behaviour before issue 15).

Only active memories count as stored: a current one, or a superseded one whose validity
covers the new add's event time (the same fact said again about the same time; said
about a time after it ended, it is news and is stored). Within one batch the first of
equal entries is stored and the later ones return it. Working memory is
checked against its own namespace list (bounded by its capacity).

A new memory of a stored type whose embedding has cosine >= ``memory.dedup_threshold``
with an existing memory of the same type and namespace (or an earlier one of the
batch) is still stored, and reported on the returned item as ``near_duplicates``
(id, cosine), best first; ``consolidate`` merges such memories within a type
(hello_memory/memory/lifecycle.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from hello_memory.errors import InvalidInputError
from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["DUPLICATE_MODES", "DuplicateMode", "Resolution", "duplicate_mode",
           "near_duplicates", "resolve"]

DuplicateMode = Literal["return", "update", "store"]
DUPLICATE_MODES: tuple[DuplicateMode, ...] = ("return", "update", "store")
# How many near-duplicates one memory reports.
NEAR_LIMIT = 3

Key = tuple[str, MemoryType, str]  # namespace, memory type, content hash


def duplicate_mode(value: object) -> DuplicateMode:
    if value not in DUPLICATE_MODES:
        raise InvalidInputError(f"on_duplicate must be one of {', '.join(DUPLICATE_MODES)}, "
                                f"got {value!r}")
    return value


def _key(item: MemoryItem) -> Key:
    assert item.content_hash is not None  # validate_item set it
    return item.namespace, MemoryType(item.memory_type), item.content_hash


def _counts(item: MemoryItem) -> bool:
    """Whether ``item`` is a memory later adds are compared with: active and still true."""
    return item.status == MemoryStatus.ACTIVE and item.valid_to is None


@dataclass
class Resolution:
    """The outcome for a batch: ``fresh`` is what gets stored; ``existing[n]`` is the
    stored memory that entry ``n`` duplicates, ``earlier[n]`` the position of the
    earlier entry of the same batch it repeats."""

    fresh: list[int] = field(default_factory=list)
    existing: dict[int, MemoryItem] = field(default_factory=dict)
    earlier: dict[int, int] = field(default_factory=dict)


def resolve(mm: MemoryManager, items: Sequence[MemoryItem], mode: DuplicateMode) -> Resolution:
    """Which of ``items`` are new, which repeat a stored memory, which repeat an earlier
    item of the batch (everything fresh with ``mode="store"``)."""
    out = Resolution()
    if mode == "store":
        out.fresh = list(range(len(items)))
        return out
    known: dict[Key, MemoryItem] = {}
    stored_ns: dict[str, list[str]] = {}
    working_ns: set[str] = set()
    for item in items:
        if item.memory_type == MemoryType.WORKING:
            working_ns.add(item.namespace)
        elif _counts(item):
            stored_ns.setdefault(item.namespace, []).append(item.content_hash or "")
    superseded: dict[Key, list[MemoryItem]] = {}
    for ns, hashes in stored_ns.items():
        for found in mm.stores.records.memories.find_by_hash(ns, hashes):
            if found.valid_to is None:
                known.setdefault(_key(found), found)  # the oldest of equal memories
            else:
                superseded.setdefault(_key(found), []).append(found)
    for ns in working_ns:
        for found in mm.working.list(ns):
            if found.content_hash is not None:
                known.setdefault(_key(found), found)
    first: dict[Key, int] = {}
    for n, item in enumerate(items):
        if not _counts(item):
            out.fresh.append(n)
            continue
        key = _key(item)
        earlier_fact = _covering(superseded.get(key, ()), item)
        if key in known:
            out.existing[n] = known[key]
        elif earlier_fact is not None:
            out.existing[n] = earlier_fact
        elif key in first:
            out.earlier[n] = first[key]
        else:
            first[key] = n
            out.fresh.append(n)
    return out


def _covering(found: Sequence[MemoryItem], item: MemoryItem) -> MemoryItem | None:
    """The superseded memory among ``found`` that was true at ``item``'s event time."""
    when = item.event_time
    for old in found:
        start = old.valid_from or old.event_time
        if old.valid_to is not None and start <= when < old.valid_to:
            return old
    return None


def update_changes(entry: Mapping[str, Any], existing: MemoryItem) -> dict[str, Any]:
    """What ``on_duplicate="update"`` changes on ``existing`` from a repeated add:
    importance and event time when the add gave them, its metadata merged over the old."""
    changes: dict[str, Any] = {}
    if entry.get("importance") is not None:
        changes["importance"] = entry["importance"]
    if entry.get("metadata"):
        changes["metadata"] = {**existing.metadata, **dict(entry["metadata"])}
    if entry.get("event_time") is not None:
        changes["event_time"] = entry["event_time"]
    return changes


def near_duplicates(mm: MemoryManager, items: Sequence[MemoryItem],
                    vectors: npt.NDArray[np.float32]) -> list[tuple[tuple[str, float], ...]]:
    """For each of ``items`` (about to be stored, with their embeddings): the stored
    memories of its namespace and type, and the earlier items of the batch of the same
    namespace and type, with cosine >= ``mm.dedup_threshold``, best first."""
    threshold = mm.dedup_threshold
    out: list[tuple[tuple[str, float], ...]] = []
    for n, (item, vector) in enumerate(zip(items, vectors, strict=True)):
        hits = mm.stores.vectors.nearest(
            MEMORY_COLLECTION, vector.tolist(), namespace=item.namespace, using=DENSE,
            limit=NEAR_LIMIT, score_threshold=threshold,
            filters={"memory_type": item.memory_type.value,
                     "status": MemoryStatus.ACTIVE.value})
        found = {h.id: float(h.score) for h in hits if h.score >= threshold}
        if n:
            sims = vectors[:n] @ vector  # L2-normalised embeddings: dot = cosine
            for k in np.flatnonzero(sims >= threshold):
                other = items[int(k)]
                if other.namespace == item.namespace and other.memory_type == item.memory_type:
                    found[other.id] = max(found.get(other.id, 0.0), float(sims[k]))
        best = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))[:NEAR_LIMIT]
        out.append(tuple((i, round(min(s, 1.0), 6)) for i, s in best))
    return out


def as_duplicate(item: MemoryItem, of: str) -> MemoryItem:
    """A copy of ``item`` marked as what a repeated add returned."""
    return replace(item, duplicate_of=of, near_duplicates=())
