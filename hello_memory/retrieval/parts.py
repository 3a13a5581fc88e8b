"""What the search is built from, below the facade (issue 31; docs/ARCHITECTURE.md, Layers).

:class:`SearchParts` is what :class:`~hello_memory.retrieval.hybrid.HybridRetriever`
reads besides the stores: working memory (its own view), the episodic and semantic
memories (the ``per-type`` recipe), perceptual memory (the media view), the entity
extractor, the LLM and the clock (the namespace is every call's own). The search
service builds one from the facade's parts; ``HybridRetriever(stores)`` reads bare
stores as parts with none of these.

The progressive loader and the task-aware retriever take a host: anything with a
``search`` and a default namespace (:class:`SearchHost`); the task-aware retriever's
host also lends the engine it shares (``task_aware.RetrieverHost``, beside the engine,
so that this module never names the retriever). ``MemoryManager`` is one by its shape;
nothing here imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from hello_memory.types import MemoryType, Modality

if TYPE_CHECKING:
    from hello_memory.llm.base import LLMClient
    from hello_memory.memory.episodic import EpisodicMemory
    from hello_memory.memory.perceptual import PerceptualMemory
    from hello_memory.memory.scoring import SearchHit
    from hello_memory.memory.semantic import SemanticMemory
    from hello_memory.memory.working import WorkingMemory
    from hello_memory.stores.bundle import Stores
    from hello_memory.text.entities import EntityExtractor

__all__ = ["HasSearchParts", "SearchHost", "SearchParts", "parts_of",
           "perceptual_hits"]


@dataclass(frozen=True)
class SearchParts:
    """The stores and the parts of the memory types the search reads (module doc);
    a part left None switches off what needs it (no working-memory view, no media
    view, no ``per-type`` recipe)."""

    stores: Stores
    working: WorkingMemory | None = None
    episodic: EpisodicMemory | None = None
    semantic: SemanticMemory | None = None
    perceptual: PerceptualMemory | None = None
    extractor: EntityExtractor | None = None
    llm: LLMClient | None = None
    clock: Callable[[], datetime] | None = None


@runtime_checkable
class HasSearchParts(Protocol):
    """Something that lends its search parts (``MemoryManager.search_parts``)."""

    @property
    def search_parts(self) -> SearchParts: ...


def parts_of(source: SearchParts | HasSearchParts | Stores) -> SearchParts:
    """The parts of ``source``: itself, what it lends, or bare stores with no parts."""
    if isinstance(source, SearchParts):
        return source
    if isinstance(source, HasSearchParts):
        return source.search_parts
    return SearchParts(stores=source)


class SearchHost(Protocol):
    """What the progressive loader reads of its host: the one search, the default
    namespace, the stores' record totals and working memory."""

    @property
    def stores(self) -> Stores: ...

    @property
    def working(self) -> WorkingMemory: ...

    @property
    def default_namespace(self) -> str: ...

    def search(self, query: str, memory_types: Sequence[MemoryType | str] | None = None,
               top_k: int = 5, *, namespace: str | None = None) -> list[SearchHit]: ...


def perceptual_hits(perceptual: PerceptualMemory, ns: str, query: str, top_k: int,
                    min_importance: float | None, user_id: str | None) -> list[SearchHit]:
    """A text query against every modality whose encoder is configured (text→text,
    text→image through CLIP's text tower, text→audio through CLAP's)."""
    hits: list[SearchHit] = []
    for target in Modality:
        if target == Modality.TEXT or perceptual.has_encoder(target):
            hits += perceptual.retrieve(ns, query, target_modality=target, top_k=top_k,
                                        min_importance=min_importance, user_id=user_id)
    return hits
