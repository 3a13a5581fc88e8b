"""Idempotent add (issue 15): the same content in the same namespace, memory type and
``user_id`` is one memory, and memories nearly the same are pointed out.

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

Users are kept apart (issue 28): in a shared namespace one user's "I like green tea."
is not another user's memory; the same text with another ``user_id`` (or none) is
stored as its own memory.

Under concurrency (issue 28, :func:`store`): looking up and storing are two steps, so
identical adds running at once could each find nothing and each store a copy. A
stored memory added by the ``return`` / ``update`` modes therefore holds a key, unique
per namespace among current memories (``hm_memory_items.dedup_key``, schema v7: the
type, the user and the content hash; ``stores/records/memories.py``, the key from
``stores/records/_memory_rows.py`` ``dedup_key``). The add that commits second finds
the key taken (``DuplicateKeyError``: nothing of its batch was written), looks up
again and returns the memory stored first. The database decides,
so this holds across API workers on one PostgreSQL database too. Working memory (one
process) is serialised by a lock instead.

A new memory of a stored type whose embedding has cosine >= ``memory.dedup_threshold``
with an existing memory of the same type and namespace (or an earlier one of the
batch) is still stored, and reported on the returned item as ``near_duplicates``
(id, cosine), best first; ``consolidate`` merges such memories within a type
(hello_memory/services/lifecycle.py).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from hello_memory.errors import InvalidInputError
from hello_memory.ports.vector import VectorFilter
from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION
from hello_memory.stores.records import DuplicateKeyError, WriteConflictError
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, VectorHit

if TYPE_CHECKING:
    from hello_memory.memory.working import WorkingMemory
    from hello_memory.stores.bundle import Stores

__all__ = ["DUPLICATE_MODES", "DedupHost", "DuplicateMode", "Resolution", "duplicate_mode",
           "merge_repeat", "near_duplicates", "resolve", "store"]

DuplicateMode = Literal["return", "update", "store"]
DUPLICATE_MODES: tuple[DuplicateMode, ...] = ("return", "update", "store")
# How many near-duplicates one memory reports.
NEAR_LIMIT = 3

Key = tuple[str, MemoryType, str | None, str]  # namespace, type, user_id, content hash

# Working memory lives in this process: adds of working items look up and store under
# this lock (stored types are serialised by the record store's unique key instead).
_WORKING_ADDS = threading.Lock()
# CAS rounds of merge_repeat: every lost round means another merge committed, so the
# rounds end; past this many the conflict is the caller's (a typed RecordStoreError),
# never a write over a merge it has not read.
_REPEAT_ROUNDS = 64


class DedupHost(Protocol):
    """What this module reads of the caller it is given (``mm`` below): the stores, the
    working memory and the near-duplicate threshold. The ingest service
    (services/ingest.py) is one; this module never names the facade."""

    @property
    def stores(self) -> Stores: ...

    @property
    def working(self) -> WorkingMemory: ...

    @property
    def dedup_threshold(self) -> float: ...


def duplicate_mode(value: object) -> DuplicateMode:
    if value not in DUPLICATE_MODES:
        raise InvalidInputError(f"on_duplicate must be one of {', '.join(DUPLICATE_MODES)}, "
                                f"got {value!r}")
    return value


def _key(item: MemoryItem) -> Key:
    assert item.content_hash is not None  # validate_item set it
    return item.namespace, MemoryType(item.memory_type), item.user_id, item.content_hash


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


def resolve(mm: DedupHost, items: Sequence[MemoryItem], mode: DuplicateMode) -> Resolution:
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


def store(mm: DedupHost, items: Sequence[MemoryItem], mode: DuplicateMode,
          vectors_out: dict[str, npt.NDArray[np.float32]] | None = None, *,
          embedded: Mapping[str, Any] | None = None
          ) -> tuple[Resolution, list[MemoryItem]]:
    """Resolve ``items`` (:func:`resolve`) and store the fresh ones: the stored types
    in one transaction holding their dedup keys (not with ``mode="store"``), working
    ones in working memory. When an identical add committed between the lookup and
    the insert (``DuplicateKeyError``: nothing written), look up again and store what
    is still fresh; each round finds at least one more stored memory, so it ends.
    Returns the resolution and the items stored in the record store; ``vectors_out``
    receives each stored item's vector by id (the superseder's candidates, issue 26);
    ``embedded`` (text -> vector, from this store's embedder) spares embedding an item
    whose content is exactly such a text."""
    working = mode != "store" and any(i.memory_type == MemoryType.WORKING for i in items)
    ready_by_text = embedded or {}
    vectors: dict[str, npt.NDArray[np.float32]] = {} if vectors_out is None else vectors_out
    with _WORKING_ADDS if working else nullcontext():
        for attempt in range(len(items) + 2):
            plan = resolve(mm, items, mode)
            fresh = [items[n] for n in plan.fresh]
            stored = [i for i in fresh if i.memory_type != MemoryType.WORKING]
            for item in stored:
                ready = ready_by_text.get(item.content)
                if item.id not in vectors and ready is not None:
                    vectors[item.id] = np.asarray(ready, dtype=np.float32)
            todo = [i for i in stored if i.id not in vectors]
            if todo:  # embedded once, even when a round is repeated
                made = mm.stores.embedder.embed([i.content for i in todo])
                vectors.update(zip((i.id for i in todo), made, strict=True))
            batch = np.stack([vectors[i.id] for i in stored]) if stored else None
            if stored and batch is not None and mode != "store":
                for item, near in zip(stored, near_duplicates(mm, stored, batch),
                                      strict=True):
                    item.near_duplicates = near
            try:
                mm.stores.add(stored, batch, keyed=mode != "store")
            except DuplicateKeyError:
                if attempt == len(items) + 1:
                    raise
                continue  # an identical add won the race: it is found on the next look
            mm.working.add_many([i for i in fresh if i.memory_type == MemoryType.WORKING])
            return plan, stored
    raise AssertionError("unreachable")  # pragma: no cover


def merge_repeat(mm: DedupHost, entry: Mapping[str, Any], existing: MemoryItem
                 ) -> MemoryItem:
    """``on_duplicate="update"``: the repeated entry's fields onto the stored memory,
    by compare-and-swap on the version read (its metadata is merged over the old: a
    metadata update acknowledged since the read is merged too, never overwritten)."""
    for attempt in range(_REPEAT_ROUNDS):
        changes = update_changes(entry, existing)
        if not changes:
            return existing
        if existing.memory_type == MemoryType.WORKING:
            return mm.working.update(existing.namespace, existing.id, **changes)
        try:
            return mm.stores.update(existing.namespace, existing.id,
                                    expect_version=existing.version, **changes)
        except WriteConflictError:
            # a short, growing pause so that the writers racing on one memory spread out
            time.sleep(random.uniform(0, min(0.05, 0.001 * 2 ** attempt)))
            existing = mm.stores.records.memories.get_item(existing.namespace, existing.id)
    raise WriteConflictError(f"memory {existing.id} kept changing under {_REPEAT_ROUNDS} "
                             "merges of a repeated add; try again")


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


def near_duplicates(mm: DedupHost, items: Sequence[MemoryItem],
                    vectors: npt.NDArray[np.float32]) -> list[tuple[tuple[str, float], ...]]:
    """For each of ``items`` (about to be stored, with their embeddings): the stored
    memories of its namespace and type, and the earlier items of the batch of the same
    namespace and type, with cosine >= ``mm.dedup_threshold``, best first. The stored
    ones come from one batched search per namespace and type (``nearest_batch``: the
    namespace is scored once per add, not once per memory; issue 27)."""
    threshold = mm.dedup_threshold
    groups: dict[tuple[str, MemoryType], list[int]] = {}
    for n, item in enumerate(items):
        groups.setdefault((item.namespace, MemoryType(item.memory_type)), []).append(n)
    stored: dict[int, list[VectorHit]] = {}
    for (namespace, memory_type), members in groups.items():
        found_hits = mm.stores.vectors.nearest_batch(
            MEMORY_COLLECTION, [vectors[n].tolist() for n in members], namespace=namespace,
            using=DENSE, limit=NEAR_LIMIT, score_threshold=threshold,
            filters=VectorFilter.where(memory_type=memory_type.value,
                                       status=MemoryStatus.ACTIVE.value))
        stored.update(zip(members, found_hits, strict=True))
    out: list[tuple[tuple[str, float], ...]] = []
    for n, (item, vector) in enumerate(zip(items, vectors, strict=True)):
        found = {h.id: float(h.score) for h in stored[n] if h.score >= threshold}
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
