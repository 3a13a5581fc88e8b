"""Plain data types shared by every layer.

These are dataclasses (cheap to build in bulk) rather than pydantic models; input
validation lives in :mod:`hello_memory.validation` and runs before anything is written.
"""

from __future__ import annotations

import copy
import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any

__all__ = [
    "ENTITY_NAMESPACE_UUID",
    "Entity",
    "GraphHit",
    "GraphStats",
    "MemoryItem",
    "MemoryStatus",
    "MemoryType",
    "Modality",
    "Relation",
    "SparseVector",
    "VectorHit",
    "VectorPoint",
    "copy_item",
    "entity_id",
    "new_id",
    "normalize_entity_name",
    "relation_id",
    "utcnow",
]


class MemoryType(str, Enum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PERCEPTUAL = "perceptual"


class Modality(str, Enum):
    TEXT = "text"
    IMAGE = "image"
    AUDIO = "audio"


class MemoryStatus(str, Enum):
    ACTIVE = "active"
    FORGOTTEN = "forgotten"


def utcnow() -> datetime:
    """Timezone-aware current time in UTC (all stored times are aware UTC)."""
    return datetime.now(timezone.utc)


def new_id() -> str:
    """A fresh random UUID string: the id of a memory, in every store."""
    return str(uuid.uuid4())


# Fixed namespace for deterministic entity / relation ids (uuid5). Never change it:
# ids derived from it are stored in every backend.
ENTITY_NAMESPACE_UUID = uuid.UUID("5b0c6f52-5d5e-4c0a-9a53-2f1b6c7d8e90")


def normalize_entity_name(name: str) -> str:
    """Case-folded, whitespace-collapsed form used for entity identity."""
    return " ".join(name.split()).casefold()


def entity_id(namespace: str, entity_type: str, name: str) -> str:
    """Stable id of an entity: the same namespace, type and name give the same id
    in every process (unlike Python's salted ``hash()``)."""
    key = "\x1f".join((namespace, entity_type.casefold(), normalize_entity_name(name)))
    return str(uuid.uuid5(ENTITY_NAMESPACE_UUID, key))


def relation_id(namespace: str, source_id: str, relation_type: str, target_id: str) -> str:
    """Stable id of a directed, typed relation between two entities."""
    key = "\x1f".join((namespace, source_id, relation_type.casefold(), target_id))
    return str(uuid.uuid5(ENTITY_NAMESPACE_UUID, "rel\x1f" + key))


@dataclass
class MemoryItem:
    """One memory: the record that the relational store keeps as the truth."""

    content: str
    namespace: str
    memory_type: MemoryType = MemoryType.EPISODIC
    id: str = field(default_factory=new_id)
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    modality: Modality = Modality.TEXT
    event_time: datetime = field(default_factory=utcnow)
    recorded_time: datetime = field(default_factory=utcnow)
    importance: float = 0.5
    access_count: int = 0
    last_access: datetime | None = None
    status: MemoryStatus = MemoryStatus.ACTIVE
    metadata: dict[str, Any] = field(default_factory=dict)
    content_hash: str | None = None
    # Validity (issue 15): the fact holds from ``valid_from`` (None: its event time)
    # until ``valid_to`` (None: still true); ``superseded_by`` names the memory that
    # replaced it (hello_memory/memory/supersede.py).
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None
    # The record's version (schema v7, issue 28): the record store adds 1 on every
    # update, and read-modify-write jobs (consolidate, forget, restore) write only while
    # it is still the version they read (docs/RELIABILITY.md). 0: not read from a store.
    version: int = field(default=0, compare=False, repr=False)
    # What the add that returned this item found (issue 15, idempotent add; never
    # stored): ``duplicate_of`` is the id of the memory with the same content, type and
    # namespace that was returned (or updated) instead of storing a copy;
    # ``near_duplicates`` the (id, cosine) of memories of the same type at or above
    # ``memory.dedup_threshold``.
    duplicate_of: str | None = field(default=None, compare=False, repr=False)
    near_duplicates: tuple[tuple[str, float], ...] = field(default=(), compare=False,
                                                           repr=False)


def copy_item(item: MemoryItem, *, own_metadata: bool = False) -> MemoryItem:
    """A shallow copy of ``item``, as ``copy.copy`` makes one but without its generic
    machinery (a search copies tens of shared records per call; issue 27, docs/
    PERFORMANCE.md); ``own_metadata``: with a copy of its metadata the caller may
    change (JSON values copied as such, anything else deep-copied)."""
    new = object.__new__(type(item))
    new.__dict__.update(item.__dict__)
    if own_metadata:
        new.metadata = _copied_json(item.metadata)
    return new


def _copied_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copied_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied_json(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return copy.deepcopy(value)


@dataclass(frozen=True)
class Entity:
    """A node of the entity graph. ``id`` is derived, never random."""

    namespace: str
    name: str
    type: str = "concept"
    properties: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def id(self) -> str:
        return entity_id(self.namespace, self.type, self.name)


@dataclass(frozen=True)
class Relation:
    """A directed, typed edge between two entities (by entity id)."""

    namespace: str
    source_id: str
    target_id: str
    type: str
    weight: float = 1.0
    properties: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def id(self) -> str:
        return relation_id(self.namespace, self.source_id, self.type, self.target_id)


@dataclass(frozen=True)
class GraphHit:
    """An entity reached from the query entities, with the memories that mention it."""

    entity_id: str
    name: str
    type: str
    hops: int
    memory_ids: frozenset[str]


@dataclass(frozen=True)
class GraphStats:
    entities: int
    relations: int
    mentions: int


@dataclass(frozen=True)
class SparseVector:
    """A sparse vector (e.g. lexical term frequencies): parallel index/value lists."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.values):
            raise ValueError("sparse vector needs as many values as indices")
        if any(not math.isfinite(v) for v in self.values):
            raise ValueError("sparse vector values must be finite")


@dataclass
class VectorPoint:
    """What a vector store keeps per memory: named vectors plus filterable payload."""

    id: str
    vectors: dict[str, list[float]]
    payload: dict[str, Any] = field(default_factory=dict)
    sparse: dict[str, SparseVector] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorHit:
    id: str
    score: float
    payload: dict[str, Any]
