"""The retrieval views: semantic, lexical, symbolic and graph (ARCHITECTURE decision 2).

Each view turns a :class:`ViewRequest` into a ranked list of ``(memory_id, score)``:

* **semantic** - dense cosine search for every (sub-)query; a memory keeps its best
  cosine over the queries.
* **lexical** - BM25 (the sparse vector in Qdrant, en + zh tokenisation) for every
  (sub-)query; a memory keeps its best BM25 score.
* **symbolic** - the question's constraints. Time ranges and a session are hard filters
  run as a filtered dense search; persons, entities and locations are matched against
  the records of the candidate pool (speaker / persons / participants metadata, the
  user id, words of the content), because the vector payload does not carry them.
  Matches are ranked by how many constraints they meet, then by their cosine.
* **graph** - the entity neighbourhood of the question's entities in the graph store,
  scored 1 / (1 + hops) per mention.

A view with no constraint to work on (no time range, person, entity or location for
the symbolic view; no known entity for the graph view) returns nothing rather than
noise. Filters given by the caller (memory types, user, session, time range, minimum
importance) apply to every view.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.retrieval.fusion import ViewResult
from hello_memory.retrieval.lexical import BM25_VECTOR
from hello_memory.retrieval.planning import QueryAnalysis
from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION, Stores
from hello_memory.stores.vector.base import Range
from hello_memory.types import MemoryItem

__all__ = [
    "VIEW_NAMES", "ViewRequest", "graph_view", "lexical_view", "person_matches",
    "semantic_view", "symbolic_constraint_view", "symbolic_pool_view",
]

VIEW_NAMES = ("semantic", "lexical", "symbolic", "graph")
_MICRO = timedelta(microseconds=1)
_PERSON_KEYS = ("speaker", "persons", "participants", "person", "author")


@dataclass(frozen=True)
class ViewRequest:
    """What every view gets: the namespace, the queries (original first), their dense
    vectors (None when no embedder is used), the analysis of the original question,
    the caller's payload filters and how many candidates each view returns."""

    namespace: str
    queries: Sequence[str]
    vectors: Sequence[npt.NDArray[np.float32]] | None
    analysis: QueryAnalysis
    filters: Mapping[str, Any] = field(default_factory=dict)
    limit: int = 50


def _best(lists: Sequence[Sequence[tuple[str, float]]]) -> list[tuple[str, float]]:
    best: dict[str, float] = {}
    for hits in lists:
        for memory_id, score in hits:
            if memory_id not in best or score > best[memory_id]:
                best[memory_id] = score
    return sorted(best.items(), key=lambda kv: -kv[1])


def _dense(stores: Stores, req: ViewRequest, vector: npt.NDArray[np.float32],
           filters: Mapping[str, Any], limit: int,
           ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
    hits = stores.vectors.search(MEMORY_COLLECTION, vector.tolist(), namespace=req.namespace,
                                 using=DENSE, limit=limit, filters=dict(filters), ids=ids)
    # A non-positive cosine is no evidence of relevance (as in the memory types).
    return [(h.id, h.score) for h in hits if h.score > 0]


def semantic_view(stores: Stores, req: ViewRequest) -> ViewResult:
    if not req.vectors:
        return []
    return _best([_dense(stores, req, v, req.filters, req.limit) for v in req.vectors])[
        : req.limit]


def lexical_view(stores: Stores, req: ViewRequest) -> ViewResult:
    lists = []
    for query in req.queries:
        sparse = stores.lexical.query(query)
        if sparse is None:
            continue
        hits = stores.vectors.search(MEMORY_COLLECTION, sparse, namespace=req.namespace,
                                     using=BM25_VECTOR, limit=req.limit,
                                     filters=dict(req.filters))
        lists.append([(h.id, h.score) for h in hits])
    return _best(lists)[: req.limit]


def _intersect(outer: Any, lo: Any, hi: Any) -> Range | None:
    """The caller's event-time range intersected with [lo, hi]; None if empty."""
    if isinstance(outer, Range):
        lo = max(lo, outer.gte) if outer.gte is not None else lo
        hi = min(hi, outer.lte) if outer.lte is not None else hi
    return Range(gte=lo, lte=hi) if lo <= hi else None


def symbolic_constraint_view(stores: Stores, req: ViewRequest) -> ViewResult:
    """Hard constraints (time ranges): memories inside a question's time range, by
    cosine (or BM25 without vectors). Nothing when the question names no time."""
    if not req.analysis.time_ranges:
        return []
    lists = []
    for start, end in req.analysis.time_ranges:
        # Ranges are half-open; the store's Range is inclusive: stop a microsecond early.
        rng = _intersect(req.filters.get("event_time"), start, end - _MICRO)
        if rng is None:
            continue
        filters = {**req.filters, "event_time": rng}
        if req.vectors:
            lists.append(_dense(stores, req, req.vectors[0], filters, req.limit))
        else:
            sparse = stores.lexical.query(req.queries[0])
            if sparse is not None:
                hits = stores.vectors.search(MEMORY_COLLECTION, sparse, namespace=req.namespace,
                                             using=BM25_VECTOR, limit=req.limit, filters=filters)
                lists.append([(h.id, h.score) for h in hits])
    return _best(lists)[: req.limit]


def person_matches(item: MemoryItem, persons: Sequence[str]) -> bool:
    """Whether ``item`` is about one of ``persons``: its speaker / persons /
    participants metadata or user id names them (the content alone does not count:
    a person merely mentioned is the lexical view's business)."""
    wanted = {p.lower() for p in persons}
    if item.user_id and item.user_id.lower() in wanted:
        return True
    for key in _PERSON_KEYS:
        value = item.metadata.get(key)
        values = value if isinstance(value, (list, tuple)) else [value]
        # A memory listing everyone (e.g. all participants of a chat) singles out no one.
        if key != "speaker" and len(values) > 1:
            continue
        if any(isinstance(v, str) and v.lower() in wanted for v in values):
            return True
    return False


def _mentions(item: MemoryItem, names: Sequence[str]) -> int:
    low = item.content.lower()
    return sum(1 for n in names if re.search(rf"(?<!\w){re.escape(n.lower())}(?!\w)", low))


def symbolic_pool_view(items: Sequence[MemoryItem], order: Mapping[str, float],
                       analysis: QueryAnalysis) -> ViewResult:
    """Soft constraints (persons, entities, locations) checked on the records of the
    candidate pool. ``order`` is the pool's relevance so far (higher first), used to
    rank memories that meet the same number of constraints."""
    names = [*analysis.entities, *analysis.locations]
    if not (analysis.persons or names):
        return []
    scored = []
    for item in items:
        met = (1 if analysis.persons and person_matches(item, analysis.persons) else 0)
        met += _mentions(item, names)
        if met:
            scored.append((item.id, float(met), order.get(item.id, 0.0)))
    scored.sort(key=lambda t: (-t[1], -t[2]))
    return [(memory_id, met) for memory_id, met, _ in scored]


def graph_view(stores: Stores, req: ViewRequest, *, max_hops: int = 2) -> ViewResult:
    """Memories mentioning the question's entities or their neighbours."""
    names = list(dict.fromkeys([*req.analysis.persons, *req.analysis.entities,
                                *req.analysis.locations]))
    if not names:
        return []
    seeds = stores.graph.find_entities(req.namespace, names)
    if not seeds:
        return []
    reached = stores.graph.neighbors(req.namespace, [e.id for e in seeds], max_hops=max_hops,
                                     limit=500)
    totals: dict[str, float] = {}
    for hit in reached:
        for memory_id in hit.memory_ids:
            totals[memory_id] = totals.get(memory_id, 0.0) + 1.0 / (1 + hit.hops)
    return sorted(totals.items(), key=lambda kv: -kv[1])[: req.limit]

