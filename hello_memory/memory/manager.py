"""``MemoryManager``: the one front door over working, episodic, semantic (and,
when configured, perceptual) memory.

>>> from hello_memory import MemoryManager                          # doctest: +SKIP
>>> with MemoryManager.open(data_dir="/tmp/hm") as mm:              # doctest: +SKIP
...     mm.add("Alice prefers green tea", memory_type="semantic", namespace="alice")
...     hits = mm.search("what does Alice drink?", namespace="alice")

Every call is scoped to one namespace (``default_namespace`` when omitted). ``search``
is the project's one search engine, the hybrid retriever (docs/RETRIEVAL.md); results
are ranked by the fused relevance inside each type's scoring profile
(:mod:`hello_memory.memory.scoring`), never by importance alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hello_memory import telemetry
from hello_memory.memory.dedup import duplicate_mode
from hello_memory.memory.episodic import EpisodicMemory
from hello_memory.memory.lifecycle import Lifecycle
from hello_memory.memory.reports import (
    ClearReport,
    ConsolidateReport,
    ForgetReport,
    MemoryStats,
)
from hello_memory.memory.scoring import EPISODIC, ScoringProfile, SearchHit
from hello_memory.memory.semantic import SemanticMemory
from hello_memory.memory.supersede import Superseder
from hello_memory.memory.working import WorkingMemory
from hello_memory.retrieval.hybrid import HybridRetriever
from hello_memory.services.browse import BrowseService

# the JSON forms moved to services/convert.py (issue 31); named here as before
from hello_memory.services.convert import (
    added_to_json,
    hit_to_json,
    item_from_json,
    item_to_json,
    perceptual_off_error,
)
from hello_memory.services.edit import EditService
from hello_memory.services.ingest import STORED_TYPES, IngestService, date_in_text
from hello_memory.services.lookup import HANDLE_CHARS, ID_CHARS, LookupService
from hello_memory.services.maintenance import MaintenanceService

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from hello_memory.config import JobsSettings, LimitsSettings, RetrievalSettings, Settings
    from hello_memory.embedding.base import Embedder
    from hello_memory.llm.base import LLMClient
    from hello_memory.memory.maintenance import OptimizeReport, ReconcileReport, ReindexReport
    from hello_memory.memory.perceptual import PerceptualMemory
    from hello_memory.retrieval.recipes import SearchRecipe
from hello_memory.stores.bundle import Stores
from hello_memory.stores.uploads import uploads_root
from hello_memory.text.entities import EntityExtractor, default_extractor
from hello_memory.text.timeparse import TimeRange as TimeSpan
from hello_memory.types import (
    Entity,
    MemoryItem,
    MemoryType,
    Relation,
    utcnow,
)
from hello_memory.validation import (
    check_search_filters,
    require_namespace,
    validate_importance,
    validate_memory_type,
)

log = logging.getLogger(__name__)

__all__ = ["HANDLE_CHARS", "ID_CHARS", "STORED_TYPES", "MemoryManager", "added_to_json",
           "date_in_text", "hit_to_json", "item_from_json", "item_to_json",
           "perceptual_off_error"]

TimeRange = tuple[datetime | None, datetime | None]


def _merged_filters(filters: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword filters ``given`` to :meth:`MemoryManager.search`, with those of its
    ``filters`` mapping over them (``search``'s part); InvalidInputError for a key that
    is no search filter."""
    check_search_filters(filters)
    return {**given, **filters}


class MemoryManager:
    """Facade over the memory types. Takes built stores; see :meth:`open`."""

    def __init__(
        self,
        stores: Stores,
        *,
        working: WorkingMemory | None = None,
        extractor: EntityExtractor | None = None,
        default_namespace: str = "default",
        default_type: MemoryType | str = MemoryType.EPISODIC,
        dedup_threshold: float = 0.92,
        episodic_profile: ScoringProfile = EPISODIC,
        max_hops: int = 2,
        clock: Callable[[], datetime] = utcnow,
        llm: LLMClient | None = None,
        retrieval: RetrievalSettings | None = None,
        lifecycle: JobsSettings | None = None,
        supersede: str = "auto",
        supersede_candidates: int = 5,
        extract_facts: bool = False,
        uploads_dir: str | Path | None = None,
        on_duplicate: str = "return",
        times_from_text: bool = True,
        event_time_from_text: bool = False,
    ) -> None:
        self.stores = stores
        self._browse = BrowseService(stores)  # the interfaces' read-only view (browse)
        self.extractor = extractor or default_extractor(max_chars=stores.limits.analysis_chars)
        self.working = working or WorkingMemory(clock=clock, limits=stores.limits)
        self.episodic = EpisodicMemory(stores, profile=episodic_profile, clock=clock)
        self.semantic = SemanticMemory(stores, self.extractor, max_hops=max_hops, clock=clock)
        self.default_namespace = require_namespace(default_namespace)
        self.default_type = validate_memory_type(default_type)
        # Perceptual memory (images, audio) when the stores were opened with it; the
        # ``perceptual`` property raises a typed error naming the setting otherwise.
        self._perceptual: PerceptualMemory | None = stores.indexer(  # type: ignore[assignment]
            MemoryType.PERCEPTUAL)
        # Where the server keeps uploaded files (<data_dir>/uploads): clear() removes a
        # namespace's folder there. None: this manager knows of no uploads.
        self.uploads_dir = Path(uploads_dir) if uploads_dir is not None else None
        self.dedup_threshold = dedup_threshold
        # Idempotent add and times from the text (issue 15, memory/dedup.py): what a
        # repeated add does, whether writes store the times the text mentions, and
        # whether a full date in the text is the event time when none is given.
        self.on_duplicate = duplicate_mode(on_duplicate)
        stores.records.mention_times = times_from_text
        self.event_time_from_text = event_time_from_text
        self._clock = clock
        # The configured LLM client (None: every LLM step stays off); RAG and the
        # retrievers built from this manager use it unless given their own.
        self.llm = llm
        # The one search engine (docs/RETRIEVAL.md), built from the ``retrieval``
        # settings and this manager's LLM; every interface searches through it.
        self.retriever = HybridRetriever(self, settings=retrieval, clock=clock)
        # Conversation extraction (memory.extract_facts, memory/extraction.py).
        self.extract_facts = extract_facts
        self._build_services(lifecycle, supersede, supersede_candidates)
        # Only semantic memories feed the entity graph.
        stores.install_extractor(self._ingest.extract_links)  # runs open()'s deferred replay

    def _build_services(self, lifecycle: JobsSettings | None, supersede: str,
                        supersede_candidates: int) -> None:
        """The services the facade delegates to (docs/ARCHITECTURE.md, Layers), each
        given its parts here from this manager's; none imports this module."""
        stores, working = self.stores, self.working
        self._lookup = LookupService(stores, working)  # ids, short handles, get
        self._edit = EditService(stores, working, self._lookup)  # update, remove, clear
        # Forget / restore / consolidate (memory/lifecycle.py), with the lifecycle
        # defaults (the ``jobs`` settings, ARCHITECTURE decision 9) that fill what a call
        # leaves out; REST, the MemoryTool and the jobs read them as ``lifecycle``.
        self.lifecycle_service = Lifecycle(stores, working, defaults=lifecycle,
                                           dedup_threshold=self.dedup_threshold,
                                           clock=self._clock,
                                           namespace=self.resolve_namespace)
        # Facts that update (memory.supersede, hello_memory/memory/supersede.py).
        self.superseder = Superseder(self, mode=supersede, candidates=supersede_candidates)
        # The add path (services/ingest.py): builds, checks and stores new memories.
        self._ingest = IngestService(
            stores, working, extractor=self.extractor, superseder=self.superseder,
            namespace=self.resolve_namespace, default_type=self.default_type,
            dedup_threshold=self.dedup_threshold, on_duplicate=self.on_duplicate,
            event_time_from_text=self.event_time_from_text, clock=self._clock)
        # stats, export / import, reconcile / reindex / optimize (services/maintenance.py)
        self._maintenance = MaintenanceService(stores, working, self._ingest)

    @classmethod
    def open(cls, settings: Settings | None = None, *, embedder: Embedder | None = None,
             **overrides: Any) -> MemoryManager:
        """The composition root: every store, the LLM client and the search engine
        built from settings (``load_settings(**overrides)`` when None). ``embedder``
        injects an already loaded embedder (tests and benchmarks share one). The parts
        come from ``factory.py``, the parts builder below this facade (it never imports
        it; docs/ARCHITECTURE.md, Layers)."""
        from hello_memory.config import load_settings
        from hello_memory.factory import build_extractor, open_stores
        from hello_memory.llm.openai_compat import from_settings

        settings = settings or load_settings(**overrides)
        if settings.observability.tracing:  # spans stay off unless asked for
            telemetry.configure(tracing=True,
                                capture_query=settings.observability.capture_query)
        w, m, sem = settings.working, settings.memory, settings.semantic
        return cls(open_stores(settings, embedder=embedder),
                   working=WorkingMemory(capacity=w.capacity, ttl_minutes=w.ttl_minutes,
                                         token_budget=w.token_budget, limits=settings.limits),
                   extractor=build_extractor(sem, settings.limits.analysis_chars),
                   default_namespace=settings.default_namespace,
                   default_type=m.default_type, dedup_threshold=m.dedup_threshold,
                   episodic_profile=EPISODIC.model_copy(
                       update={"half_life_days": m.episodic_half_life_days}),
                   max_hops=sem.max_hops, llm=from_settings(settings.llm),
                   retrieval=settings.retrieval, lifecycle=settings.jobs,
                   supersede=m.supersede, supersede_candidates=m.supersede_candidates,
                   extract_facts=m.extract_facts,
                   uploads_dir=uploads_root(settings.data_dir),
                   on_duplicate=m.on_duplicate, times_from_text=m.times_from_text,
                   event_time_from_text=m.event_time_from_text)

    @property
    def perceptual(self) -> PerceptualMemory:
        """Image, audio and perceptual-text memory; raises PerceptualNotConfiguredError
        (naming the extra and the settings) when the stores were opened without it."""
        if self._perceptual is None:
            raise perceptual_off_error()
        return self._perceptual

    @property
    def browse(self) -> BrowseService:
        """Read-only listing and lookups of the stores (services/browse.py): what the
        inspector, the adapters, the catalogue, the jobs and /metrics read."""
        return self._browse

    @property
    def limits(self) -> LimitsSettings:
        """The ``limits`` settings this manager's stores were opened with: what its checks
        enforce (docs/ARCHITECTURE.md, "Where settings reach the parts")."""
        return self.stores.limits

    @property
    def lifecycle(self) -> JobsSettings:
        """The lifecycle defaults (the ``jobs`` settings) of forget and consolidate."""
        return self.lifecycle_service.defaults

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The store's embedder over ``texts`` (one vector per text): what
        :meth:`add_many` would compute, for :meth:`add_embedded` (the server's writer,
        memory/write_batching.py)."""
        return self.stores.embedder.embed(list(texts))

    @property
    def has_perceptual(self) -> bool:
        """Whether perceptual memory is configured (``perceptual`` would not raise)."""
        return self._perceptual is not None

    def close(self) -> None:
        self.retriever.close()
        self.stores.close()
        close_llm = getattr(self.llm, "close", None)
        if callable(close_llm):
            close_llm()

    def __enter__(self) -> MemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def extract_links(self, item: MemoryItem) -> tuple[Sequence[Entity], Sequence[Relation]]:
        """The entities and relations ``item`` puts in the graph; the stores call this
        on every write, the inspector to show them. A semantic memory gives its
        entities and relations; every stored text memory (episodic too) gives who the
        user is and the people around them, so "my sister" resolves whatever type the
        fact was stored as (issue 26: a type does not switch features off)."""
        return self._ingest.extract_links(item)

    def resolve_namespace(self, namespace: str | None) -> str:
        """``namespace`` checked, or this manager's ``default_namespace`` when None."""
        return require_namespace(self.default_namespace if namespace is None else namespace)

    # --- writes ---------------------------------------------------------------------
    def add(
        self,
        content: str,
        memory_type: MemoryType | str | None = None,
        importance: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        namespace: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        event_time: datetime | None = None,
        auto_classify: bool = False,
        on_duplicate: str | None = None,
    ) -> MemoryItem:
        """Store one memory. ``memory_type`` defaults to ``default_type`` (episodic:
        persistent, unlike working memory); pass
        ``auto_classify=True`` to let the zh/en cue rules choose. ``importance`` None
        means "estimate" (see
        :func:`~hello_memory.memory.importance.estimate_importance`). The same content
        already stored in the namespace and type is not stored again: see
        :meth:`add_many`."""
        return self.add_many([dict(content=content, memory_type=memory_type,
                                   importance=importance, metadata=metadata,
                                   namespace=namespace, user_id=user_id, agent_id=agent_id,
                                   session_id=session_id, event_time=event_time,
                                   auto_classify=auto_classify)],
                             on_duplicate=on_duplicate)[0]

    def add_many(self, entries: Iterable[Mapping[str, Any]], *,
                 on_duplicate: str | None = None) -> list[MemoryItem]:
        """Store many memories: every entry is validated first (one bad entry stores
        nothing), then one embedding batch and one transaction for the stored types.

        Idempotent (issue 15, memory/dedup.py): an entry whose content is already
        stored in its namespace and type (or repeats an earlier entry) follows
        ``on_duplicate`` (default ``memory.on_duplicate``): ``return`` gives back the
        stored memory, ``update`` merges the entry into it first, ``store`` keeps a
        copy. Returned items are in entry order; a repeated one has ``duplicate_of`` set
        (its own id), a new one lists ``near_duplicates`` (cosine >= dedup_threshold)."""
        return self.add_embedded(entries, on_duplicate=on_duplicate)

    @telemetry.traced("create_memory", count=len)
    def add_embedded(self, entries: Iterable[Mapping[str, Any]], *,
                     on_duplicate: str | None = None,
                     embedded: Mapping[str, npt.NDArray[np.float32]] | None = None
                     ) -> list[MemoryItem]:
        """:meth:`add_many` with vectors by text computed beforehand by this store's
        embedder (:meth:`embed`; the server's writer, memory/write_batching.py): one is
        used for an entry whose stored text is exactly that text, the rest are
        embedded here."""
        return self._ingest.add_embedded(entries, on_duplicate=on_duplicate,
                                         embedded=embedded)

    def mentioned_times(self, memory_id: str, *, namespace: str | None = None
                        ) -> list[TimeSpan]:
        """The time ranges the memory's text mentions, resolved against its event time
        when it was written (``memory.times_from_text``; the symbolic view filters on
        them, see hello_memory/retrieval/views.py)."""
        return self._lookup.mentioned_times(self.resolve_namespace(namespace), memory_id)

    def remember_conversation(self, turns: Sequence[Mapping[str, Any] | tuple[str, str]],
                              **options: Any) -> list[MemoryItem]:
        """Store the lasting facts of a conversation (``[{"role", "content"}, ...]``):
        extracted by the LLM when ``memory.extract_facts`` (or ``extract=True``) and
        an LLM is configured, else the turns themselves; see memory/extraction.py.
        ``options``: namespace, user_id, agent_id, session_id, event_time, extract."""
        from hello_memory.memory.extraction import remember_conversation

        return remember_conversation(self, turns, **options)

    # --- reads ----------------------------------------------------------------------
    def search(
        self,
        query: str,
        memory_types: Sequence[MemoryType | str] | None = None,
        top_k: int = 5,
        *,
        namespace: str | None = None,
        min_importance: float | None = None,
        time_range: TimeRange | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        reference_time: datetime | None = None,
        recipe: str | SearchRecipe | None = None,
        views: Sequence[str] | None = None,
        view_weights: Mapping[str, float] | None = None,
        neighbor_weight: float | None = None,
        enable_planning: bool | None = None,
        enable_reflection: bool | None = None,
        touch: bool = True,
        as_of: datetime | None = None,
        min_score: float | None = None,
    ) -> list[SearchHit]:
        """The one search (docs/RETRIEVAL.md): the hybrid engine over the requested
        memory types (all by default), best first. Every interface calls this.
        ``min_score`` (in [0, 1]) drops the hits scored under it (docs/RETRIEVAL.md,
        "Reading a score": ``retrieval.min_score`` is the measured floor).

        ``filters`` is the same as the keyword filters in one mapping (``user_id``,
        ``agent_id``, ``session_id``, ``min_importance``, ``time_range``).
        ``reference_time`` resolves "last week" (default now); ``recipe`` picks a
        :mod:`~hello_memory.retrieval.recipes` preset (``hybrid`` by default,
        ``per-type`` and view ablations for comparisons); ``views``,
        ``view_weights``, ``neighbor_weight`` and the LLM switches override the
        ``retrieval`` settings for this call; ``touch`` records the access.
        ``as_of`` (an aware datetime, also a ``filters`` key) searches what was true
        then: memories superseded since are found, those not yet true are not
        (valid_from <= as_of < valid_to, memory/supersede.py); without it only the
        memories still true are searched."""
        if filters:
            merged = _merged_filters(filters, {
                "min_importance": min_importance, "time_range": time_range,
                "user_id": user_id, "agent_id": agent_id, "session_id": session_id,
                "as_of": as_of})
            min_importance, time_range = merged["min_importance"], merged["time_range"]
            user_id, agent_id = merged["user_id"], merged["agent_id"]
            session_id, as_of = merged["session_id"], merged["as_of"]
        types = [validate_memory_type(t) for t in memory_types] if memory_types else None
        if min_importance is not None:
            min_importance = validate_importance(min_importance)
        return self.retriever.retrieve(
            query, top_k, namespace=self.resolve_namespace(namespace), memory_types=types,
            user_id=user_id, agent_id=agent_id, session_id=session_id,
            time_range=time_range, min_importance=min_importance,
            reference_time=reference_time, recipe=recipe, views=views,
            view_weights=view_weights, neighbor_weight=neighbor_weight,
            enable_planning=enable_planning, enable_reflection=enable_reflection, touch=touch,
            as_of=as_of, min_score=min_score)

    def perceptual_search(self, ns: str, query: str, top_k: int,
                           min_importance: float | None, user_id: str | None) -> list[SearchHit]:
        """Text query against every modality whose encoder is configured (text→text,
        text→image through CLIP's text tower, text→audio through CLAP's)."""
        from hello_memory.types import Modality

        hits: list[SearchHit] = []
        for target in Modality:
            if target == Modality.TEXT or self.perceptual.has_encoder(target):
                hits += self.perceptual.retrieve(ns, query, target_modality=target, top_k=top_k,
                                                 min_importance=min_importance, user_id=user_id)
        return hits

    def resolve_id(self, memory_id: str, *, namespace: str | None = None) -> str:
        """The full id of ``memory_id``, which may be a short handle: the first
        HANDLE_CHARS or more characters of an id, as the context block shows them
        (docs/TOOLS.md, "The context block"). A full id, or a handle no memory of the
        namespace starts with, is returned as it is (the caller then finds it or
        not); a handle more than one memory starts with is an InvalidInputError."""
        return self._lookup.resolve_id(self.resolve_namespace(namespace), memory_id)

    def short_id(self, memory_id: str, *, namespace: str | None = None) -> str:
        """The shortest handle of ``memory_id`` of at least HANDLE_CHARS characters that
        no other memory of the namespace starts with (the full id if none is)."""
        return self._lookup.short_id(self.resolve_namespace(namespace), memory_id)

    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryItem:
        return self._lookup.get(self.resolve_namespace(namespace), memory_id)

    def update(self, memory_id: str, *, namespace: str | None = None, content: str | None = None,
               importance: float | None = None, metadata: Mapping[str, Any] | None = None
               ) -> MemoryItem:
        """Change content (re-embedded, re-extracted), importance or metadata (payload
        update only)."""
        return self._edit.update(self.resolve_namespace(namespace), memory_id, content=content,
                                 importance=importance, metadata=metadata)

    def remove(self, memory_id: str, *, namespace: str | None = None) -> bool:
        """Delete one memory from every store; False if it does not exist."""
        return self._edit.remove(self.resolve_namespace(namespace), memory_id)

    def stats(self, namespace: str | None = None) -> MemoryStats:
        """Counts of one namespace: memories per type, forgotten ones, vectors, the
        entity graph and working memory's tokens (a ``MemoryStats`` dict)."""
        return self._maintenance.stats(self.resolve_namespace(namespace))

    def clear(self, namespace: str, *, confirm: bool = False,
              uploads_dir: str | Path | None = None) -> ClearReport:
        """Delete everything of ONE namespace: memories of every type, documents and
        their chunks, outbox and audit rows, entity graph, namespace totals (every row
        of every table that belongs to it, see RecordStore.purge_namespace), its points
        in every vector collection (memories, chunks, each perceptual modality), working
        memory, and the files kept for it under ``uploads_dir`` (default: this
        manager's, ``<data_dir>/uploads``). Records go first, in one transaction: a
        clear cut short by a crash leaves only derived data, which running it again
        removes. Returns counts per kind; one audit row of counts (no content) stays."""
        root = uploads_dir if uploads_dir is not None else self.uploads_dir
        return self._edit.clear(namespace, confirm=confirm, uploads_dir=root)

    # --- export / import --------------------------------------------------------------
    def export_jsonl(self, path: str | Path, *, namespace: str | None = None) -> int:
        """Write every memory of a namespace (forgotten ones and working memory too)
        as JSON lines; vectors are not exported (they are recomputed on import)."""
        return self._maintenance.export_jsonl(self.resolve_namespace(namespace), path)

    def import_jsonl(self, path: str | Path, *, namespace: str | None = None,
                     on_duplicate: str | None = None) -> dict[str, int]:
        """Load an export. Every line is validated before anything is written; ids that
        already exist are skipped, so importing twice changes nothing. A record whose
        content is already stored in its namespace and type (another export, an add)
        follows ``on_duplicate`` as :meth:`add_many` does and counts in
        ``duplicates``: not imported (``return``), merged into the stored one
        (``update``) or imported anyway (``store``)."""
        return self._maintenance.import_jsonl(path, namespace=namespace,
                                              on_duplicate=on_duplicate)

    # --- lifecycle (forget / restore / consolidate): the Lifecycle service ----------
    @telemetry.traced("delete_memory", name="forget hello-memory")
    def forget(
        self,
        strategy: str | None = None,
        *,
        namespace: str | None = None,
        threshold: float | None = None,
        max_age_days: float | None = None,
        max_items: int | None = None,
        memory_types: Sequence[MemoryType | str] | None = None,
        dry_run: bool = False,
        hard: bool = False,
    ) -> ForgetReport:
        """Forget by ``strategy``; the strategy and its parameters left out (or None)
        come from :attr:`lifecycle` (the ``jobs`` settings). See memory/lifecycle.py."""
        return self.lifecycle_service.forget(
            strategy, namespace=namespace, threshold=threshold, max_age_days=max_age_days,
            max_items=max_items, memory_types=memory_types, dry_run=dry_run, hard=hard)

    def forget_ids(self, ids: Sequence[str], *, namespace: str | None = None,
                   dry_run: bool = False) -> list[str]:
        """Soft-forget these memories (``restore`` undoes it; working memories are
        dropped). An unknown id changes nothing and raises NotFoundError; ids already
        forgotten are skipped. Returns the ids forgotten (or, dry run, that would be)."""
        ids = [self.resolve_id(i, namespace=namespace) for i in ids]
        return self.lifecycle_service.forget_ids(ids, namespace=namespace, dry_run=dry_run)

    def restore(self, ids: Sequence[str], *, namespace: str | None = None) -> int:
        """Bring soft-forgotten memories back into search; returns how many."""
        ids = [self.resolve_id(i, namespace=namespace) for i in ids]
        return self.lifecycle_service.restore(ids, namespace=namespace)

    @telemetry.traced("update_memory", name="consolidate hello-memory")
    def consolidate(
        self,
        from_type: MemoryType | str | None = None,
        to_type: MemoryType | str | None = None,
        *,
        namespace: str | None = None,
        importance_threshold: float | None = None,
        min_access_count: int | None = None,
        dry_run: bool = False,
    ) -> ConsolidateReport:
        """Promote important memories one step (working -> episodic -> semantic); the
        direction and thresholds left out come from :attr:`lifecycle` (default episodic
        -> semantic; one end of the direction names the other)."""
        return self.lifecycle_service.consolidate(
            from_type, to_type, namespace=namespace, importance_threshold=importance_threshold,
            min_access_count=min_access_count, dry_run=dry_run)

    # --- maintenance (records are the truth; see maintenance.py) ----------------------
    def reconcile(self, *, namespace: str | None = None, dry_run: bool = False,
                  retry_failed: Sequence[str] = (), drop_failed: Sequence[str] = ()
                  ) -> ReconcileReport:
        """Bring vectors and graph in line with the records; a ``ReconcileReport``.
        ``namespace`` None means every namespace; ``retry_failed`` / ``drop_failed``
        name index failures to apply again or to give up (see Maintenance.reconcile)."""
        return self._maintenance.reconcile(namespace=namespace, dry_run=dry_run,
                                           retry_failed=retry_failed, drop_failed=drop_failed)

    def reindex(self, *, namespace: str | None = None, dry_run: bool = False,
                progress: bool = False) -> ReindexReport:
        """Rebuild vectors and graph from the records alone; a ``ReindexReport``.
        ``namespace`` None means every namespace."""
        return self._maintenance.reindex(namespace=namespace, dry_run=dry_run,
                                         progress=progress)

    def optimize(self) -> OptimizeReport:
        """Build the vector index where the backend builds it only on request (embedded
        Qdrant Edge: HNSW, ``vector.hnsw``); an ``OptimizeReport``. Blocks: about a
        minute per 100k memories on 2 cores."""
        return self._maintenance.optimize()
