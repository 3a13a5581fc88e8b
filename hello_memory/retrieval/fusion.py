"""Weighted reciprocal-rank fusion over retrieval views, keeping every view's evidence.

Each view returns a ranked list of ``(memory_id, score)``. A memory's fused score is

    fused(m) = sum over views v that found m of  weight(v) / (k + rank_v(m))

(ranks start at 1). Unlike the seed retriever's plain union, a memory found by two
views outranks one found by a single view at the same rank, and a view's weight says
how much its ranking is trusted. Every hit keeps the rank and raw score it had in each
view, so :func:`explain` can show why it ranked where it did.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

from hello_memory.errors import InvalidInputError
from hello_memory.memory.scoring import SearchHit, ViewHit

__all__ = ["ViewHit", "ViewResult", "explain", "weighted_rrf"]

# One view's ranked output: memory id and the view's own score, best first.
ViewResult = Sequence[tuple[str, float]]


def weighted_rrf(
    results: Mapping[str, ViewResult],
    weights: Mapping[str, float],
    *,
    k: float = 60.0,
    shared_ranks: Collection[str] = (),
) -> dict[str, tuple[float, dict[str, ViewHit]]]:
    """Memory id -> (fused score, per-view hits). A view missing from ``weights``
    counts with weight 1; a weight of 0 keeps the view's evidence but not its vote.
    Duplicate ids inside one view keep their first (best) position. In the views named
    by ``shared_ranks`` equal scores share a rank ("1, 2, 2, 4"): two memories with the
    same evidence (a consolidated copy and its original) get the same vote, so the
    order between them is left to their scoring profiles, not to the backend's order
    of ties."""
    if k <= 0:
        raise InvalidInputError(f"rrf k must be positive, got {k!r}")
    out: dict[str, tuple[float, dict[str, ViewHit]]] = {}
    for view, ranked in results.items():
        weight = float(weights.get(view, 1.0))
        if weight < 0:
            raise InvalidInputError(f"view weight of {view!r} must be >= 0, got {weight!r}")
        share = view in shared_ranks
        seen: set[str] = set()
        rank = 0
        previous: float | None = None
        for memory_id, score in ranked:
            if memory_id in seen:
                continue
            seen.add(memory_id)
            if not (share and previous is not None and math.isclose(
                    score, previous, rel_tol=1e-6, abs_tol=1e-9)):
                rank = len(seen)
            previous = float(score)
            fused, hits = out.get(memory_id, (0.0, {}))
            hits[view] = ViewHit(rank, float(score))
            out[memory_id] = (fused + weight / (k + rank), hits)
    return out


def explain(hit: SearchHit) -> str:
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
