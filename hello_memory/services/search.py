"""The search service: ``MemoryManager.search`` and ``perceptual_search`` (issue 31).

The one search (ARCHITECTURE decision 8) is the hybrid retriever of
``retrieval/hybrid.py``; this service owns it, built from the facade's
:class:`~hello_memory.retrieval.parts.SearchParts` and the ``retrieval`` settings,
and turns a facade call into one ``retrieve``: the ``filters`` mapping merged over the
keyword filters (checked against ``validation.SEARCH_FILTERS``), and the hits
(``SearchHit``, memory/scoring.py) returned as the engine ranks them
(docs/RETRIEVAL.md). The query, the memory types and ``min_importance`` are checked
once, by the engine (``HybridRetriever.retrieve``), which builds the one filter the
views get (``ViewRequest.flt``). It never imports the facade.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hello_memory.retrieval.hybrid import HybridRetriever
from hello_memory.retrieval.parts import perceptual_hits
from hello_memory.services.convert import perceptual_off_error
from hello_memory.validation import SEARCH_FILTERS, check_search_filters

if TYPE_CHECKING:
    from hello_memory.config import RetrievalSettings
    from hello_memory.memory.scoring import SearchHit
    from hello_memory.retrieval.parts import SearchParts
    from hello_memory.types import MemoryType

__all__ = ["SearchService", "merged_filters"]


def merged_filters(filters: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword filters ``given`` to a search, with those of its ``filters`` mapping
    over them; InvalidInputError for a key that is no search filter."""
    check_search_filters(filters)
    return {**given, **filters}


class SearchService:
    """The facade's search (module doc). Building it starts nothing: the retriever's
    thread pool starts with the first search that needs it."""

    def __init__(self, parts: SearchParts, *,
                 settings: RetrievalSettings | None = None) -> None:
        self.parts = parts
        # The one search engine (docs/RETRIEVAL.md), built from the ``retrieval``
        # settings and the parts' LLM; every interface searches through it.
        self.retriever = HybridRetriever(parts, settings=settings, clock=parts.clock)

    def search(self, query: str, memory_types: Sequence[MemoryType | str] | None,
               top_k: int, *, namespace: str, filters: Mapping[str, Any] | None = None,
               **options: Any) -> list[SearchHit]:
        """``MemoryManager.search`` in a resolved ``namespace``: the hybrid engine over
        the requested memory types (all by default), best first. ``options`` are the
        facade's keyword arguments, passed to ``HybridRetriever.retrieve``:

        ``min_importance``, ``time_range``, ``user_id``, ``agent_id``, ``session_id``
        and ``as_of`` filter; ``filters`` is the same in one mapping, over them
        (``validation.SEARCH_FILTERS``). ``min_score`` (in [0, 1]) drops the hits
        scored under it (docs/RETRIEVAL.md, "Reading a score": ``retrieval.min_score``
        is the measured floor). ``reference_time`` resolves "last week" (default now);
        ``recipe`` picks a :mod:`~hello_memory.retrieval.recipes` preset (``hybrid`` by
        default, ``per-type`` and view ablations for comparisons); ``views``,
        ``view_weights``, ``neighbor_weight`` and the LLM switches
        (``enable_planning``, ``enable_reflection``) override the ``retrieval``
        settings for this call; ``touch`` records the access. ``as_of`` (an aware
        datetime) searches what was true then: memories superseded since are found,
        those not yet true are not (valid_from <= as_of < valid_to,
        memory/supersede.py); without it only the memories still true are searched."""
        if filters:
            options.update(merged_filters(filters, {k: options.get(k) for k in SEARCH_FILTERS}))
        # the engine checks the query, the types and min_importance (once, there)
        return self.retriever.retrieve(query, top_k, namespace=namespace,
                                       memory_types=memory_types, **options)

    def perceptual_search(self, ns: str, query: str, top_k: int,
                          min_importance: float | None, user_id: str | None
                          ) -> list[SearchHit]:
        """Text query against every modality whose encoder is configured (text→text,
        text→image through CLIP's text tower, text→audio through CLAP's);
        PerceptualNotConfiguredError without perceptual memory."""
        if self.parts.perceptual is None:
            raise perceptual_off_error()
        return perceptual_hits(self.parts.perceptual, ns, query, top_k, min_importance,
                               user_id)

    def close(self) -> None:
        self.retriever.close()

