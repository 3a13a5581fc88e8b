"""Weighted reciprocal-rank fusion over retrieval views, keeping every view's evidence.

Each view returns a ranked list of ``(memory_id, score)``. A memory's fused score is

    fused(m) = sum over views v that found m of  weight(v) / (k + rank_v(m))

(ranks start at 1). Unlike the seed retriever's plain union, a memory found by two
views outranks one found by a single view at the same rank, and a view's weight says
how much its ranking is trusted. Every hit keeps the rank and raw score it had in each
view, so :func:`explain` can show why it ranked where it did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hello_memory.errors import InvalidInputError
from hello_memory.memory.scoring import ScoreBreakdown
from hello_memory.types import MemoryItem, MemoryType

__all__ = ["FusedHit", "ViewHit", "ViewResult", "explain", "weighted_rrf"]

# One view's ranked output: memory id and the view's own score, best first.
ViewResult = Sequence[tuple[str, float]]


@dataclass(frozen=True)
class ViewHit:
    """Where one view put a memory: 1-based rank and the view's raw score."""

    rank: int
    score: float


@dataclass(frozen=True)
class FusedHit:
    """One retrieval result.

    Attributes:
        item: the memory record.
        score: the final score (fusion, neighbour context, then the memory type's
            scoring profile); results are sorted by it.
        fused: the weighted reciprocal-rank fusion score alone.
        views: view name -> :class:`ViewHit` for every view that found the memory.
        context: score received from neighbouring memories of the same session.
        breakdown: the scoring profile's parts (similarity here is the normalised
            fusion score; see :mod:`hello_memory.memory.scoring`).
        queries: the (sub-)queries that found it.
    """

    item: MemoryItem
    score: float
    fused: float
    views: Mapping[str, ViewHit] = field(default_factory=dict)
    context: float = 0.0
    breakdown: ScoreBreakdown = field(default_factory=ScoreBreakdown)
    queries: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.item.id

    @property
    def memory_type(self) -> MemoryType:
        return self.item.memory_type


def weighted_rrf(
    results: Mapping[str, ViewResult],
    weights: Mapping[str, float],
    *,
    k: float = 60.0,
) -> dict[str, tuple[float, dict[str, ViewHit]]]:
    """Memory id -> (fused score, per-view hits). A view missing from ``weights``
    counts with weight 1; a weight of 0 keeps the view's evidence but not its vote.
    Duplicate ids inside one view keep their first (best) position."""
    if k <= 0:
        raise InvalidInputError(f"rrf k must be positive, got {k!r}")
    out: dict[str, tuple[float, dict[str, ViewHit]]] = {}
    for view, ranked in results.items():
        weight = float(weights.get(view, 1.0))
        if weight < 0:
            raise InvalidInputError(f"view weight of {view!r} must be >= 0, got {weight!r}")
        rank = 0
        seen: set[str] = set()
        for memory_id, score in ranked:
            if memory_id in seen:
                continue
            seen.add(memory_id)
            rank += 1
            fused, hits = out.get(memory_id, (0.0, {}))
            hits[view] = ViewHit(rank, float(score))
            out[memory_id] = (fused + weight / (k + rank), hits)
    return out


def explain(hit: FusedHit) -> str:
    """A few lines saying why ``hit`` ranked where it did."""
    text = hit.item.content.replace("\n", " ")
    if len(text) > 80:
        text = text[:77] + "..."
    lines = [f"{hit.item.id} [{hit.item.memory_type.value}] score={hit.score:.4f} "
             f"fused={hit.fused:.4f}: {text}"]
    for view, vh in sorted(hit.views.items(), key=lambda kv: kv[1].rank):
        lines.append(f"  {view:<9} rank {vh.rank:>3}  score {vh.score:.4f}")
    if not hit.views:
        lines.append("  (found by no view directly)")
    if hit.context:
        lines.append(f"  context   +{hit.context:.4f} from neighbouring memories")
    b = hit.breakdown
    lines.append(f"  profile   similarity {b.similarity:.3f} recency {b.recency:.3f} "
                 f"importance {b.importance:.2f} graph {b.graph:.3f}")
    if hit.queries:
        lines.append("  queries   " + " | ".join(hit.queries))
    return "\n".join(lines)
