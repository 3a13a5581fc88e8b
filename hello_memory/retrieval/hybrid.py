"""``HybridRetriever``: plan, run the views in parallel, fuse, reflect, score (seed 001).

>>> retriever = HybridRetriever(manager)                               # doctest: +SKIP
>>> hits = retriever.retrieve("what did Alice buy last week?", namespace="alice")
>>> print(retriever.explain(hits[0]))

One call of :meth:`HybridRetriever.retrieve` (the engine behind
:meth:`MemoryManager.search`, the project's one search):

1. **plan** - rule-based analysis (keywords, persons, entities, locations, calendar-true
   time ranges, question type) and conjunctive decomposition; with an LLM and
   ``enable_planning``, LLM information requirements and at most ``max_sub_queries``
   targeted sub-queries, the original always included;
2. **views** - semantic, lexical, symbolic (time constraints) and graph, run in
   parallel; then the symbolic soft constraints (persons, entities, locations) on the
   records of the candidate pool; then the views that run beside them: working and
   perceptual memory (retrieval/memory_views.py) when the search asks for those types
   and the retriever's parts have them (:class:`~hello_memory.retrieval.parts.SearchParts`);
3. **fusion** - weighted reciprocal-rank fusion keeping each view's rank and score;
   optionally a share of a memory's fused score flows to its neighbours in the same
   session (``neighbor_weight``), for answers spread over consecutive turns;
4. **reflection** - with an LLM and ``enable_reflection``: a completeness check and gap
   queries (semantic view only), at most ``max_reflection_rounds`` rounds;
5. **profiles** - each memory type's scoring profile applied to the normalised fused
   score (:mod:`hello_memory.memory.scoring`), which orders the final list.

Without an LLM, steps 1 and 4 are deterministic and the whole search is LLM-free: this
is the project's default LLM-free search (docs/RETRIEVAL.md).

The retriever's parts live in sibling modules it inherits: who a question is about
(``_hybrid_people.py``), running the views (``_hybrid_views.py``), Chinese and mixed
text (``_hybrid_language.py``), fusion and the final score (``_hybrid_scoring.py``);
their constants stay importable from here (issue 31: no module over 600 lines).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from hello_memory import telemetry
from hello_memory.config import LimitsSettings, RetrievalSettings
from hello_memory.errors import InvalidInputError
from hello_memory.kept import KeptValues
from hello_memory.llm.base import LLMClient
from hello_memory.memory.scoring import PROFILES, ScoringProfile, SearchHit
from hello_memory.retrieval._hybrid_language import (  # noqa: F401 (re-exported)
    CJK_SEMANTIC_WEIGHT,
    CJK_SHARE,
    CROSS_LANGUAGE_STAND_IN,
    ENGLISH_PAIR_WEIGHT,
    MULTILINGUAL_SCAN,
    MULTILINGUAL_WEIGHT,
    LanguageMixin,
)
from hello_memory.retrieval._hybrid_people import PeopleMixin
from hello_memory.retrieval._hybrid_scoring import (  # noqa: F401 (re-exported)
    _TERM_CACHES,
    ATTRIBUTE_EVIDENCE,
    ATTRIBUTE_MISS_FACTOR,
    EVIDENCE_COSINE,
    PERCEPTUAL_COSINE,
    STANDING_TIME_MISS_FACTOR,
    SUBJECT_MISS_FACTOR,
    TIME_EVIDENCE,
    TIME_MISS_FACTOR,
    WHEN_MISS_FACTOR,
    ScoringMixin,
    _memory_terms,
)
from hello_memory.retrieval._hybrid_state import RetrievalPlan, _Round
from hello_memory.retrieval._hybrid_views import ViewsMixin
from hello_memory.retrieval.bounds import bounded_analysis
from hello_memory.retrieval.fusion import ViewResult, explain
from hello_memory.retrieval.memory_views import media_hits
from hello_memory.retrieval.multilingual import MultilingualReader
from hello_memory.retrieval.parts import HasSearchParts, SearchParts, parts_of
from hello_memory.retrieval.planning import (
    InformationPlan,
    QueryPlanner,
    analyze_query,
    decompose,
)
from hello_memory.retrieval.recipes import SearchRecipe, recipe_named
from hello_memory.retrieval.registry import RESERVED, registered_views, served_types, view_names
from hello_memory.retrieval.views import ViewRequest
from hello_memory.stores.records import ItemFilter
from hello_memory.text.entities import EntityExtractor, RuleExtractor
from hello_memory.text.links import STORED_TYPES
from hello_memory.types import MemoryStatus, MemoryType, utcnow
from hello_memory.validation import (
    check_text,
    require_namespace,
    validate_importance,
    validate_memory_type,
    validate_query,
    validate_time_range,
    validate_top_k,
)

if TYPE_CHECKING:
    from hello_memory.stores.bundle import Stores

__all__ = ["HybridRetriever", "RetrievalPlan"]

log = logging.getLogger(__name__)

TimeRange = tuple[datetime | None, datetime | None]
SEARCHED_TYPES = (MemoryType.WORKING, MemoryType.EPISODIC, MemoryType.SEMANTIC)
OWN_VIEWS = RESERVED  # (retrieval/registry.py: no registered view takes this name)


# What a retriever keeps of a namespace's records for the multilingual view (its
# totals, the ids of its listings), the neighbour context (each session's order) and
# the memories that mention a time, each while the namespace's write generation is the
# one it was read at (MemoryRepository.generation), and the people the graph links to
# a name (_linked_people): at most this many entries (small ones: ids, flags).
DERIVED = 8192
T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


def _check_arguments(query: str, top_k: int, memory_types: Sequence[MemoryType | str] | None,
                     min_importance: float | None, min_score: float | None,
                     user_id: str | None, agent_id: str | None, session_id: str | None,
                     limits: LimitsSettings | None = None
                     ) -> tuple[list[MemoryType] | None, float | None]:
    """The checks of a search's arguments (``HybridRetriever.retrieve``'s part), in its
    order: InvalidInputError for the first one that fails; the memory types asked for
    and ``min_importance``, checked. The one check of the search's query, memory types
    and ``min_importance`` (issue 31: the search service passes them on unchecked),
    types and importance first, the order the facade's callers have always met."""
    types = [validate_memory_type(t) for t in memory_types] if memory_types else None
    if min_importance is not None:
        min_importance = validate_importance(min_importance)
    if min_score is not None and (isinstance(min_score, bool)
                                  or not isinstance(min_score, (int, float))
                                  or not 0 <= min_score <= 1):
        raise InvalidInputError(f"min_score must be a number in [0, 1], got {min_score!r}")
    validate_query(query, limits)
    validate_top_k(top_k)
    for name, value in (("user_id", user_id), ("agent_id", agent_id),
                        ("session_id", session_id)):
        if isinstance(value, str):
            check_text(name, value)
    return types, min_importance


class HybridRetriever(PeopleMixin, LanguageMixin, ViewsMixin, ScoringMixin):
    """Hybrid retrieval over :class:`~hello_memory.retrieval.parts.SearchParts`.

    Args:
        source: the parts; or what lends them (``MemoryManager``: its working memory,
            extractor, LLM and clock are used); or bare stores (none of those).
        llm: an optional chat model for planning and reflection (default: the parts').
        settings: view weights, rrf k, candidate depth, switches (``RetrievalSettings``).
        extractor: entity extraction for query analysis (default: the parts', else
            rules).
        use_embeddings: False runs without the dense view (keyword fallback); also the
            case when the stores carry no embedder.
        profiles: the memory types' scoring profiles, applied after fusion.
    """

    def __init__(
        self,
        source: SearchParts | HasSearchParts | Stores,
        *,
        llm: LLMClient | None = None,
        settings: RetrievalSettings | None = None,
        extractor: EntityExtractor | None = None,
        use_embeddings: bool = True,
        profiles: Mapping[MemoryType, ScoringProfile] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.parts = parts = parts_of(source)  # retrieval/parts.py
        self.stores = parts.stores
        # Parts with an LLM configured lend it; without one, every LLM step (planning,
        # reflection) stays off.
        self.llm = llm if llm is not None else parts.llm
        self.settings = settings or RetrievalSettings()
        names = tuple(registered_views())  # those run beside others weigh too
        unknown = set(self.settings.view_weights) - set(names) - set(OWN_VIEWS)
        if unknown:
            raise InvalidInputError(f"unknown view(s) {sorted(unknown)} in view_weights; "
                                    f"use {list(names + OWN_VIEWS)}")
        self.extractor = extractor or parts.extractor or RuleExtractor()
        self.use_embeddings = use_embeddings and getattr(self.stores, "embedder", None) is not None
        self.profiles = dict(profiles or PROFILES)
        self.multilingual = MultilingualReader()
        self._clock = clock or parts.clock or utcnow
        # The planner uses the same LLM as every other step: the caller's, else the
        # parts' (a configured LLM plans; docs/RETRIEVAL.md).
        self.planner = QueryPlanner(self.llm, max_queries=self.settings.max_sub_queries)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()  # one pool, however many searches start it
        self._running = 0  # searches in this retriever now (_searching; under _pool_lock)
        # what is derived from a namespace's records (_kept): (namespace, what) -> the
        # value, at the namespace's write generation when read
        self._derived: KeptValues[tuple[Any, ...], Any] = KeptValues(DERIVED)

    @contextmanager
    def _searching(self, ns: str) -> Iterator[bool]:
        """Counts the searches running in this retriever; gives whether this one is
        the only one (it started when no other was running). Within, the write
        generation of ``ns`` is read once (where it is the database's, read by every
        value the search keeps: MemoryRepository.pinned)."""
        with self._pool_lock:
            self._running += 1
            alone = self._running == 1
        try:
            with self.stores.records.memories.pinned(ns):
                yield alone
        finally:
            with self._pool_lock:
                self._running -= 1

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        self.multilingual.close()

    def __enter__(self) -> HybridRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- planning ---------------------------------------------------------------------
    def plan(self, query: str, *, reference_time: datetime | None = None,
             enable_planning: bool | None = None) -> RetrievalPlan:
        """Analyse ``query`` and choose the queries to run (see the module docstring)."""
        validate_query(query, self.stores.limits)
        return self._plan(query, reference_time=reference_time,
                          enable_planning=enable_planning)

    def _plan(self, query: str, *, reference_time: datetime | None,
              enable_planning: bool | None) -> RetrievalPlan:
        """:meth:`plan` of a query already checked (``retrieve`` checks it once)."""
        if reference_time is not None and (not isinstance(reference_time, datetime)
                                           or reference_time.tzinfo is None):
            raise InvalidInputError("reference_time must be a timezone-aware datetime")
        reference = reference_time or self._clock()
        # bounded names, keywords and times: one query's work stays bounded (bounds.py)
        analysis = bounded_analysis(analyze_query(query, reference, extractor=self.extractor))
        planning = self.settings.enable_planning if enable_planning is None else enable_planning
        if not planning:
            return RetrievalPlan(analysis, None, (query,))
        info = self.planner.analyze_information_requirements(query) if self.llm else None
        if info is not None:
            queries = self.planner.generate_targeted_queries(query, info)
        else:
            queries = decompose(query, max_parts=self.settings.max_sub_queries)
        return RetrievalPlan(analysis, info, tuple(queries))

    # --- search -----------------------------------------------------------------------
    @telemetry.traced("search_memory", count=len, query_arg=1, top_k_arg=2)
    def retrieve(
        self,
        query: str,
        top_k: int = 10,
        *,
        namespace: str,
        memory_types: Sequence[MemoryType | str] | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        time_range: TimeRange | None = None,
        min_importance: float | None = None,
        reference_time: datetime | None = None,
        enable_planning: bool | None = None,
        enable_reflection: bool | None = None,
        views: Iterable[str] | None = None,
        view_weights: Mapping[str, float] | None = None,
        neighbor_weight: float | None = None,
        recipe: str | SearchRecipe | None = None,
        touch: bool = True,
        as_of: datetime | None = None,
        min_score: float | None = None,
    ) -> list[SearchHit]:
        """The ``top_k`` best memories of ``namespace`` for ``query``, best first.

        ``recipe`` names a :mod:`~hello_memory.retrieval.recipes` preset (default
        ``hybrid``; ``per-type`` and the view ablations are for comparisons);
        ``views`` restricts the views run (default: the recipe's, all for hybrid);
        ``view_weights`` and ``neighbor_weight`` override the settings for this call;
        ``reference_time`` resolves relative time expressions ("last week"; default
        now); ``enable_planning`` / ``enable_reflection`` override the settings for
        this call (both only matter with an LLM). ``touch`` records the access on the
        returned memories, as :meth:`MemoryManager.search` does. ``as_of`` searches
        the memories true at that time (superseded since or not; see
        :class:`~hello_memory.stores.records.ItemFilter`), default: those still true.
        ``min_score`` keeps the hits scored at least that (scores are in [0, 1]).
        """
        ns = require_namespace(namespace)
        asked, min_importance = _check_arguments(query, top_k, memory_types, min_importance,
                                                 min_score, user_id, agent_id, session_id,
                                                 self.stores.limits)
        chosen = recipe_named(recipe)
        types = self._types(asked)
        active = self._views(views if views is not None else chosen.views)
        weights = {**self._weights(), **(view_weights or {})}
        context_weight = self._context_weight(neighbor_weight, chosen)
        flt = self._filter(types, user_id, agent_id, session_id, time_range, min_importance,
                           as_of)
        if chosen.engine == "per_type":
            hits = self._per_type(ns, query, types, top_k, flt)
        else:
            with self._searching(ns) as alone:
                hits = self._hybrid(ns, query, types, top_k, flt, active, weights,
                                    context_weight, reference_time, enable_planning,
                                    enable_reflection, alone=alone)
        if min_score:  # hits are sorted by score: the floor only shortens the list
            hits = [h for h in hits if h.score >= min_score]
        if touch:
            self._touch(ns, hits)
        return hits

    def _context_weight(self, neighbor_weight: float | None, chosen: SearchRecipe) -> float:
        """The share of a session neighbour's score a memory gets (``retrieve``'s part):
        the call's, else the recipe's, else the settings' ``neighbor_weight``."""
        if neighbor_weight is None:
            neighbor_weight = chosen.neighbor_weight
        context_weight = (self.settings.neighbor_weight if neighbor_weight is None
                          else float(neighbor_weight))
        if not 0 <= context_weight <= 1:
            raise InvalidInputError(f"neighbor_weight must be in [0, 1], got {neighbor_weight!r}")
        return context_weight

    def explain(self, hit: SearchHit) -> str:
        """Why ``hit`` ranked where it did: each view's rank and score, the neighbour
        context and the scoring profile's parts."""
        return explain(hit)

    # --- the two engines ----------------------------------------------------------------
    def _hybrid(self, ns: str, query: str, types: Sequence[MemoryType], top_k: int,
                flt: ItemFilter, active: Sequence[str],
                weights: Mapping[str, float], context_weight: float,
                reference_time: datetime | None, enable_planning: bool | None,
                enable_reflection: bool | None, *, alone: bool = True) -> list[SearchHit]:
        plan = self._plan(query, reference_time=reference_time, enable_planning=enable_planning)
        plan = self.about_whom(ns, plan)
        state = _Round(flt=flt, dense_blind=self._dense_blind(query),
                       generation=self._generation(ns))
        if state.dense_blind:
            weights = {**weights, "semantic": weights.get("semantic", 1.0) * CJK_SEMANTIC_WEIGHT}
        # the chosen views that serve a memory type searched (registry.served_types)
        registry = registered_views()
        stored = [v for v in active if set(served_types(registry[v])) & set(types)]
        multilingual = bool(stored and "semantic" in active and self.settings.multilingual_view
                            and self.use_embeddings)
        # its question vector, encoded beside the query embedding where the view will
        # run, while no other search runs: then a core is free for it (docs/PERFORMANCE.md)
        ahead = self._multilingual_ahead(ns, query) if multilingual and alone else None
        req = self._request(ns, query, plan.queries, plan.analysis, flt, stored)
        if stored:
            self._run_views(ns, req, stored, state)
        # then the views that run beside the chosen ones (working and perceptual memory)
        self._run_beside(req, types, active, state)
        if multilingual:
            self._multilingual_view(ns, query, state, ahead)
            if "symbolic" in active and state.analysis is not None:
                state.unread = self._unread(ns, state, state.analysis)
                if state.unread:  # the soft constraints again, on the widened pool
                    state.results["symbolic"] = self._symbolic(state, state.analysis)
            # the only reader of meaning MiniLM leaves when the question is Chinese
            weights = {"multilingual": MULTILINGUAL_WEIGHT * (2.0 if state.dense_blind else 1.0),
                       **weights}
        fused = self._fuse(state, weights)
        if "multilingual" in state.results:
            self._add_votes(self._language_votes(query, state, weights), fused)
        reflection = self.settings.enable_reflection if enable_reflection is None \
            else enable_reflection
        if reflection and self.llm is not None and stored and "semantic" in active:
            fused = self._reflect(ns, query, plan, state, weights, fused, top_k)
        hits = self._final(ns, state, fused, context_weight, flt, top_k)[:top_k]
        # the hits leave the search: their records become the caller's own
        shared = [h.item for h in hits if h.id in state.shared]
        if not shared:
            return hits
        own = iter(self.stores.records.memories.released(ns, shared))
        return [replace(h, item=next(own)) if h.id in state.shared else h for h in hits]

    def _per_type(self, ns: str, query: str, types: Sequence[MemoryType], top_k: int,
                  flt: ItemFilter) -> list[SearchHit]:
        """The ``per-type`` recipe: each memory type ranks its own candidates with its
        scoring profile on the raw cosine (working memory: TF-IDF), merged by final
        score. Kept for ablations; the hybrid engine replaced it everywhere."""
        working, episodic, semantic = self.parts.working, self.parts.episodic, self.parts.semantic
        if working is None or episodic is None or semantic is None:
            raise InvalidInputError("the per-type recipe needs the memory types (a "
                                    "MemoryManager or SearchParts), not bare stores")
        hits: list[SearchHit] = []
        if MemoryType.WORKING in types:
            hits += working.retrieve(ns, query, top_k=top_k,
                                     min_importance=flt.min_importance,
                                     time_range=(flt.since, flt.until), user_id=flt.user_id,
                                     session_id=flt.session_id)
        stored = [t for t in types if t in STORED_TYPES]
        if stored and self.use_embeddings:
            qv = self.stores.embedder.embed_query(query)
            if MemoryType.EPISODIC in stored:
                hits += episodic.retrieve(ns, query, top_k=top_k, flt=flt, query_vector=qv)
            if MemoryType.SEMANTIC in stored:
                hits += semantic.retrieve(ns, query, top_k=top_k, flt=flt, query_vector=qv)
        if MemoryType.PERCEPTUAL in types and self.parts.perceptual is not None:
            hits += media_hits(self.parts.perceptual, ns, query, top_k, flt)
        hits.sort(key=lambda h: (-h.score, -h.item.event_time.timestamp()))
        return hits[:top_k]

    def _touch(self, ns: str, hits: Sequence[SearchHit]) -> None:
        """Record the access on the returned memories (working memory's own too)."""
        stored = [h.id for h in hits if h.memory_type != MemoryType.WORKING]
        if stored:
            self.stores.records.memories.record_access(ns, stored)
        if self.parts.working is not None:
            self.parts.working.record_access(ns, [h.id for h in hits
                                                  if h.memory_type == MemoryType.WORKING])

    # --- internals --------------------------------------------------------------------
    def _types(self, memory_types: Sequence[MemoryType] | None) -> list[MemoryType]:
        """The types searched: those asked for (checked by ``retrieve``), else all."""
        perceptual = self.parts.perceptual is not None
        if not memory_types:
            return list(SEARCHED_TYPES) + ([MemoryType.PERCEPTUAL] if perceptual else [])
        out: list[MemoryType] = []
        for mt in memory_types:
            if mt == MemoryType.PERCEPTUAL and not perceptual:
                raise InvalidInputError("perceptual memory is not configured on this "
                                        "manager (perceptual.enabled)")
            out.append(mt)
        return out

    @staticmethod
    def _views(views: Iterable[str] | None) -> tuple[str, ...]:
        """The views to run: every registered one (retrieval/registry.py) by default."""
        names = view_names()
        if views is None:
            return names
        chosen = tuple(dict.fromkeys(views))
        unknown = set(chosen) - set(names)
        if unknown or not chosen:
            raise InvalidInputError(f"views must be a non-empty subset of {list(names)}, "
                                    f"got {list(chosen)}")
        return chosen

    def _weights(self) -> dict[str, float]:
        """Each registered view's own weight, then ``retrieval.view_weights``."""
        return {**{n: float(v.weight) for n, v in registered_views().items()},
                **self.settings.view_weights}

    @staticmethod
    def _filter(types: Sequence[MemoryType], user_id: str | None, agent_id: str | None,
                session_id: str | None, time_range: TimeRange | None,
                min_importance: float | None, as_of: datetime | None = None) -> ItemFilter:
        if as_of is not None and (not isinstance(as_of, datetime) or as_of.tzinfo is None):
            raise InvalidInputError("as_of must be a timezone-aware datetime")
        since, until = validate_time_range(time_range)
        stored = tuple(t for t in types if t in STORED_TYPES)
        return ItemFilter(memory_types=stored or None, status=MemoryStatus.ACTIVE,
                          user_id=user_id, agent_id=agent_id, session_id=session_id,
                          since=since, until=until, min_importance=min_importance,
                          as_of=as_of)

    def _executor(self) -> ThreadPoolExecutor:
        """The views' pool, made by the first search that needs it (under a lock: two
        searches starting at once made two pools, and one was never shut down)."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hm-view")
            return self._pool

    def _submit(self, fn: Callable[[], ViewResult], parallel: bool) -> Callable[[], ViewResult]:
        if not parallel:
            result = fn()
            return lambda: result
        return self._executor().submit(fn).result

    def _generation(self, ns: str, *, graph: bool = False) -> Any:
        """The namespace's record write generation (with ``graph``, paired with its
        graph's), or None where either store gives none (a graph server: other
        processes write it; MemoryRepository.generation, stores/records/generation.py)."""
        generation: Any = self.stores.records.memories.generation(ns)
        if generation is not None and graph:
            of_graph = getattr(self.stores.graph, "generation", None)
            linked = of_graph(ns) if of_graph is not None else None
            generation = None if linked is None else (generation, linked)
        return generation

    def _kept(self, ns: str, key: tuple[Any, ...], read: Callable[[], T], *,
              graph: bool = False, fallback: Callable[[], Any] | None = None) -> T:
        """``read()``, kept per retriever while the write generation of ``ns`` is the
        one it was read at (MemoryRepository.generation, and with ``graph`` the graph
        store's too: only where both give one). Elsewhere ``fallback()`` marks
        the value instead (the namespace's totals: a write that changes them reads it
        again, an edit that does not is seen at the next such write), and without one
        it reads every time. The mark is taken before reading, so a write committed
        during the read makes the next call read again. At most DERIVED values are
        kept, the least recently used out."""
        generation = self._generation(ns, graph=graph)
        if generation is None:
            if fallback is None:
                return read()
            generation = ("fallback", fallback())
        value: T = self._derived.get_or_read((ns, *key), generation, read)
        return value

    def _kept_each(self, ns: str, kind: str, keys: Sequence[K],
                   read: Callable[[Sequence[K]], Mapping[K, T]], *, since: Any = None
                   ) -> dict[K, T]:
        """:meth:`_kept` for many values at once, each kept on its own under ``(kind,
        key)``: those of ``keys`` not kept at the namespace's write generation are read
        in one call, ``read(missing)`` (a key it leaves out is not kept). Where the
        generation is unknown, ``read(keys)`` every time. ``since``: the generation of
        the records ``read`` derives from (a search's, _Round.generation); after a
        write since then nothing is kept (a value read from an older record must not
        be kept as the new generation's)."""
        generation = self._generation(ns)
        if generation is None or since is not None and since != generation:
            return dict(read(keys))
        kept = self._derived.get([(ns, kind, key) for key in keys], generation)
        out = {key: kept[(ns, kind, key)] for key in keys if (ns, kind, key) in kept}
        missing = [key for key in keys if key not in out]
        if missing:
            got = read(missing)
            self._derived.put({(ns, kind, key): got[key] for key in missing if key in got},
                              generation)
            out.update(got)
        return out

    def _reflect(self, ns: str, query: str, plan: RetrievalPlan, state: _Round,
                 weights: Mapping[str, float],
                 fused: dict[str, tuple[float, dict[str, Any]]], top_k: int
                 ) -> dict[str, tuple[float, dict[str, Any]]]:
        info = plan.information or InformationPlan()
        asked = set(plan.queries)
        for _ in range(self.settings.max_reflection_rounds):
            top = sorted(fused, key=lambda m: -fused[m][0])[: max(top_k, 10)]
            contents = [state.items[m].content for m in top]
            verdict = self.planner.analyze_completeness(query, info, contents)
            if verdict.assessment != "incomplete":
                break
            gaps = [q for q in self.planner.generate_missing_info_queries(query, verdict, contents)
                    if q not in asked]
            if not gaps:
                break
            asked.update(gaps)
            req = ViewRequest(ns, gaps, [self.stores.embedder.embed_query(q) for q in gaps],
                              plan.analysis, state.flt, self.settings.candidates,
                              self.settings.min_similarity, question=query, parts=self.parts)
            new = list(registered_views()["semantic"].rank(self.stores, req))
            for memory_id, _ in new:
                state.found_by.setdefault(memory_id, []).extend(
                    g for g in gaps if g not in state.found_by[memory_id])
            merged = dict(state.results.get("semantic", []))
            for memory_id, s in new:
                merged[memory_id] = max(s, merged.get(memory_id, s))
            state.results["semantic"] = sorted(merged.items(), key=lambda kv: -kv[1])
            self._load_items(ns, state)
            fused = self._fuse(state, weights)
        return fused
