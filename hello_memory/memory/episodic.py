"""Episodic memory: events with their time, session and participants.

Records (the truth) sit in the record store; vectors in Qdrant's memory collection
with the filterable fields in the payload. Retrieval:

1. structured pre-filter — namespace, type, status, user/agent/session, event-time
   range and minimum importance — applied as a Qdrant payload filter (the payload is
   kept in step with the record through the outbox), then re-checked on the records;
2. dense search over the filtered candidates (over-fetching ``CANDIDATE_FACTOR``×);
3. score = (0.8·similarity + 0.2·recency) × (0.8 + 0.4·importance), recency =
   0.5 ** (age_days / half_life_days) with a 30-day default half-life
   (:data:`hello_memory.memory.scoring.EPISODIC`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.errors import InvalidInputError
from hello_memory.memory.scoring import EPISODIC, ScoringProfile, SearchHit, clip_similarity, score
from hello_memory.ports.vector import Between, Condition, VectorFilter
from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION, Stores
from hello_memory.stores.records import ItemFilter
from hello_memory.text.links import STORED_TYPES
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, utcnow
from hello_memory.validation import require_namespace, validate_top_k

__all__ = ["CANDIDATE_FACTOR", "EPISODE_FIELDS", "EpisodicMemory", "payload_filters"]

CANDIDATE_FACTOR = 4
# Episode attributes kept in the record's metadata.
EPISODE_FIELDS = ("participants", "context", "outcome", "tags")


def payload_filters(flt: ItemFilter, *, all_active: bool = False) -> VectorFilter:
    """The vector payload filter equivalent to ``flt`` (see bundle.memory_payload); the
    validity conditions (``as_of``, ``current``) have no payload field and are checked
    on the records (:func:`matches`).

    A condition every point of the memory collection meets is left out: Qdrant checks
    each condition on each point it scores, and at 10k memories the two a default
    search carried (both stored types, active) cost about half of each query
    (docs/PERFORMANCE.md, "Conditions every point meets"). So is ``memory_type`` when
    ``flt`` asks for every type the collection holds (STORED_TYPES), and ``status``
    when it asks for active memories and the caller knows the namespace holds no other
    (``all_active``). The records stay the truth: every hit is checked on its record."""
    out: dict[str, Condition] = {}
    if flt.memory_types is not None and not set(STORED_TYPES) <= {
            MemoryType(t) for t in flt.memory_types}:
        out["memory_type"] = tuple(MemoryType(t).value for t in flt.memory_types)
    if flt.status is not None and not (all_active and flt.status == MemoryStatus.ACTIVE):
        out["status"] = MemoryStatus(flt.status).value
    for name in ("user_id", "agent_id", "session_id"):
        value = getattr(flt, name)
        if value is not None:
            out[name] = value
    if flt.since is not None or flt.until is not None:
        out["event_time"] = Between(gte=flt.since, lte=flt.until)
    if flt.min_importance is not None:
        out["importance"] = Between(gte=flt.min_importance)
    return VectorFilter(out)


def matches(item: MemoryItem, flt: ItemFilter) -> bool:
    """``flt`` checked on the record itself (the truth, if a payload lags behind)."""
    if flt.memory_types is not None and item.memory_type not in flt.memory_types:
        return False
    if flt.status is not None and item.status != flt.status:
        return False
    for name in ("user_id", "agent_id", "session_id"):
        want = getattr(flt, name)
        if want is not None and getattr(item, name) != want:
            return False
    if flt.since is not None and item.event_time < flt.since:
        return False
    if flt.until is not None and item.event_time > flt.until:
        return False
    if flt.as_of is not None and not holds_at(item, flt.as_of):
        return False
    if flt.only_current() and item.valid_to is not None:
        return False
    return not (flt.min_importance is not None and item.importance < flt.min_importance)


def holds_at(item: MemoryItem, when: datetime) -> bool:
    """Whether ``item``'s fact was true at ``when``: valid_from <= when < valid_to
    (issue 15; valid_from defaults to the event time, valid_to None is open)."""
    start = item.valid_from or item.event_time
    return start <= when and (item.valid_to is None or when < item.valid_to)


def dense_similarities(
    stores: Stores,
    namespace: str,
    query_vector: npt.NDArray[np.float32],
    flt: ItemFilter,
    limit: int,
    ids: Sequence[str] | None = None,
) -> dict[str, float]:
    """Memory id -> cosine for the nearest memories matching ``flt`` (as a payload
    filter); ``ids`` restricts the candidates."""
    hits = stores.vectors.nearest(MEMORY_COLLECTION, query_vector.tolist(), namespace=namespace,
                                 using=DENSE, limit=limit, filters=payload_filters(flt), ids=ids)
    return {h.id: h.score for h in hits}


def best_first(hits: list[SearchHit], top_k: int) -> list[SearchHit]:
    """Final score descending; ties go to the newer event."""
    hits.sort(key=lambda h: (-h.score, -h.item.event_time.timestamp()))
    return hits[:top_k]


class EpisodicMemory:
    memory_type = MemoryType.EPISODIC

    def __init__(self, stores: Stores, *, profile: ScoringProfile = EPISODIC,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self.stores = stores
        self.profile = profile
        self._clock = clock

    def _scope(self, flt: ItemFilter) -> ItemFilter:
        return replace(flt, memory_types=(self.memory_type,))

    def retrieve(
        self,
        namespace: str,
        query: str,
        *,
        top_k: int = 5,
        flt: ItemFilter = ItemFilter(),
        query_vector: npt.NDArray[np.float32] | None = None,
    ) -> list[SearchHit]:
        """Episodes most relevant to ``query`` under ``flt``, best final score first."""
        require_namespace(namespace)
        validate_top_k(top_k)
        scoped = self._scope(flt)
        qv = query_vector if query_vector is not None else self.stores.embedder.embed_query(query)
        sims = dense_similarities(self.stores, namespace, qv, scoped, top_k * CANDIDATE_FACTOR)
        return self.rank(namespace, sims, scoped, top_k)

    def rank(self, namespace: str, similarities: dict[str, float], flt: ItemFilter,
             top_k: int) -> list[SearchHit]:
        items = self.stores.records.memories.get_items(namespace, list(similarities))
        now = self._clock()
        # A non-positive cosine is no evidence of relevance: such candidates are dropped
        # rather than ranked on recency and importance alone.
        scored = [score(self.profile, item, now, similarity=clip_similarity(similarities[item.id]))
                  for item in items if matches(item, flt) and similarities[item.id] > 0]
        return best_first(scored, top_k)

    def timeline(self, namespace: str, flt: ItemFilter = ItemFilter(), *, limit: int = 50,
                 offset: int = 0, newest_first: bool = False) -> list[MemoryItem]:
        """Episodes in event-time order, paged."""
        scoped = self._scope(flt)
        if not newest_first:
            return self.stores.records.memories.list_items(namespace, scoped, limit=limit,
                                                           offset=offset)
        total = self.stores.records.memories.count_items(namespace, scoped)
        start = max(0, total - offset - limit)
        size = max(0, total - offset - start)
        page = self.stores.records.memories.list_items(namespace, scoped, limit=size, offset=start)
        return page[::-1]

    def session_episodes(self, namespace: str, session_id: str) -> list[MemoryItem]:
        """Every active episode of one session, oldest first."""
        return self.timeline(namespace, replace(ItemFilter(), session_id=session_id), limit=10_000)


def episode_metadata(metadata: dict[str, Any] | None, **fields: Sequence[str] | str | None
                     ) -> dict[str, Any]:
    """Fold episode attributes (participants, context, outcome, tags) into metadata."""
    out = dict(metadata or {})
    for key, value in fields.items():
        if key not in EPISODE_FIELDS:
            raise InvalidInputError(f"unknown episode field {key!r}")
        if value is not None:
            out[key] = list(value) if isinstance(value, (list, tuple)) else value
    return out
