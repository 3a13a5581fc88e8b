"""``MemoryManager``: the one front door over working, episodic, semantic and perceptual
memory; a thin facade over ``services/`` that scopes each call to one namespace and
delegates (docs/ARCHITECTURE.md, Layers); ``search`` is the one search (docs/RETRIEVAL.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hello_memory import telemetry
from hello_memory.memory.reports import ClearReport, ConsolidateReport, ForgetReport, MemoryStats
from hello_memory.memory.scoring import SearchHit
from hello_memory.retrieval.hybrid import TimeRange
from hello_memory.services import build
from hello_memory.services.browse import BrowseService

# the JSON forms moved to services/convert.py (issue 31); named here as before
from hello_memory.services.convert import (
    added_to_json,
    hit_to_json,
    item_from_json,
    item_to_json,
    perceptual_off_error,
)
from hello_memory.services.ingest import STORED_TYPES, date_in_text
from hello_memory.services.lookup import HANDLE_CHARS, ID_CHARS
from hello_memory.text.links import GraphLinks
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from typing_extensions import Unpack

    from hello_memory.config import JobsSettings, LimitsSettings, Settings
    from hello_memory.embedding.base import Embedder
    from hello_memory.memory.maintenance import OptimizeReport, ReconcileReport, ReindexReport
    from hello_memory.memory.perceptual import PerceptualMemory
    from hello_memory.retrieval.recipes import SearchRecipe
    from hello_memory.services import EditService, MaintenanceService
    from hello_memory.services.build import FacadeOptions
    from hello_memory.stores.bundle import Stores
    from hello_memory.text.timeparse import TimeRange as TimeSpan
    from hello_memory.types import MemoryItem, MemoryType

__all__ = ["HANDLE_CHARS", "ID_CHARS", "STORED_TYPES", "MemoryManager", "added_to_json",
           "date_in_text", "hit_to_json", "item_from_json", "item_to_json", "perceptual_off_error"]


# services/build.py: the first of these resumes a manager built on stores (:meth:`resume`)
@build.resumes_first("add_embedded", "remember_conversation", "update", "remove", "clear",
                     "import_jsonl", "forget", "forget_ids", "restore", "consolidate",
                     "reconcile", "reindex", "perceptual", "edit", "maintenance")
class MemoryManager:
    """Facade over the memory types. Takes built stores; see :meth:`open`."""

    def __init__(self, stores: Stores, **options: Unpack[FacadeOptions]) -> None:
        """``options``: services/build.py ``FacadeOptions``, built there into the services
        this facade delegates to. Sets attributes only: no I/O, no replay (:meth:`resume`)."""
        self.stores, self.resumed = stores, False
        p = build.build_facade(stores, options)
        self.working, self.extractor, self.llm = p.working, p.extractor, p.llm
        self.extract_links, self._times_from_text = p.links, p.times_from_text  # text/links.py
        self.episodic, self.semantic, self._perceptual = p.episodic, p.semantic, p.perceptual
        self.default_namespace, self.default_type = p.default_namespace, p.default_type
        self.uploads_dir, self.extract_facts = p.uploads_dir, p.extract_facts
        self.dedup_threshold, self.on_duplicate = p.dedup_threshold, p.on_duplicate
        self.event_time_from_text, self._clock = p.event_time_from_text, p.clock
        self._browse, self._lookup, self._edit = p.browse, p.lookup, p.edit
        self.lifecycle_service, self.superseder = p.lifecycle, p.superseder
        self._ingest, self._maintenance, self._search = p.ingest, p.maintenance, p.search
        # the one search engine (docs/RETRIEVAL.md) and what it reads (retrieval/parts.py)
        self.retriever, self.search_parts = p.search.retriever, p.search.parts

    @classmethod
    def open(cls, settings: Settings | None = None, *, embedder: Embedder | None = None,
             **overrides: Any) -> MemoryManager:
        """The composition root: stores and parts from ``settings`` by ``factory.py``."""
        from hello_memory.factory import build_extractor, open_stores

        settings = build.opened_settings(settings, overrides)
        extractor = build_extractor(settings.semantic, settings.limits.analysis_chars)
        # Stores.open replays the backlog with the graph links in place (ARCHITECTURE.md)
        return cls(open_stores(settings, embedder=embedder, extractor=GraphLinks(extractor)),
                   **build.options_of(settings, extractor=extractor))

    def resume(self) -> int:
        """Install the graph links, replay what the stores' open left (``build.resume_stores``)."""
        self.resumed = True  # once: rows a failed replay leaves stay pending (reconcile)
        return build.resume_stores(self.stores, self.extract_links, self._times_from_text)

    @property
    def perceptual(self) -> PerceptualMemory:
        """Image, audio and perceptual-text memory; PerceptualNotConfiguredError if off."""
        if self._perceptual is None:
            raise perceptual_off_error()
        return self._perceptual

    @property
    def has_perceptual(self) -> bool:
        """Whether perceptual memory is configured (``perceptual`` would not raise)."""
        return self._perceptual is not None

    @property
    def browse(self) -> BrowseService:
        """Read-only listing and lookups of the stores (services/browse.py)."""
        return self._browse

    @property
    def edit(self) -> EditService:
        """Updates and deletes (services/edit.py): keyed adds, batch deletes."""
        return self._edit

    @property
    def maintenance(self) -> MaintenanceService:
        """Counts, export/import, repairs, the job audit (services/maintenance.py)."""
        return self._maintenance

    @property
    def limits(self) -> LimitsSettings:
        """The ``limits`` its stores enforce (ARCHITECTURE.md, "Where settings reach")."""
        return self.stores.limits

    @property
    def lifecycle(self) -> JobsSettings:
        """The lifecycle defaults (the ``jobs`` settings) of forget and consolidate."""
        return self.lifecycle_service.defaults

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The store's embedder over ``texts``, for :meth:`add_embedded`."""
        return self.stores.embedder.embed(list(texts))

    def close(self) -> None:
        build.close_facade(self._search, self.stores, self.llm)

    def __enter__(self) -> MemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def resolve_namespace(self, namespace: str | None) -> str:
        """``namespace`` checked, or this manager's ``default_namespace`` when None."""
        return require_namespace(self.default_namespace if namespace is None else namespace)

    def add(self, content: str, memory_type: MemoryType | str | None = None,
            importance: float | None = None, metadata: Mapping[str, Any] | None = None, *,
            namespace: str | None = None, user_id: str | None = None,
            agent_id: str | None = None, session_id: str | None = None,
            event_time: datetime | None = None, auto_classify: bool = False,
            on_duplicate: str | None = None) -> MemoryItem:
        """Store one memory (as :meth:`add_many`; type ``default_type`` unless given)."""
        return self.add_many([dict(content=content, memory_type=memory_type, importance=importance,
                                   metadata=metadata, namespace=namespace, user_id=user_id,
                                   agent_id=agent_id, session_id=session_id,
                                   event_time=event_time, auto_classify=auto_classify)],
                             on_duplicate=on_duplicate)[0]

    def add_many(self, entries: Iterable[Mapping[str, Any]], *,
                 on_duplicate: str | None = None) -> list[MemoryItem]:
        """Store memories, validated first, in one batch; idempotent (services/ingest.py)."""
        return self.add_embedded(entries, on_duplicate=on_duplicate)

    @telemetry.traced("create_memory", count=len)
    def add_embedded(self, entries: Iterable[Mapping[str, Any]], *,
                     on_duplicate: str | None = None,
                     embedded: Mapping[str, npt.NDArray[np.float32]] | None = None
                     ) -> list[MemoryItem]:
        """:meth:`add_many` with vectors by text from :meth:`embed` (the server's writer)."""
        return self._ingest.add_embedded(entries, on_duplicate=on_duplicate, embedded=embedded)

    def remember_conversation(self, turns: Sequence[Mapping[str, Any] | tuple[str, str]],
                              **options: Any) -> list[MemoryItem]:
        """Store the lasting facts of ``[{"role", "content"}, ...]`` (memory/extraction.py)."""
        return self._ingest.remember_conversation(turns, **options)

    def search(self, query: str, memory_types: Sequence[MemoryType | str] | None = None,
               top_k: int = 5, *, namespace: str | None = None,
               min_importance: float | None = None, time_range: TimeRange | None = None,
               user_id: str | None = None, agent_id: str | None = None,
               session_id: str | None = None, filters: Mapping[str, Any] | None = None,
               reference_time: datetime | None = None,
               recipe: str | SearchRecipe | None = None, views: Sequence[str] | None = None,
               view_weights: Mapping[str, float] | None = None,
               neighbor_weight: float | None = None, enable_planning: bool | None = None,
               enable_reflection: bool | None = None, touch: bool = True,
               as_of: datetime | None = None, min_score: float | None = None
               ) -> list[SearchHit]:
        """The one search, best first (docs/RETRIEVAL.md; services/search.py's arguments)."""
        return self._search.search(
            query, memory_types, top_k, namespace=self.resolve_namespace(namespace),
            filters=filters, min_importance=min_importance, time_range=time_range,
            user_id=user_id, agent_id=agent_id, session_id=session_id,
            reference_time=reference_time, recipe=recipe, views=views, view_weights=view_weights,
            neighbor_weight=neighbor_weight, enable_planning=enable_planning,
            enable_reflection=enable_reflection, touch=touch, as_of=as_of, min_score=min_score)

    def perceptual_search(self, ns: str, query: str, top_k: int,
                          min_importance: float | None, user_id: str | None) -> list[SearchHit]:
        """Text query against every modality whose encoder is configured."""
        return self._search.perceptual_search(ns, query, top_k, min_importance, user_id)

    def resolve_id(self, memory_id: str, *, namespace: str | None = None) -> str:
        """The full id of ``memory_id`` or a short handle (docs/TOOLS.md, "The context block")."""
        return self._lookup.resolve_id(self.resolve_namespace(namespace), memory_id)

    def short_ids(self, memory_ids: Iterable[str], *, namespace: str | None = None
                  ) -> dict[str, str]:
        """The shortest handle of each id that no other memory of the namespace shares
        (the whole id where another one does): one read of the stored ids for all."""
        return self._lookup.short_ids(self.resolve_namespace(namespace), memory_ids)

    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryItem:
        return self._lookup.get(self.resolve_namespace(namespace), memory_id)

    def mentioned_times(self, memory_id: str, *, namespace: str | None = None) -> list[TimeSpan]:
        """The time ranges the memory's text mentions (``memory.times_from_text``)."""
        return self._lookup.mentioned_times(self.resolve_namespace(namespace), memory_id)

    def update(self, memory_id: str, *, namespace: str | None = None, content: str | None = None,
               importance: float | None = None, metadata: Mapping[str, Any] | None = None
               ) -> MemoryItem:
        """Change content (re-embedded, re-extracted), importance or metadata."""
        return self._edit.update(self.resolve_namespace(namespace), memory_id, content=content,
                                 importance=importance, metadata=metadata)

    def remove(self, memory_id: str, *, namespace: str | None = None) -> bool:
        """Delete one memory from every store; False if it does not exist."""
        return self._edit.remove(self.resolve_namespace(namespace), memory_id)

    def stats(self, namespace: str | None = None) -> MemoryStats:
        """Counts of one namespace (a ``MemoryStats`` dict)."""
        return self._maintenance.stats(self.resolve_namespace(namespace))

    def clear(self, namespace: str, *, confirm: bool = False,
              uploads_dir: str | Path | None = None) -> ClearReport:
        """Delete everything of ONE namespace and its uploads (services/edit.py ``clear``)."""
        root = uploads_dir if uploads_dir is not None else self.uploads_dir
        return self._edit.clear(namespace, confirm=confirm, uploads_dir=root)

    def export_jsonl(self, path: str | Path, *, namespace: str | None = None) -> int:
        """Write every memory of a namespace as JSON lines (no vectors)."""
        return self._maintenance.export_jsonl(self.resolve_namespace(namespace), path)

    def import_jsonl(self, path: str | Path, *, namespace: str | None = None,
                     on_duplicate: str | None = None) -> dict[str, int]:
        """Load an export, every line validated first (services/maintenance.py)."""
        return self._maintenance.import_jsonl(path, namespace=namespace, on_duplicate=on_duplicate)

    @telemetry.traced("delete_memory", name="forget hello-memory")
    def forget(self, strategy: str | None = None, *, namespace: str | None = None,
               threshold: float | None = None, max_age_days: float | None = None,
               max_items: int | None = None, memory_types: Sequence[MemoryType | str] | None = None,
               dry_run: bool = False, hard: bool = False) -> ForgetReport:
        """Forget by ``strategy``; what is left out comes from :attr:`lifecycle`."""
        return self.lifecycle_service.forget(
            strategy, namespace=namespace, threshold=threshold, max_age_days=max_age_days,
            max_items=max_items, memory_types=memory_types, dry_run=dry_run, hard=hard)

    def forget_ids(self, ids: Sequence[str], *, namespace: str | None = None,
                   dry_run: bool = False) -> list[str]:
        """Soft-forget these memories (NotFoundError for an unknown id); the ids forgotten."""
        ids = [self.resolve_id(i, namespace=namespace) for i in ids]
        return self.lifecycle_service.forget_ids(ids, namespace=namespace, dry_run=dry_run)

    def restore(self, ids: Sequence[str], *, namespace: str | None = None) -> int:
        """Bring soft-forgotten memories back into search; returns how many."""
        ids = [self.resolve_id(i, namespace=namespace) for i in ids]
        return self.lifecycle_service.restore(ids, namespace=namespace)

    @telemetry.traced("update_memory", name="consolidate hello-memory")
    def consolidate(self, from_type: MemoryType | str | None = None,
                    to_type: MemoryType | str | None = None, *, namespace: str | None = None,
                    importance_threshold: float | None = None, min_access_count: int | None = None,
                    dry_run: bool = False) -> ConsolidateReport:
        """Promote important memories one step; what is left out comes from :attr:`lifecycle`."""
        return self.lifecycle_service.consolidate(
            from_type, to_type, namespace=namespace, importance_threshold=importance_threshold,
            min_access_count=min_access_count, dry_run=dry_run)

    def reconcile(self, *, namespace: str | None = None, dry_run: bool = False,
                  retry_failed: Sequence[str] = (), drop_failed: Sequence[str] = ()
                  ) -> ReconcileReport:
        """Bring vectors and graph in line with the records (memory/maintenance.py)."""
        return self._maintenance.reconcile(namespace=namespace, dry_run=dry_run,
                                           retry_failed=retry_failed, drop_failed=drop_failed)

    def reindex(self, *, namespace: str | None = None, dry_run: bool = False,
                progress: bool = False) -> ReindexReport:
        """Rebuild vectors and graph from the records alone (None: every namespace)."""
        return self._maintenance.reindex(namespace=namespace, dry_run=dry_run, progress=progress)

    def optimize(self) -> OptimizeReport:
        """Build the vector index where the backend builds it only on request."""
        return self._maintenance.optimize()
