"""Semantic memory: facts, preferences, rules — vectors plus an entity graph.

Writing a semantic memory embeds it and extracts its entities and relations into the
graph store, each linked to the memory (many-to-many: a new mention never replaces an
old one). Retrieval blends two views:

- vector: dense similarity of the query to the memory (cosine clipped to [0, 1]);
- graph: the query's entities (extracted the same way, never written) are looked up,
  their neighbourhood within ``max_hops`` is walked, and each memory reached scores
  ``graph = min(1, Σ_e 1 / (1 + hops_e) / n_query_entities)`` over the entities ``e`` it
  mentions — a direct mention of every query entity gives 1, a two-hop link 1/3
  (:func:`hello_memory.memory.scoring.graph_proximity`, summed; the graph view of the
  hybrid search keeps each name's nearest link instead);

final = (0.7·vector + 0.3·graph) × (0.8 + 0.4·importance)
(:data:`hello_memory.memory.scoring.SEMANTIC`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from hello_memory.memory.episodic import (
    CANDIDATE_FACTOR,
    best_first,
    dense_similarities,
    matches,
)
from hello_memory.memory.scoring import (
    SEMANTIC,
    ScoringProfile,
    SearchHit,
    clip_similarity,
    graph_proximity,
    score,
)
from hello_memory.stores.bundle import Stores
from hello_memory.stores.records import ItemFilter
from hello_memory.text.entities import EntityExtractor
from hello_memory.types import MemoryType, utcnow
from hello_memory.validation import require_namespace, validate_top_k

__all__ = ["SemanticMemory"]


class SemanticMemory:
    memory_type = MemoryType.SEMANTIC

    def __init__(self, stores: Stores, extractor: EntityExtractor, *,
                 profile: ScoringProfile = SEMANTIC, max_hops: int = 2,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self.stores = stores
        self.extractor = extractor
        self.profile = profile
        self.max_hops = max_hops
        self._clock = clock

    def graph_scores(self, namespace: str, query: str) -> dict[str, float]:
        """Memory id -> graph score for ``query`` (read-only: nothing is written)."""
        extraction = self.extractor.extract(query, namespace)
        names = list(dict.fromkeys(e.name for e in extraction.entities))
        if not names:
            return {}
        seeds = self.stores.graph.find_entities(namespace, names)
        if not seeds:
            return {}
        totals = graph_proximity(self.stores.graph, namespace, [e.id for e in seeds],
                                 max_hops=self.max_hops, combine=operator.add)
        return {m: min(1.0, s / len(names)) for m, s in totals.items()}

    def retrieve(
        self,
        namespace: str,
        query: str,
        *,
        top_k: int = 5,
        flt: ItemFilter = ItemFilter(),
        query_vector: npt.NDArray[np.float32] | None = None,
    ) -> list[SearchHit]:
        require_namespace(namespace)
        validate_top_k(top_k)
        scoped = replace(flt, memory_types=(self.memory_type,))
        qv = query_vector if query_vector is not None else self.stores.embedder.embed_query(query)
        vec = dense_similarities(self.stores, namespace, qv, scoped, top_k * CANDIDATE_FACTOR)
        graph = self.graph_scores(namespace, query)
        # A common entity can be mentioned by thousands of memories: only the best
        # graph candidates (as many as the vector side fetched) are looked up.
        missing = sorted((m for m in graph if m not in vec), key=lambda m: -graph[m])
        missing = missing[: top_k * CANDIDATE_FACTOR]
        if missing:  # graph-only candidates still need their true similarity
            vec.update(dense_similarities(self.stores, namespace, qv, scoped, len(missing),
                                          ids=missing))
        items = self.stores.records.memories.get_items(namespace, list(vec))
        now = self._clock()
        # No graph evidence for the query at all: similarity alone (one scale with the
        # other types, see scoring.score).
        hits = [score(self.profile, item, now, similarity=clip_similarity(vec[item.id]),
                      graph=graph.get(item.id, 0.0) if graph else None)
                for item in items if matches(item, scoped)
                and (vec[item.id] > 0 or graph.get(item.id, 0.0) > 0)]
        return best_first(hits, top_k)
