"""The state of one search: the plan (:class:`RetrievalPlan`, the planning stage's
output) and what the rounds share (:class:`_Round`). Kept apart from
:mod:`hello_memory.retrieval.hybrid`, which re-exports ``RetrievalPlan``, so that the
parts the retriever inherits (``_hybrid_*.py``) name them without importing the
retriever (docs/ARCHITECTURE.md, "Known debts": no import cycle).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from hello_memory.retrieval.planning import InformationPlan, QueryAnalysis
from hello_memory.stores.records import ItemFilter
from hello_memory.types import MemoryItem

__all__ = ["RetrievalPlan"]


@dataclass(frozen=True)
class RetrievalPlan:
    """The planning stage's output: the analysis of the question, the information
    requirements and the queries the views run (the original first)."""

    analysis: QueryAnalysis
    information: InformationPlan | None
    queries: tuple[str, ...]


@dataclass
class _Round:
    """Mutable state of one search across reflection rounds."""

    flt: ItemFilter = field(default_factory=ItemFilter)
    # Memories inside a time range the question names (None: it names none).
    in_time: set[str] | None = None
    asked_until: datetime | None = None  # end of the latest time range asked about
    analysis: QueryAnalysis | None = None  # of the original question, as planned
    # the same analysis whatever views run: the evidence reads the question's words
    question: QueryAnalysis | None = None
    results: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    found_by: dict[str, list[str]] = field(default_factory=dict)
    items: dict[str, MemoryItem] = field(default_factory=dict)
    # the embedder cannot read the question's language (HybridRetriever._dense_blind)
    dense_blind: bool = False
    # the symbolic view's own hits: memories inside a time range the question names
    time_hits: list[tuple[str, float]] = field(default_factory=list)
    # memories no view of the question's language could read (HybridRetriever._unread)
    unread: list[str] = field(default_factory=list)
    # ids of the items read from the record cache: shared, copied before they leave
    shared: set[str] = field(default_factory=set)
    # a small namespace's listing, ids and texts, and the memories the search had read
    # when it was listed (_multilingual_view): ``listed`` derives from both
    listing: tuple[Sequence[str], Sequence[str]] = ((), ())
    read_before: frozenset[str] = frozenset()
    # the namespace's write generation before any record was read (HybridRetriever
    # ._generation): what is derived from ``items`` is kept only at that generation
    generation: Any = None

    @cached_property
    def listed(self) -> list[tuple[str, str]]:
        """A small namespace's memories no view had read, with their texts, worked
        out when first asked (HybridRetriever._unread asks only for a question about
        a single-valued attribute): a search of a namespace of 2,000 memories no longer
        walks its listing for nothing (issue 27)."""
        ids, texts = self.listing
        return [(m, t) for m, t in zip(ids, texts, strict=True) if m not in self.read_before]
