"""Working and perceptual memory as search views (issue 31, item 3; docs/RETRIEVAL.md,
"Adding a view").

Working memory (the session's short-lived items, TF-IDF + keywords) and perceptual
memory (images, audio and their captions through CLIP / CLAP text towers) keep their
records and indexes outside the text collection the four built-in views search. They
vote through the same :class:`~hello_memory.retrieval.registry.View` protocol as every
other view, registered in ``retrieval/registry.py``, with the protocol's two optional
attributes:

* ``memory_types`` - the types a view serves: a search restricted to other types does
  not run it;
* ``runs_with`` - a view with it is not chosen by name (recipes, ``views=``): it runs
  after the chosen views, whenever one of the views it names is chosen, on memories it
  brings along (:class:`RankedItems`, since the records store does not hold them).

Each needs a part of :class:`~hello_memory.retrieval.parts.SearchParts` (``req.parts``);
where the parts lack it (bare stores), the view finds nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from hello_memory.memory.episodic import matches
from hello_memory.retrieval.parts import perceptual_hits
from hello_memory.types import MemoryItem, MemoryType

if TYPE_CHECKING:
    from hello_memory.memory.perceptual import PerceptualMemory
    from hello_memory.memory.scoring import SearchHit
    from hello_memory.retrieval.views import ViewRequest
    from hello_memory.stores.bundle import Stores
    from hello_memory.stores.records import ItemFilter

__all__ = ["PerceptualView", "RankedItems", "WorkingView", "media_hits"]


class RankedItems(list[tuple[str, float]]):
    """A view's ranking (memory id, score; best first) with the records it found, for
    views whose memories are not in the records store (working, perceptual memory)."""

    def __init__(self, hits: list[SearchHit]) -> None:
        super().__init__((h.id, h.score) for h in hits)
        self.records: dict[str, MemoryItem] = {h.id: h.item for h in hits}


def media_hits(perceptual: PerceptualMemory, ns: str, query: str, limit: int,
               flt: ItemFilter) -> list[SearchHit]:
    """Perceptual memory's hits for a text query under the caller's filter: session,
    agent, time and status hold for media too (checked on the records); the memory
    types do not (the caller asked for perceptual memory by asking for its view)."""
    hits = perceptual_hits(perceptual, ns, query, limit, flt.min_importance, flt.user_id)
    media_flt = replace(flt, memory_types=None)
    return [h for h in hits if matches(h.item, media_flt)]


class WorkingView:
    """Working memory's own search (TF-IDF + keywords, memory/working.py) over the
    original question, under the caller's importance, time, user and session filter."""

    name = "working"
    weight = 1.0
    needs_vectors = False
    shared_ranks = True
    memory_types = (MemoryType.WORKING,)
    runs_with = ("semantic", "lexical")  # a similarity view

    def rank(self, stores: Stores, req: ViewRequest) -> RankedItems:
        working = req.parts.working if req.parts is not None else None
        if working is None:
            return RankedItems([])
        flt = req.flt
        return RankedItems(working.retrieve(req.namespace, req.question, top_k=req.limit,
                                            min_importance=flt.min_importance,
                                            time_range=(flt.since, flt.until),
                                            user_id=flt.user_id, session_id=flt.session_id))


class PerceptualView:
    """Images, audio and their texts found from the question through the CLIP / CLAP
    text towers: one more dense view, beside the semantic one."""

    name = "perceptual"
    weight = 1.0
    needs_vectors = False  # its encoders embed the question themselves
    shared_ranks = True
    memory_types = (MemoryType.PERCEPTUAL,)
    runs_with = ("semantic",)

    def rank(self, stores: Stores, req: ViewRequest) -> RankedItems:
        perceptual = req.parts.perceptual if req.parts is not None else None
        if perceptual is None:
            return RankedItems([])
        return RankedItems(media_hits(perceptual, req.namespace, req.question, req.limit,
                                      req.flt))
