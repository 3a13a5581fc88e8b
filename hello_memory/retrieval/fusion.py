"""Weighted reciprocal-rank fusion over retrieval views, keeping every view's evidence.

Each view returns a ranked list of ``(memory_id, score)``. A memory's fused score is

    fused(m) = sum over views v that found m of  weight(v) / (k + rank_v(m))

(ranks start at 1). Unlike the seed retriever's plain union, a memory found by two
views outranks one found by a single view at the same rank, and a view's weight says
how much its ranking is trusted. Every hit keeps the rank and raw score it had in each
view, so :func:`explain` can show why it ranked where it did.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from hello_memory.memory.scoring import SearchHit
from hello_memory.rrf import RankedList, ViewHit, reciprocal_rank_fusion
from hello_memory.types import MemoryItem

__all__ = ["ViewHit", "ViewResult", "explain", "tie_order", "weighted_rrf"]

# One view's ranked output: memory id and the view's own score, best first.
ViewResult = RankedList


def tie_order(item: MemoryItem) -> tuple[datetime, str, str]:
    """The order of equal scores that the memory itself fixes, the same in every store
    and process: the older event, then the text, then the id (a view's ties,
    _hybrid_views.settle_ties, and the final list's, _hybrid_scoring._best_first;
    docs/RETRIEVAL.md, "Ties")."""
    return item.event_time, item.content, item.id


def weighted_rrf(
    results: Mapping[str, ViewResult],
    weights: Mapping[str, float],
    *,
    k: float = 60.0,
    shared_ranks: Collection[str] = (),
) -> dict[str, tuple[float, dict[str, ViewHit]]]:
    """Memory id -> (fused score, per-view hits): the project's one reciprocal-rank
    fusion (:func:`hello_memory.rrf.reciprocal_rank_fusion`, which RAG uses too) over
    the views. A view missing from ``weights`` counts with weight 1; a weight of 0 keeps
    the view's evidence but not its vote; in the views named by ``shared_ranks`` equal
    scores share a rank."""
    return reciprocal_rank_fusion(results, weights, k=k, shared_ranks=shared_ranks)


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
    lines.append(f"  profile   {b.profile:.3f} = similarity {b.similarity:.3f} recency "
                 f"{b.recency:.3f} importance {b.importance:.2f} graph {b.graph:.3f}")
    factors = [f"evidence {b.evidence:.3f}"] + [
        f"{name} {value:.2f}" for name, value in (("time", b.time), ("when", b.when),
                                                  ("subject", b.subject),
                                                  ("attribute", b.attribute))
        if value != 1.0]
    lines.append("  x         " + " x ".join(factors) + f" = score {hit.score:.4f}")
    if hit.queries:
        lines.append("  queries   " + " | ".join(hit.queries))
    return "\n".join(lines)
