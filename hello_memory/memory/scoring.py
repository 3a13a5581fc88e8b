"""Scoring profiles of the memory types: data, not code paths (ARCHITECTURE decision 3).

Every score is a product of a relevance blend and the importance factor::

    importance_factor(i) = 0.8 + 0.4 * i                          # i in [0, 1] -> [0.8, 1.2]
    recency(age)         = 0.5 ** (age / half_life)               # 1 now, 0.5 after one half-life
    episodic / perceptual: (0.8 * similarity + 0.2 * recency) * importance_factor
    semantic:              (0.7 * similarity + 0.3 * graph)   * importance_factor
                           (similarity alone without graph evidence)
    working:               (0.7 * tfidf + 0.3 * keyword) * recency * importance_factor

``similarity`` is the cosine clipped to [0, 1] (a negative cosine carries no evidence
of relevance); ``graph`` is in [0, 1] (see SemanticMemory); ``keyword`` is the share of
query terms found in the memory. Presets are frozen; derive variants with
``EPISODIC.model_copy(update={"half_life_days": 7})``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from hello_memory.rrf import ViewHit  # the fusion's per-view hit (hello_memory/rrf.py)
from hello_memory.types import MemoryItem, MemoryType

if TYPE_CHECKING:
    from hello_memory.stores.graph.base import GraphStore

__all__ = [
    "EPISODIC",
    "PERCEPTUAL",
    "SEMANTIC",
    "WORKING",
    "ScoreBreakdown",
    "ScoringProfile",
    "SearchHit",
    "ViewHit",
    "clip_similarity",
    "graph_proximity",
    "importance_factor",
    "recency",
]


class ScoringProfile(BaseModel):
    """Weights of one memory type's score. Frozen: copy to change."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    similarity_weight: float = Field(ge=0, le=1)
    recency_weight: float = Field(default=0.0, ge=0, le=1)
    graph_weight: float = Field(default=0.0, ge=0, le=1)
    keyword_weight: float = Field(default=0.0, ge=0, le=1)
    half_life_days: float = Field(default=30.0, gt=0)
    importance_base: float = 0.8
    importance_span: float = 0.4
    # Working memory multiplies by recency instead of blending it in.
    recency_multiplies: bool = False


EPISODIC = ScoringProfile(similarity_weight=0.8, recency_weight=0.2, half_life_days=30.0)
PERCEPTUAL = EPISODIC
SEMANTIC = ScoringProfile(similarity_weight=0.7, graph_weight=0.3)
# Working memory lives for an hour by default: a 30-minute half-life.
WORKING = ScoringProfile(similarity_weight=0.7, keyword_weight=0.3,
                         half_life_days=30 / (24 * 60), recency_multiplies=True)

PROFILES: dict[MemoryType, ScoringProfile] = {
    MemoryType.EPISODIC: EPISODIC, MemoryType.SEMANTIC: SEMANTIC,
    MemoryType.WORKING: WORKING, MemoryType.PERCEPTUAL: PERCEPTUAL,
}


def importance_factor(importance: float, profile: ScoringProfile = EPISODIC) -> float:
    return profile.importance_base + profile.importance_span * importance


def recency(event_time: datetime, now: datetime, half_life_days: float) -> float:
    """0.5 ** (age / half_life); events in the future count as now (1.0)."""
    age_days = max(0.0, (now - event_time).total_seconds() / 86400.0)
    return math.pow(0.5, age_days / half_life_days)


def clip_similarity(cosine: float) -> float:
    return min(1.0, max(0.0, cosine))


@dataclass(frozen=True)
class ScoreBreakdown:
    """Every part of a final score (docs/RETRIEVAL.md, "Reading a score"): the
    profile's inputs (``similarity``, ``recency``, ``importance``, ``graph``,
    ``keyword``), ``profile`` (the type's blend, scaled into [0, 1]), the evidence
    factor and the four question factors. ``score = profile * evidence * time * when
    * subject * attribute``."""

    similarity: float = 0.0
    recency: float = 0.0
    importance: float = 0.0
    graph: float = 0.0
    keyword: float = 0.0
    profile: float = 0.0
    # How plainly the memory itself matches the question, in [0, 1]: the calibrated
    # cosine, or the share of the question's words it contains (retrieval/_hybrid_scoring.py).
    evidence: float = 1.0
    # What a memory keeps when it misses the time a question names, does not say when
    # for a "when" question, is about someone else, or does not state the attribute
    # the question asks for ("what car do I drive?"): 1.0 or the miss factor.
    time: float = 1.0
    when: float = 1.0
    subject: float = 1.0
    attribute: float = 1.0

    def as_dict(self) -> dict[str, float]:
        return {"similarity": self.similarity, "recency": self.recency,
                "importance": self.importance, "graph": self.graph, "keyword": self.keyword,
                "profile": self.profile, "evidence": self.evidence, "time": self.time,
                "when": self.when, "subject": self.subject, "attribute": self.attribute}


@dataclass(frozen=True)
class SearchHit:
    """One search result, the same type for every caller (docs/RETRIEVAL.md).

    Attributes:
        item: the memory record.
        score: the final score (fusion, neighbour context, then the memory type's
            scoring profile); results are sorted by it.
        breakdown: the scoring profile's parts; with the hybrid engine ``similarity``
            is the fused relevance normalised to the query's best hit (1.0).
        fused: the weighted reciprocal-rank fusion score alone (0 for the per-type
            recipe, which does not fuse).
        views: view name -> :class:`ViewHit` for every view that found the memory.
        context: score received from neighbouring memories of the same session.
        queries: the (sub-)queries that found it.
    """

    item: MemoryItem
    score: float
    breakdown: ScoreBreakdown = field(default_factory=ScoreBreakdown)
    fused: float = 0.0
    views: Mapping[str, ViewHit] = field(default_factory=dict)
    context: float = 0.0
    queries: tuple[str, ...] = ()

    @property
    def memory_type(self) -> MemoryType:
        return self.item.memory_type

    @property
    def id(self) -> str:
        return self.item.id


# The most entities one graph walk reaches (GraphStore.neighbors' limit).
GRAPH_WALK_LIMIT = 500


def graph_proximity(graph: GraphStore, namespace: str, seed_ids: Sequence[str], *,
                    max_hops: int, combine: Callable[[float, float], float] = max
                    ) -> dict[str, float]:
    """Memory id -> how near a walk from ``seed_ids`` came to it, the one graph score
    of the project: every entity reached ``hops`` edges away (the seeds at 0, at most
    ``max_hops``) gives each memory linked to it ``1 / (1 + hops)``; a memory reached
    through several entities keeps ``combine`` of those (``max``: its nearest link, as
    the graph view scores one name; ``operator.add``: all of them, as semantic memory's
    own retrieval scores the question). Read-only."""
    out: dict[str, float] = {}
    for hit in graph.neighbors(namespace, seed_ids, max_hops=max_hops, limit=GRAPH_WALK_LIMIT):
        value = 1.0 / (1 + hit.hops)
        for memory_id in hit.memory_ids:
            out[memory_id] = combine(out[memory_id], value) if memory_id in out else value
    return out


def score(
    profile: ScoringProfile,
    item: MemoryItem,
    now: datetime,
    *,
    similarity: float,
    graph: float | None = 0.0,
    keyword: float = 0.0,
) -> SearchHit:
    """Apply ``profile`` to one candidate (similarity already clipped to [0, 1]).

    ``graph=None`` means there is no graph evidence for this memory: the graph weight
    then goes to similarity, so a semantic memory is scored on the same scale as the
    other types instead of losing its 0.3 share for evidence it could not have
    (docs/RETRIEVAL.md, "one scale")."""
    final, part, rec, graph_part = profile_parts(profile, item, now, similarity=similarity,
                                                 graph=graph, keyword=keyword)
    return SearchHit(item, final, ScoreBreakdown(similarity=similarity, recency=rec,
                                                  importance=item.importance, graph=graph_part,
                                                  keyword=keyword, profile=part))


def profile_parts(profile: ScoringProfile, item: MemoryItem, now: datetime, *,
                  similarity: float, graph: float | None = 0.0, keyword: float = 0.0
                  ) -> tuple[float, float, float, float]:
    """:func:`score`'s numbers without the hit it builds: the final score, the profile
    part (the final score scaled into [0, 1] by the largest importance factor), the
    recency and the graph score used (0 for None). The hybrid search bounds every
    candidate by them and builds hits only for those it returns (issue 27)."""
    rec = recency(item.event_time, now, profile.half_life_days)
    sim_weight = profile.similarity_weight + (profile.graph_weight if graph is None else 0.0)
    graph = 0.0 if graph is None else graph
    relevance = (sim_weight * similarity + profile.graph_weight * graph
                 + profile.keyword_weight * keyword)
    if profile.recency_multiplies:
        relevance *= rec
    else:
        relevance += profile.recency_weight * rec
    final = relevance * importance_factor(item.importance, profile)
    # The profile part of the score, scaled by the largest importance factor so that it
    # stays in [0, 1] (the blend's weights sum to at most 1).
    part = min(1.0, final / max_importance_factor(profile))
    return final, part, rec, graph


def max_importance_factor(profile: ScoringProfile) -> float:
    """The importance factor of an importance of 1, the largest a profile gives."""
    return profile.importance_base + max(0.0, profile.importance_span)
