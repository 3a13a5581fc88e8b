"""Reciprocal-rank fusion: the one definition, for memory search and document search.

Each ranked list (a retrieval view, or one query variant in one RAG view) gives its
items in order, best first. An item's fused score is

    fused(x) = sum over the lists l that hold x of  weight(l) / (k + rank_l(x))

(ranks start at 1). The memory search (``retrieval/fusion.py``, ARCHITECTURE decision 2)
weighs its views; RAG (``rag/search.py``) fuses its lists with weight 1. Plain data in,
plain data out: this module imports nothing of the project but its errors, so both
layers use it without an import pointing up (docs/ARCHITECTURE.md, Layers).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from hello_memory.errors import InvalidInputError

__all__ = ["RankedList", "ViewHit", "reciprocal_rank_fusion"]

# One list's ranked output: item id and the list's own score, best first.
RankedList = Sequence[tuple[str, float]]


@dataclass(frozen=True)
class ViewHit:
    """Where one ranked list (a retrieval view) put an item: 1-based rank and the
    list's raw score."""

    rank: int
    score: float


def reciprocal_rank_fusion(
    results: Mapping[str, RankedList],
    weights: Mapping[str, float] | None = None,
    *,
    k: float = 60.0,
    shared_ranks: Collection[str] = (),
) -> dict[str, tuple[float, dict[str, ViewHit]]]:
    """Item id -> (fused score, the hit of every list that holds it). A list missing
    from ``weights`` counts with weight 1; a weight of 0 keeps the list's evidence but
    not its vote. Duplicate ids inside one list keep their first (best) position. In
    the lists named by ``shared_ranks`` equal scores share a rank ("1, 2, 2, 4"): two
    memories with the same evidence (a consolidated copy and its original) get the same
    vote, so the order between them is left to their scoring profiles, not to the
    backend's order of ties."""
    if k <= 0:
        raise InvalidInputError(f"rrf k must be positive, got {k!r}")
    weights = weights or {}
    out: dict[str, tuple[float, dict[str, ViewHit]]] = {}
    for name, ranked in results.items():
        weight = float(weights.get(name, 1.0))
        if weight < 0:
            raise InvalidInputError(f"view weight of {name!r} must be >= 0, got {weight!r}")
        share = name in shared_ranks
        seen: set[str] = set()
        rank = 0
        previous: float | None = None
        for item_id, score in ranked:
            if item_id in seen:
                continue
            seen.add(item_id)
            if not (share and previous is not None and math.isclose(
                    score, previous, rel_tol=1e-6, abs_tol=1e-9)):
                rank = len(seen)
            previous = float(score)
            fused, hits = out.get(item_id, (0.0, {}))
            hits[name] = ViewHit(rank, float(score))
            out[item_id] = (fused + weight / (k + rank), hits)
    return out
