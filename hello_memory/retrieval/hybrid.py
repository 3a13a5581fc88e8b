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
   records of the candidate pool; working memory joins as its own view when the
   retriever wraps a :class:`~hello_memory.memory.manager.MemoryManager`;
3. **fusion** - weighted reciprocal-rank fusion keeping each view's rank and score;
   optionally a share of a memory's fused score flows to its neighbours in the same
   session (``neighbor_weight``), for answers spread over consecutive turns;
4. **reflection** - with an LLM and ``enable_reflection``: a completeness check and gap
   queries (semantic view only), at most ``max_reflection_rounds`` rounds;
5. **profiles** - each memory type's scoring profile applied to the normalised fused
   score (:mod:`hello_memory.memory.scoring`), which orders the final list.

Without an LLM, steps 1 and 4 are deterministic and the whole search is LLM-free: this
is the project's default LLM-free search (docs/RETRIEVAL.md).
"""

from __future__ import annotations

import bisect
import copy
import logging
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from hello_memory import telemetry
from hello_memory.config import RetrievalSettings
from hello_memory.embedding.presets import preset_named
from hello_memory.errors import InvalidInputError
from hello_memory.llm.base import LLMClient
from hello_memory.memory.episodic import matches, payload_filters
from hello_memory.memory.scoring import PROFILES, ScoringProfile, SearchHit, score
from hello_memory.retrieval.bounds import bounded_analysis
from hello_memory.retrieval.fusion import ViewResult, explain, weighted_rrf
from hello_memory.retrieval.multilingual import MultilingualReader
from hello_memory.retrieval.planning import (
    InformationPlan,
    QueryAnalysis,
    QueryPlanner,
    analyze_query,
    decompose,
    first_person_words,
)
from hello_memory.retrieval.recipes import SearchRecipe, recipe_named
from hello_memory.retrieval.registry import RESERVED, registered_views, view_names
from hello_memory.retrieval.views import (
    ViewRequest,
    about_named,
    about_someone_else,
    symbolic_pool_view,
    without_times,
)
from hello_memory.stores.bundle import Stores
from hello_memory.stores.records import ItemFilter
from hello_memory.stores.vector.base import calls_in_turn
from hello_memory.text import tokenize
from hello_memory.text.attributes import (
    asked_attributes,
    asks_advice,
    attributes_of,
    single_valued,
)
from hello_memory.text.entities import EntityExtractor, RuleExtractor
from hello_memory.text.people import (
    ROLE_WORDS,
    SELF_ENTITY,
    asked_roles,
    canonical_role,
    role_key,
    without_title,
)
from hello_memory.text.timeparse import says_when as says_when_text
from hello_memory.types import GraphHit, MemoryItem, MemoryStatus, MemoryType, utcnow
from hello_memory.validation import (
    check_text,
    require_namespace,
    validate_query,
    validate_time_range,
    validate_top_k,
)

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["HybridRetriever", "RetrievalPlan"]

log = logging.getLogger(__name__)

TimeRange = tuple[datetime | None, datetime | None]
SEARCHED_TYPES = (MemoryType.WORKING, MemoryType.EPISODIC, MemoryType.SEMANTIC)
# Types whose vectors live in the text collection the four views search; working and
# perceptual memory vote through views of their own.
TEXT_COLLECTION_TYPES = (MemoryType.EPISODIC, MemoryType.SEMANTIC)
OWN_VIEWS = RESERVED  # (retrieval/registry.py: no registered view takes these names)
# The multilingual view's weight in the fusion unless view_weights names one, and the
# largest namespace it reads whole (retrieval/multilingual.py).
MULTILINGUAL_WEIGHT = 1.0
MULTILINGUAL_SCAN = 2000
# The retriever's own voters whose scores are graded evidence: equal scores share a
# rank in the fusion, as in every registered view that says so (shared_ranks; the
# symbolic view's score is a count of constraints met, ordered within a count by the
# pool's relevance, so its order is kept as it is).
SHARED_RANK_OWN_VIEWS = ("working", "perceptual")
# What an event outside the time range a question names keeps of its score (once the
# range holds anything): "what did Tom do in June?" is answered by June's events.
TIME_MISS_FACTOR = 0.5
# ... and what a standing fact (a semantic memory: a habit, "every other Friday we have
# pizza night") keeps there: it is no event of the time asked about at all ("what did I
# do last Saturday?"; issue 26, failure class 3). Events keep TIME_MISS_FACTOR: on the
# LoCoMo dev split a stronger factor for every memory cost 0.006 recall@10.
STANDING_TIME_MISS_FACTOR = 0.3
# What a memory plainly about someone else keeps of its score when the question asks
# about a person ("who is my manager?" is not answered by "Anna's manager is Priya").
SUBJECT_MISS_FACTOR = 0.5
# What a memory that mentions no time keeps of its score when the question asks when
# and other candidates do mention one (measured on the LoCoMo dev split, BENCHMARKS.md).
WHEN_MISS_FACTOR = 0.5
# What a memory that does not state the attribute a question asks for keeps of its
# score, once a candidate about the question's subject states it ("what car do I
# drive?": "Sold the Yaris and picked up a Zoe" over "My birthday is 3 March";
# text/attributes.py, issue 26).
ATTRIBUTE_MISS_FACTOR = 0.5
# How plainly the question is answered at all (HybridRetriever._evidence): the best
# candidate's own match, from 0 (nothing plainly related) to 1. It scales every hit of
# the question alike, so it never reorders them (a per-hit factor cost 0.011 recall@10
# on the LoCoMo dev split), and it is what lets retrieval.min_score tell a question the
# memories answer from one they do not (issue 26, scores a person can read). Cosines
# are calibrated from EVIDENCE_COSINE[0] (nothing) to [1] (clear); a memory inside the
# time a question names counts TIME_EVIDENCE at least, and one stating the attribute
# the question asks for, about its subject ("what car do I drive?": "picked up a
# second-hand Zoe"), ATTRIBUTE_EVIDENCE.
TIME_EVIDENCE = 0.75
ATTRIBUTE_EVIDENCE = 0.75
# Text-to-image and text-to-audio cosines run lower than text-to-text ones (CLIP puts a
# matching caption near 0.3): nothing at 0.1, clear at 0.3.
PERCEPTUAL_COSINE = (0.1, 0.3)
EVIDENCE_COSINE = (0.15, 0.55)
# An English-only embedder (all-MiniLM-L6-v2) knows little about Chinese: for a question
# mostly in CJK characters its dense view weighs this much in the fusion, and its cosine
# is no evidence (issue 26: the full search must not recall less than BM25 alone on
# Chinese text; BENCHMARKS.md, Chinese everyday set).
CJK_SEMANTIC_WEIGHT = 0.25
CJK_SHARE = 0.3
# How much the multilingual view's rank counts in the place of each view that cannot
# read a cross-language pair, and how much of its weight it keeps on a pair of English
# texts (HybridRetriever._language_votes; issue 26, BENCHMARKS.md).
CROSS_LANGUAGE_STAND_IN = 0.5
ENGLISH_PAIR_WEIGHT = 0.5


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


# "my old team lead", "my former boss", "my manager's predecessor", "我以前的老板": a
# role asked about in the past reaches every person it linked to, replaced or not
_PAST_ROLE = re.compile(r"\b(?:old|former|previous|ex|predecessor)\b|ex-|以前|之前|原来|前任",
                        re.I)
# what follows a role that owns the thing asked about: "my boss's dog", "我老板的狗"
_POSSESSIVE = re.compile(r"['’]s\b|的")


def _cjk_heavy(text: str) -> bool:
    """Whether at least CJK_SHARE of the text's letters and digits are CJK characters."""
    letters = [ch for ch in text if ch.isalnum()]
    cjk = sum(1 for ch in letters if "\u3400" <= ch <= "\u9fff")
    return bool(letters) and cjk / len(letters) >= CJK_SHARE


# One cache of memory texts' terms per lexical encoder, held weakly: a closed store's
# encoder (and its cache) can go (issue 27: an lru_cache keyed on the encoder kept
# every encoder a process ever searched with).
_TERM_CACHES: weakref.WeakKeyDictionary[Any, Callable[[str], frozenset[str]]] = (
    weakref.WeakKeyDictionary())
_TERM_CACHES_LOCK = threading.Lock()


def _memory_terms(lexical: Any, text: str) -> frozenset[str]:
    """The BM25 terms of a memory's text (``lexical.terms``), cached per text: the same
    memories come back search after search, and tokenising them again was a share of
    every search's cost (issue 27, docs/PERFORMANCE.md "Other fast paths")."""
    with _TERM_CACHES_LOCK:
        cached = _TERM_CACHES.get(lexical)
        if cached is None:
            cached = _TERM_CACHES[lexical] = _terms_of(weakref.ref(lexical))
    return cached(text)


def _terms_of(encoder: weakref.ref[Any]) -> Callable[[str], frozenset[str]]:
    """A cache of the terms of texts for one encoder, held weakly: the cache must not
    keep its encoder alive (it is reached through _TERM_CACHES[encoder] only)."""

    @lru_cache(maxsize=8192)
    def terms(text: str) -> frozenset[str]:
        live = encoder()
        assert live is not None
        return frozenset(live.terms(text))

    return terms


# What a retriever keeps of a namespace's records for the multilingual view (its
# totals, the ids of its listings), each while the namespace's write generation is the
# one it was read at (MemoryRepository.generation), and the people the graph links to
# a name (_linked_people): at most this many entries.
DERIVED = 256
T = TypeVar("T")


def _own(item: MemoryItem) -> MemoryItem:
    """A copy of a shared record (the record cache's) the caller may change."""
    return replace(item, metadata=copy.deepcopy(item.metadata))


# Words that ask for a person without asking anything about them.
_ONLY_ASKING = frozenset(["who", "whom", "whose", "what", "whats", "name", "names",
                          "called", "call", "tell", "谁", "叫", "什么", "名字", "是"])


def _asks_about(question: str, names: Sequence[str]) -> bool:
    """Whether ``question`` (with ``names`` put in) asks something about them beyond
    who they are."""
    name_words = {t for n in names for t in tokenize(n)}
    return any(t not in _ONLY_ASKING and t not in name_words
               for t in tokenize(question, remove_stopwords=True))


class HybridRetriever:
    """Hybrid retrieval over a :class:`MemoryManager` (or bare :class:`Stores`).

    Args:
        source: the manager (working memory, its extractor and clock are used) or stores.
        llm: an optional chat model for planning and reflection.
        settings: view weights, rrf k, candidate depth, switches (``RetrievalSettings``).
        extractor: entity extraction for query analysis (default: the manager's, else
            rules).
        use_embeddings: False runs without the dense view (keyword fallback); also the
            case when the stores carry no embedder.
        profiles: the memory types' scoring profiles, applied after fusion.
    """

    def __init__(
        self,
        source: MemoryManager | Stores,
        *,
        llm: LLMClient | None = None,
        settings: RetrievalSettings | None = None,
        extractor: EntityExtractor | None = None,
        use_embeddings: bool = True,
        profiles: Mapping[MemoryType, ScoringProfile] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if isinstance(source, Stores):
            self.manager: MemoryManager | None = None
            self.stores = source
        else:
            self.manager = source
            self.stores = source.stores
        # A manager opened with an LLM configured lends it; without one, every LLM
        # step (planning, reflection) stays off.
        self.llm = llm if llm is not None else getattr(self.manager, "llm", None)
        self.settings = settings or RetrievalSettings()
        names = view_names()
        unknown = set(self.settings.view_weights) - set(names) - set(OWN_VIEWS)
        if unknown:
            raise InvalidInputError(f"unknown view(s) {sorted(unknown)} in view_weights; "
                                    f"use {list(names + OWN_VIEWS)}")
        self.extractor = extractor or (self.manager.extractor if self.manager else RuleExtractor())
        self.use_embeddings = use_embeddings and getattr(self.stores, "embedder", None) is not None
        self.profiles = dict(profiles or PROFILES)
        self.multilingual = MultilingualReader()
        self._clock = clock or utcnow
        # The planner uses the same LLM as every other step: the caller's, else the
        # manager's (a configured LLM plans; docs/RETRIEVAL.md).
        self.planner = QueryPlanner(self.llm, max_queries=self.settings.max_sub_queries)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()  # one pool, however many searches start it
        # what is derived from a namespace's records (_kept): (namespace, what) ->
        # (the namespace's write generation when read, the value)
        self._derived_lock = threading.Lock()
        self._derived: OrderedDict[tuple[Any, ...], tuple[Any, Any]] = OrderedDict()

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def __enter__(self) -> HybridRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- planning ---------------------------------------------------------------------
    def plan(self, query: str, *, reference_time: datetime | None = None,
             enable_planning: bool | None = None) -> RetrievalPlan:
        """Analyse ``query`` and choose the queries to run (see the module docstring)."""
        validate_query(query)
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
        if min_score is not None and (isinstance(min_score, bool)
                                      or not isinstance(min_score, (int, float))
                                      or not 0 <= min_score <= 1):
            raise InvalidInputError(f"min_score must be a number in [0, 1], got {min_score!r}")
        validate_query(query)
        validate_top_k(top_k)
        for name, value in (("user_id", user_id), ("agent_id", agent_id),
                            ("session_id", session_id)):
            if isinstance(value, str):
                check_text(name, value)
        chosen = recipe_named(recipe)
        types = self._types(memory_types)
        active = self._views(views if views is not None else chosen.views)
        weights = {**self._weights(), **(view_weights or {})}
        if neighbor_weight is None:
            neighbor_weight = chosen.neighbor_weight
        context_weight = (self.settings.neighbor_weight if neighbor_weight is None
                          else float(neighbor_weight))
        if not 0 <= context_weight <= 1:
            raise InvalidInputError(f"neighbor_weight must be in [0, 1], got {neighbor_weight!r}")
        flt = self._filter(types, user_id, agent_id, session_id, time_range, min_importance,
                           as_of)
        if chosen.engine == "per_type":
            hits = self._per_type(ns, query, types, top_k, flt, time_range)
        else:
            hits = self._hybrid(ns, query, types, top_k, flt, time_range, active, weights,
                                context_weight, reference_time, enable_planning,
                                enable_reflection)
        if min_score:  # hits are sorted by score: the floor only shortens the list
            hits = [h for h in hits if h.score >= min_score]
        if touch:
            self._touch(ns, hits)
        return hits


    def explain(self, hit: SearchHit) -> str:
        """Why ``hit`` ranked where it did: each view's rank and score, the neighbour
        context and the scoring profile's parts."""
        return explain(hit)

    # --- the two engines ----------------------------------------------------------------
    def _hybrid(self, ns: str, query: str, types: Sequence[MemoryType], top_k: int,
                flt: ItemFilter, time_range: TimeRange | None, active: Sequence[str],
                weights: Mapping[str, float], context_weight: float,
                reference_time: datetime | None, enable_planning: bool | None,
                enable_reflection: bool | None) -> list[SearchHit]:
        plan = self.plan(query, reference_time=reference_time, enable_planning=enable_planning)
        plan = self.about_whom(ns, plan)
        state = _Round(flt=flt, dense_blind=self._dense_blind(query))
        if state.dense_blind:
            weights = {**weights, "semantic": weights.get("semantic", 1.0) * CJK_SEMANTIC_WEIGHT}
        stored = [t for t in types if t in TEXT_COLLECTION_TYPES]
        filters = payload_filters(flt) if stored else {}
        if stored:
            self._run_views(ns, plan.queries, plan.analysis, filters, active, state)
        # Working memory has its own (TF-IDF + keyword) search: it votes as one more view
        # whenever a similarity view runs.
        if (MemoryType.WORKING in types and self.manager is not None
                and {"semantic", "lexical"} & set(active)):
            self._working_view(ns, query, flt, time_range, state)
        # Images and audio are found through CLIP / CLAP text towers: one more dense view.
        if MemoryType.PERCEPTUAL in types and "semantic" in active:
            self._perceptual_view(ns, query, flt, state)
        if stored and "semantic" in active and self.settings.multilingual_view \
                and self.use_embeddings:
            self._multilingual_view(ns, query, state)
            if "symbolic" in active and state.analysis is not None:
                state.unread = self._unread(state, state.analysis)
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
            fused = self._reflect(ns, query, plan, filters, state, weights, fused, top_k)
        hits = self._final(ns, state, fused, context_weight, flt, top_k)[:top_k]
        # the hits leave the search: their records become the caller's own
        return [replace(h, item=_own(h.item)) if h.id in state.shared else h for h in hits]

    def _linked_people(self, ns: str, node_names: Sequence[str], *,
                       current: bool = True) -> list[str]:
        """The people one hop from the graph nodes named ``node_names``: read once per
        namespace while neither its records nor its graph change (``_kept``); every
        search asks for the user's names, whatever the question (issue 27, item 2)."""
        return list(self._kept(
            ns, ("linked", tuple(node_names), current),
            lambda: self._people_one_hop(ns, node_names, current=current), graph=True))

    def _people_one_hop(self, ns: str, node_names: Sequence[str], *,
                        current: bool = True) -> list[str]:
        start = self.stores.graph.find_entities(ns, list(node_names))
        if not start:
            return []
        reached = self.stores.graph.neighbors(ns, [e.id for e in start], max_hops=1, limit=50)
        people = [h for h in reached if h.hops == 1 and h.type in ("person", "name")]
        if current and len(people) > 1:
            people = self._still_linked(ns, reached, people)
        return list(dict.fromkeys(h.name for h in people))

    def _still_linked(self, ns: str, reached: Sequence[GraphHit],
                      people: list[GraphHit]) -> list[GraphHit]:
        """Of several people a start node links to, those it still links to: a
        role's link was stated by the memories that mention both it and the person,
        and once every one of those is replaced ("from December I report to Ines
        instead of Tomasz"), so is the link. The graph keeps links as written
        (nothing is deleted: ``as_of`` shows the past); "my boss" asks about now, "my
        old team lead" (``_PAST_ROLE``) about them all. A link whose memories cannot
        be told stays; all stay when none would be left (a change in words the
        people rules do not link, "I've moved to Dr. Meijer's practice")."""
        stated = set().union(*(h.memory_ids for h in reached if h.hops == 0))
        linking = {id(h): h.memory_ids & stated for h in people}
        wanted = set().union(*linking.values())
        if not wanted:
            return people
        current = {i.id for i in self.stores.records.memories.get_items(ns, sorted(wanted))
                   if i.superseded_by is None and i.valid_to is None
                   and i.status == MemoryStatus.ACTIVE}
        kept = [h for h in people if not linking[id(h)] or linking[id(h)] & current]
        return kept or people

    def _roles_of(self, ns: str, persons: Sequence[str]) -> list[str]:
        """The user's roles for ``persons`` ("Qing" -> sister: "Lin Qing" is linked as
        the user's sister), from the role links the memories made
        (``MemoryManager.extract_links``); read once per namespace while neither its
        records nor its graph change (``_kept``, where the process holds them), else
        once per namespace and memory count."""
        people = self._kept(ns, ("roles",), lambda: self._role_map(ns), graph=True,
                            fallback=lambda: self.stores.records.memories.namespace_totals(ns))
        return list(dict.fromkeys(r for p in persons for part in {p, *p.split()}
                                  for r in sorted(people.get(part.casefold(), ()))))

    def _role_map(self, ns: str) -> dict[str, set[str]]:
        """Each name part of a person the user's role links reach -> those roles."""
        found = self.stores.graph.find_entities(
            ns, sorted({role_key(SELF_ENTITY, r) for r in set(ROLE_WORDS.values())}))
        people: dict[str, set[str]] = {}
        prefix = role_key(SELF_ENTITY, "")
        for node in found:
            role = node.name.casefold()[len(prefix):]
            for h in self.stores.graph.neighbors(ns, [node.id], max_hops=1, limit=20):
                if h.hops == 1 and h.type in ("person", "name"):
                    for part in {h.name, *h.name.split()}:
                        people.setdefault(part.casefold(), set()).add(role)
        return people

    def about_whom(self, ns: str, plan: RetrievalPlan) -> RetrievalPlan:
        """Who the question is about (text/people.py): the user's names for a
        first-person question, and the people its role words refer to ("my husband's
        birthday" -> Tom Berg). A question whose role words resolve is also asked with
        the names in their place ("When is Tom Berg's birthday?")."""
        analysis = plan.analysis
        update: dict[str, Any] = {}
        # The user's names: a first-person question is about them, and a question
        # about someone else is not answered by a memory about the user.
        update["self_names"] = self._linked_people(ns, [SELF_ENTITY])
        resolved: list[str] = []
        roles: list[str] = []
        spans: list[tuple[int, int]] = []
        unnamed: list[str] = []
        rewritten = analysis.query
        taken = len(rewritten) + 1
        for asked in sorted(asked_roles(analysis.query), key=lambda a: -a.span[0]):
            owners: list[str] = []
            current = [asked.owner]
            steps = 0
            for role in asked.chain:
                bare = [without_title(o) for o in current]
                keys = [role_key(o, role) for o in current]
                # "Lin Qing" is "Qing" too (a family name may come first)
                keys += [role_key(part, role) for o in bare if " " in o
                         for part in (o.split(" ", 1)[0], o.rsplit(" ", 1)[-1])]
                current = self._linked_people(ns, keys, current=not _PAST_ROLE.search(
                    analysis.query[asked.span[0]:asked.span[1] + 16]))
                if not current:
                    break
                # "my daughter's teacher" with no teacher known is still about the
                # daughter: the last people the chain reached.
                owners, steps = current, steps + 1
                roles.append(role)
            if not owners and asked.owner == SELF_ENTITY and len(asked.chain) == 1:
                # "妈妈喜欢什么花？" with no name known for mum is still about mum:
                # the role itself is the subject ("Mum loves gardenias" names it)
                unnamed.append(asked.chain[0])
            if owners:
                resolved += owners
                start, end = asked.span
                if _POSSESSIVE.match(analysis.query, end):
                    spans.append(asked.span)
                # Only a chain resolved to its end stands for the whole phrase, and
                # spans must not overlap an earlier replacement.
                if steps == len(asked.chain) and end <= taken:
                    rewritten = rewritten[:start] + " and ".join(owners) + rewritten[end:]
                    taken = start
        # and the other way round: a person the question names is also who the
        # user's role words mean ("What does Qing do?" is answered by "姐姐…当法务顾问"
        # and by "my sister works at ...", when Qing is the user's sister)
        known = self._roles_of(ns, analysis.persons) if analysis.persons else []
        known += unnamed
        if known:
            update["resolved_roles"] = list(dict.fromkeys([*analysis.resolved_roles, *known]))
        if resolved:
            update["resolved"] = list(dict.fromkeys(resolved))
            update["resolved_roles"] = list(dict.fromkeys([*roles, *known]))
            # "What is my boss's dog called?" asks about the boss: a "my" that only
            # owns a resolved role that owns what is asked does not make the question
            # about the user ("when is my dentist appointment?" stays the user's, and
            # so does "who is my manager?", which asks the link itself)
            if analysis.first_person and _asks_about(rewritten, update["resolved"]) and all(
                    any(a <= m.start() < b for a, b in spans)
                    for m in first_person_words(analysis.query)):
                update["first_person"] = False
            # A role word that found its person is that person, not a thing to look up.
            update["entities"] = [e for e in analysis.entities if canonical_role(e) not in roles]
        if not update:
            return plan
        queries = plan.queries
        # "Who is my manager?" asks for the link itself: only a question that asks
        # something about the person ("my husband's birthday") is asked again by name.
        if (resolved and rewritten not in queries and plan.queries[0] == analysis.query
                and _asks_about(rewritten, update["resolved"])):
            queries = (*queries, rewritten)
        return replace(plan, analysis=analysis.model_copy(update=update), queries=queries)

    def _per_type(self, ns: str, query: str, types: Sequence[MemoryType], top_k: int,
                  flt: ItemFilter, time_range: TimeRange | None) -> list[SearchHit]:
        """The ``per-type`` recipe: each memory type ranks its own candidates with its
        scoring profile on the raw cosine (working memory: TF-IDF), merged by final
        score. Kept for ablations; the hybrid engine replaced it everywhere."""
        manager = self.manager
        if manager is None:
            raise InvalidInputError("the per-type recipe needs a MemoryManager, not bare stores")
        hits: list[SearchHit] = []
        if MemoryType.WORKING in types:
            hits += manager.working.retrieve(ns, query, top_k=top_k,
                                           min_importance=flt.min_importance,
                                           time_range=time_range, user_id=flt.user_id,
                                           session_id=flt.session_id)
        stored = [t for t in types if t in TEXT_COLLECTION_TYPES]
        if stored and self.use_embeddings:
            qv = self.stores.embedder.embed_query(query)
            if MemoryType.EPISODIC in stored:
                hits += manager.episodic.retrieve(ns, query, top_k=top_k, flt=flt,
                                                  query_vector=qv)
            if MemoryType.SEMANTIC in stored:
                hits += manager.semantic.retrieve(ns, query, top_k=top_k, flt=flt,
                                                  query_vector=qv)
        if MemoryType.PERCEPTUAL in types and manager.has_perceptual:
            hits += self._media_hits(ns, query, top_k, flt)
        hits.sort(key=lambda h: (-h.score, -h.item.event_time.timestamp()))
        return hits[:top_k]

    def _touch(self, ns: str, hits: Sequence[SearchHit]) -> None:
        """Record the access on the returned memories (working memory's own too)."""
        stored = [h.id for h in hits if h.memory_type != MemoryType.WORKING]
        if stored:
            self.stores.records.memories.record_access(ns, stored)
        if self.manager is not None:
            self.manager.working.record_access(ns, [h.id for h in hits
                                                    if h.memory_type == MemoryType.WORKING])

    # --- internals --------------------------------------------------------------------
    def _types(self, memory_types: Sequence[MemoryType | str] | None) -> list[MemoryType]:
        perceptual = self.manager is not None and self.manager.has_perceptual
        if not memory_types:
            return list(SEARCHED_TYPES) + ([MemoryType.PERCEPTUAL] if perceptual else [])
        out: list[MemoryType] = []
        for t in memory_types:
            try:
                mt = MemoryType(t)
            except ValueError:
                raise InvalidInputError(f"unknown memory type {t!r}") from None
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
        if min_importance is not None and not 0 <= min_importance <= 1:
            raise InvalidInputError(f"min_importance must be in [0, 1], got {min_importance!r}")
        stored = tuple(t for t in types if t in TEXT_COLLECTION_TYPES)
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

    def _run_views(self, ns: str, queries: Sequence[str], analysis: QueryAnalysis,
                   filters: Mapping[str, Any], active: Sequence[str], state: _Round) -> None:
        registry = registered_views()
        vectors = None
        # the symbolic view runs on a pool the semantic view may be asked to fill
        if self.use_embeddings and ("symbolic" in active or any(
                registry[v].needs_vectors for v in active if v in registry)):
            vectors = [self.stores.embedder.embed_query(q) for q in queries]
        req = ViewRequest(ns, list(queries), vectors, analysis, filters,
                          self.settings.candidates, self.settings.min_similarity,
                          symbolic="symbolic" in active)
        jobs: dict[str, Callable[[], ViewResult]] = {}
        calls: dict[str, Callable[[], ViewResult]] = {
            name: (lambda view=view: view.rank(self.stores, req))  # type: ignore[misc]
            for name, view in registry.items()}
        runnable = [v for v in active if (vectors or not registry[v].needs_vectors)
                    and (v != "graph" or not self._graph_empty(ns))]
        # The symbolic soft constraints are checked on a candidate pool; run alone, the
        # symbolic view still needs one, from views that then get no vote.
        soft = bool(analysis.persons or analysis.first_person or analysis.resolved
                    or analysis.entities or analysis.locations)
        helpers = [v for v in ("semantic", "lexical") if "symbolic" in active and soft
                   and not {"semantic", "lexical"} & set(active) and (v != "semantic" or vectors)]
        # On a store whose calls run in turn and hold the GIL (the embedded Qdrant
        # Edge) threads only add hand-offs and contention: the views run here, one
        # after the other (issue 27, docs/PERFORMANCE.md); on a server they overlap.
        parallel = (self.settings.parallel and len(runnable) + len(helpers) > 1
                    and not calls_in_turn(self.stores.vectors))
        for view in [*runnable, *helpers]:
            # one span per view when tracing is on (docs/OBSERVABILITY.md)
            call = telemetry.wrap_for_thread(calls[view], f"hello_memory.view {view}",
                                             {"hello_memory.view.name": view})
            jobs[view] = self._submit(call, parallel)
        for view, result in jobs.items():
            state.results[view] = list(result())
            for memory_id, _ in state.results[view]:
                state.found_by.setdefault(memory_id, list(queries[:1]))
        self._load_items(ns, state)
        state.question = analysis
        if "symbolic" in active:
            state.analysis = analysis
            if analysis.time_ranges:
                state.in_time = {m for m, _ in state.results.get("symbolic", [])}
                state.asked_until = max(end for _, end in analysis.time_ranges)
            state.time_hits = state.results.get("symbolic", [])
            state.results["symbolic"] = self._symbolic(state, analysis)
        for view in helpers:
            del state.results[view]

    def _graph_empty(self, ns: str) -> bool:
        """Whether the graph of ``ns`` links no memory, so the graph view can find
        nothing (a store of conversation turns, which are episodic, feeds it none):
        read once per write generation of the records and the graph, where the process
        holds both (_kept); elsewhere the view runs and finds out itself (issue 27)."""
        if self._generation(ns, graph=True) is None:
            return False
        return self._kept(ns, ("graph-empty",),
                          lambda: self.stores.graph.stats(ns).mentions == 0, graph=True)

    def _load_items(self, ns: str, state: _Round) -> None:
        missing = [m for r in state.results.values() for m, _ in r if m not in state.items]
        missing = list(dict.fromkeys(missing))
        if missing:
            # read only here: from the record cache where the store keeps one
            for item in self._records_of(ns, missing, state):
                # The caller's filters (status, types, user, time...) checked on the
                # record: the graph view reads links that know no status, and a payload
                # may lag behind its record.
                if matches(item, state.flt):
                    state.items[item.id] = item
        # A vector whose record is gone (or lags behind a filter) is never returned.
        for view, ranked in state.results.items():
            state.results[view] = [(m, s) for m, s in ranked if m in state.items]

    def _records_of(self, ns: str, ids: Sequence[str], state: _Round) -> list[MemoryItem]:
        """The records of ``ids`` in ``ns``, shared (the record cache's, read only:
        ``_hybrid`` copies the hits it returns)."""
        items = self.stores.records.memories.get_items(ns, ids, shared=True)
        state.shared.update(i.id for i in items)
        return items

    def _generation(self, ns: str, *, graph: bool = False) -> Any:
        """The namespace's record write generation (with ``graph``, paired with its
        graph's), or None where either store gives none (other processes may write)."""
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
        store's too: only where the process holds them). Elsewhere ``fallback()`` marks
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
        full = (ns, *key)
        with self._derived_lock:
            kept = self._derived.get(full)
            if kept is not None:
                self._derived.move_to_end(full)
        if kept is not None and kept[0] == generation:
            value: T = kept[1]
            return value
        value = read()
        with self._derived_lock:
            self._derived[full] = (generation, value)
            self._derived.move_to_end(full)
            while len(self._derived) > DERIVED:
                self._derived.popitem(last=False)
        return value

    def _listing(self, ns: str, flt: ItemFilter) -> list[MemoryItem]:
        """The newest MULTILINGUAL_SCAN memories of ``ns`` matching ``flt`` (the
        multilingual view's small namespace): the ids kept while no write changes the
        namespace, the records from the record cache; read whole where neither is kept."""
        records = self.stores.records.memories
        if records.generation(ns) is None:
            return records.list_items(ns, flt, limit=MULTILINGUAL_SCAN, order="-event_time")
        ids = self._kept(ns, ("ids", flt), lambda: records.list_ids(
            ns, flt, limit=MULTILINGUAL_SCAN, order="-event_time"))
        return records.get_items(ns, ids, shared=True)

    def _symbolic(self, state: _Round, analysis: QueryAnalysis) -> list[tuple[str, float]]:
        """Time-constrained hits and soft-constraint matches in one ranking: by the
        number of constraints met, then by the pool's fused relevance so far."""
        in_time = dict(state.time_hits)
        base = weighted_rrf({v: r for v, r in state.results.items() if v != "symbolic"},
                            self._weights(), k=self.settings.rrf_k)
        order = {m: f for m, (f, _) in base.items()}
        pool = [state.items[m] for m in dict.fromkeys([*order, *in_time, *state.unread])
                if m in state.items]
        # "When ...?" is answered by a memory that says when (its text mentions a time).
        timed = (self.stores.records.memories.with_mentioned_times(pool[0].namespace,
                                                                    [i.id for i in pool])
                 if analysis.asks_time and pool else set())
        soft = dict(symbolic_pool_view(pool, order, analysis, timed))
        # in a fixed order (never a set's, which follows the process's hash seed): the
        # sort below keeps it among equals, and RRF ties often (ranks 1 + 2 = 2 + 1)
        met = {m: soft.get(m, 0.0) + (1.0 if m in in_time else 0.0)
               for m in dict.fromkeys([*soft, *in_time])}
        # The time a question names is a hard constraint: every memory inside it ranks
        # before the soft matches outside it ("what did I do last Saturday?" is
        # answered by Saturday's "Late Tram played their first gig tonight", whose
        # words share nothing with the question; issue 26).
        return sorted(met.items(), key=lambda kv: (kv[0] not in in_time, -kv[1],
                                                   -order.get(kv[0], 0.0)))

    def _unread(self, state: _Round, analysis: QueryAnalysis) -> list[str]:
        """Memories read for the search that no view of the question's language could
        read, and that state a single-valued attribute the question asks for: in a
        small namespace with Chinese text the multilingual view reads every memory,
        and "姐姐…现在在一家基金会当法务顾问" meets "what does Qing do for work?" on its
        subject and attribute whatever its rank in any reading of meaning, so it joins
        the symbolic view's pool (issue 26). Tastes and fears are many at once and say
        too little to join."""
        if not state.dense_blind and not self._english_only():
            return []
        asked = {a for a in asked_attributes(analysis.query) if single_valued(a)}
        if not asked:
            return []
        asked_cjk = _cjk_heavy(analysis.query)
        seen = {m for v, ranked in state.results.items() if v != "multilingual"
                for m, _ in ranked}
        return [m for m, item in state.items.items()
                if m not in seen and item.memory_type in TEXT_COLLECTION_TYPES
                and _cjk_heavy(item.content[:2000]) != asked_cjk
                and asked & attributes_of(item.content[:2000])]

    def _working_view(self, ns: str, query: str, flt: ItemFilter,
                      time_range: TimeRange | None, state: _Round) -> None:
        assert self.manager is not None
        hits = self.manager.working.retrieve(ns, query, top_k=self.settings.candidates,
                                           min_importance=flt.min_importance,
                                           time_range=time_range, user_id=flt.user_id,
                                           session_id=flt.session_id)
        if hits:
            state.results["working"] = [(h.id, h.score) for h in hits]
            for h in hits:
                state.items[h.id] = h.item

    def _media_hits(self, ns: str, query: str, limit: int, flt: ItemFilter) -> list[SearchHit]:
        """Perceptual memory's hits under the caller's filters (session, agent, time,
        status hold for media too)."""
        assert self.manager is not None
        hits = self.manager.perceptual_search(ns, query, limit, flt.min_importance, flt.user_id)
        media_flt = replace(flt, memory_types=None)
        return [h for h in hits if matches(h.item, media_flt)]

    def _perceptual_view(self, ns: str, query: str, flt: ItemFilter, state: _Round) -> None:
        kept = self._media_hits(ns, query, self.settings.candidates, flt)
        if kept:
            state.results["perceptual"] = [(h.id, h.score) for h in kept]
            for h in kept:
                state.items[h.id] = h.item

    def _multilingual_view(self, ns: str, query: str, state: _Round) -> None:
        """The candidates read again by a multilingual model when the question or one of
        them holds CJK text (retrieval/multilingual.py; issue 26). In a namespace of at
        most MULTILINGUAL_SCAN memories every memory is read (an English question finds
        the Chinese note no other view could); in a larger one, the views' pool."""
        pool = {m: state.items[m] for r in state.results.values() for m, _ in r
                if m in state.items and state.items[m].memory_type in TEXT_COLLECTION_TYPES}
        records = self.stores.records.memories
        totals = self._kept(ns, ("totals",), lambda: records.namespace_totals(ns))
        small = totals[0] <= MULTILINGUAL_SCAN
        # an English question over a small namespace that holds Chinese memories: the
        # pool of the English views may hold none of them
        if not pool or not (self.multilingual.wanted(query, pool)
                            or (small and self._holds_cjk(ns, totals))):
            return
        listing: tuple[Any, list[str]] | None = None
        if small:
            listed: list[str] = []
            for item in self._listing(ns, state.flt):
                if item.memory_type in TEXT_COLLECTION_TYPES:
                    listed.append(item.id)
                    if item.id not in pool:
                        pool[item.id] = item
                        if item.id not in state.items:
                            state.items[item.id] = item
                            state.shared.add(item.id)
            generation = self._generation(ns)
            if generation is not None:  # the listing is the same while it holds
                listing = ((ns, state.flt, generation), listed)
        ranked = self.multilingual.rank(query, pool, limit=self.settings.candidates,
                                        listing=listing)
        if ranked:
            state.results["multilingual"] = ranked

    def _holds_cjk(self, ns: str, totals: tuple[int, int]) -> bool:
        """Whether the (small) namespace holds CJK text, read once per write generation
        where the store gives one (any write, an edit too, reads it again), else per
        namespace totals (_kept)."""
        return self._kept(ns, ("cjk",), lambda: self.stores.records.memories.holds_cjk(ns),
                          fallback=lambda: totals)

    def _fuse(self, state: _Round, weights: Mapping[str, float]
              ) -> dict[str, tuple[float, dict[str, Any]]]:
        shared = (*SHARED_RANK_OWN_VIEWS,
                  *(n for n, v in registered_views().items() if v.shared_ranks))
        fused = weighted_rrf(state.results, weights, k=self.settings.rrf_k,
                             shared_ranks=shared)
        return {m: v for m, v in fused.items() if m in state.items}

    def _reflect(self, ns: str, query: str, plan: RetrievalPlan, filters: Mapping[str, Any],
                 state: _Round, weights: Mapping[str, float],
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
                              plan.analysis, filters, self.settings.candidates,
                              self.settings.min_similarity)
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

    def _english_only(self) -> bool:
        preset = preset_named(str(getattr(self.stores.embedder, "name", "")))
        return preset is not None and preset.languages == "English"

    def _dense_blind(self, query: str) -> bool:
        """Whether the question is mostly CJK and the embedder reads English only."""
        return self._english_only() and _cjk_heavy(query)

    def _language_votes(self, query: str, state: _Round, weights: Mapping[str, float]
                        ) -> dict[str, tuple[float, int]]:
        """The multilingual view's vote fitted to what each view can read of a pair.

        With an English-only embedder (docs/RETRIEVAL.md, "Chinese and mixed text"):
        - an English question over an English memory is read well by the dense view
          and BM25; the multilingual model, a weaker English reader, counts
          ENGLISH_PAIR_WEIGHT of its weight there;
        - a question over a memory in the other language is a pair the dense view and
          BM25 cannot read (their rank for it is noise), so such a memory could only
          ever collect one vote while the same-language ones collect three or four:
          when the multilingual model reads it as closer to the question than every
          memory in the question's language, its multilingual rank also counts in
          the place of each blind view, with that view's weight times
          CROSS_LANGUAGE_STAND_IN. Its cosines across languages run lower and
          noisier than within one; the gate keeps a topic neighbour ("嘉怡最喜欢喝普洱
          茶" for "which herb do I hate?") from outvoting what the other views agree on.
          A memory that states the attribute the question asks of its subject passes
          the gate too (``_stating``); one outside the time a question names never;
        - a Chinese question over a Chinese memory keeps the view's whole vote (it is
          the only reader of meaning the question has, ``_dense_blind``).

        Returns memory id -> (the weight to add, the rank it counts at) (issue 26)."""
        if not self._english_only():
            return {}
        asked_cjk = _cjk_heavy(query)
        ranked = [(m, cosine, _cjk_heavy(state.items[m].content[:2000]) != asked_cjk)
                  for m, cosine in state.results["multilingual"]]
        same = max((cosine for _, cosine, cross in ranked if not cross), default=0.0)
        # or one the rules read as stating what the question asks of its subject ("我
        # 现在住在哪里？": "We got the keys to the house in Amersfoort today!")
        stating = self._stating(state, {m: 0.0 for m, _, cross in ranked if cross}
                                | {m: 0.0 for m in state.unread})
        # such a memory's best language-free reading is its rank among the symbolic
        # view's constraint matches, where that is better than its multilingual rank
        symbolic = {m: n for n, (m, _) in enumerate(state.results.get("symbolic", []), 1)}
        blind = sum(weights.get(v, 1.0) for v in ("semantic", "lexical") if v in state.results)
        own = weights.get("multilingual", MULTILINGUAL_WEIGHT)
        out: dict[str, tuple[float, int]] = {}
        for rank, (m, cosine, cross) in enumerate(ranked, start=1):
            if cross and (cosine >= same or m in stating) and (
                    not state.in_time or m in state.in_time):
                best = min(rank, symbolic.get(m, rank)) if m in stating else rank
                out[m] = (CROSS_LANGUAGE_STAND_IN * blind, best)
            elif not cross and not asked_cjk:
                out[m] = ((ENGLISH_PAIR_WEIGHT - 1.0) * own, rank)
        for m in stating.intersection(state.unread) - set(out):
            if m in symbolic and (not state.in_time or m in state.in_time):
                out[m] = (CROSS_LANGUAGE_STAND_IN * blind, symbolic[m])
        return out

    def _add_votes(self, extra: Mapping[str, tuple[float, int]],
                   fused: dict[str, tuple[float, dict[str, Any]]]) -> None:
        """Adds each memory's extra weight over ``k`` + its rank to its fused score
        (``_language_votes``: memory id -> (weight, rank))."""
        k = self.settings.rrf_k
        for m, (weight, rank) in extra.items():
            if m in fused and weight:
                total, views = fused[m]
                fused[m] = (total + weight / (k + rank), views)

    @staticmethod
    def _stating(state: _Round, totals: Mapping[str, float]) -> set[str]:
        """The candidates that state an attribute the question asks for ("what car do
        I drive?" -> car; text/attributes.py) and are about its subject; empty when
        the question asks for none or no candidate states it (then nothing changes)."""
        if state.analysis is None:
            return set()
        analysis = state.analysis
        asked = asked_attributes(analysis.query)
        if not asked:
            return set()
        stating = {m for m in totals if asked & attributes_of(state.items[m].content[:2000])}
        if asks_advice(analysis.query):
            # "should I buy Ines wine?" asks about Ines, whoever "I" is; "can I cook
            # satay for everyone?" about anyone's allergy
            if analysis.persons or analysis.resolved:
                return {m for m in stating if about_named(state.items[m], analysis)}
            return stating
        return {m for m in stating if not about_someone_else(state.items[m], analysis)}

    def _evidence(self, state: _Round, totals: Mapping[str, float]) -> dict[str, float]:
        """How plainly each candidate matches the question on its own, in [0, 1]: its
        cosine to the question, calibrated (EVIDENCE_COSINE: MiniLM puts unrelated
        sentences under 0.15 and clear answers above 0.5), or the share of the
        question's words its text holds, whichever is higher. Rank fusion keeps ranks,
        not how close the best match is; this is what lets ``min_score`` tell an answer
        from the nearest unrelated memory (issue 26)."""
        lo, hi = EVIDENCE_COSINE
        out: dict[str, float] = {}
        cosines = {} if state.dense_blind else dict(state.results.get("semantic", []))
        asked: set[str] = set()
        if state.question is not None:
            asked = set(self.stores.lexical.terms(without_times(state.question.query,
                                                                 state.question)))
        lexical = {m for m, _ in state.results.get("lexical", [])}
        # working memory's own view scores TF-IDF similarity and keywords in [0, 1];
        # the perceptual view a CLIP / CLAP text-to-media cosine (PERCEPTUAL_COSINE)
        working = dict(state.results.get("working", []))
        media = dict(state.results.get("perceptual", []))
        plo, phi = PERCEPTUAL_COSINE
        for m in totals:
            value = min(1.0, max(0.0, (cosines.get(m, 0.0) - lo) / (hi - lo),
                                 working.get(m, 0.0), (media.get(m, 0.0) - plo) / (phi - plo)))
            if asked and m in lexical:
                have = _memory_terms(self.stores.lexical, state.items[m].content[:2000])
                value = max(value, len(asked & have) / len(asked))
            out[m] = value
        return out

    def _neighbours(self, ns: str, state: _Round,
                    fused: dict[str, tuple[float, dict[str, Any]]],
                    weight: float, flt: ItemFilter) -> dict[str, float]:
        """Context score: ``weight`` x the fused score of the previous and next memory
        in the same session, from the 20 best hits; neighbours must pass ``flt``."""
        if weight <= 0 or not fused:
            return {}
        top = sorted(fused, key=lambda m: -fused[m][0])[:20]
        in_session = [m for m in top if state.items[m].session_id is not None
                      and state.items[m].memory_type != MemoryType.WORKING]
        if not in_session:
            return {}
        # One indexed query for the sessions at hand: always current, also when other
        # processes share the record store (a cache would need an invalidation signal).
        orders = self.stores.records.memories.session_orders(
            ns, [str(state.items[m].session_id) for m in in_session])
        context: dict[str, float] = {}
        for m in in_session:
            order = orders.get(str(state.items[m].session_id), ())
            if m not in order:
                continue
            n = order.index(m)
            for other in (order[n - 1] if n else None,
                          order[n + 1] if n + 1 < len(order) else None):
                if other is not None:
                    context[other] = context.get(other, 0.0) + weight * fused[m][0]
        missing = [m for m in context if m not in state.items]
        if missing:
            for found in self._records_of(ns, missing, state):
                state.items[found.id] = found
        return {m: c for m, c in context.items() if m in state.items
                and (m in fused or matches(state.items[m], flt))}

    def _final(self, ns: str, state: _Round, fused: dict[str, tuple[float, dict[str, Any]]],
               context_weight: float, flt: ItemFilter, limit: int) -> list[SearchHit]:
        """The ``limit`` best hits, best first (fewer when fewer candidates)."""
        context = self._neighbours(ns, state, fused, context_weight, flt)
        totals = {m: fused.get(m, (0.0, {}))[0] + context.get(m, 0.0)
                  for m in set(fused) | set(context) if m in state.items}
        if not totals:
            return []
        top = max(totals.values()) or 1.0
        graph = dict(state.results.get("graph", []))
        gmax = max(graph.values(), default=0.0) or 1.0
        # A memory without graph evidence is scored on similarity alone rather than
        # given a zero for its graph share: the graph can lift a memory it links, but
        # its silence is no evidence against one (one scale for every type).
        # Recency is measured from now (``reference_time`` only anchors the question's
        # time expressions: on the LoCoMo dev split, recency from the question's own
        # date cost 0.02 recall@10), or from the end of the period the question names
        # ("what did I do in December 2024?" asks about December as if it were now).
        now = self._clock()
        if state.in_time and state.asked_until is not None:
            now = min(now, state.asked_until)
        # A question that names a time asks about that time: once something is found
        # inside it, memories outside it count TIME_MISS_FACTOR of their score.
        timed = state.in_time or set()
        # A question asking when is answered by a memory that says when (its text
        # mentions a time, hm_memory_times): once the candidates hold one, the others
        # count WHEN_MISS_FACTOR of their score (issue 15).
        says_when: set[str] = set()
        if state.analysis is not None and state.analysis.asks_time:
            says_when = self.stores.records.memories.with_mentioned_times(ns, list(totals))
            # and those naming a recurring day or a time of day ("on Mondays"); and a
            # note of what happened, outside any conversation session, is dated by its
            # event time ("Housewarming: about twenty people in our little house"),
            # while a conversation turn is dated by its session and often speaks of
            # other times ("I went to the support group yesterday"; issue 26)
            says_when |= {m for m in totals if m not in says_when
                          and (says_when_text(state.items[m].content)
                               or (state.items[m].memory_type == MemoryType.EPISODIC
                                   and state.items[m].session_id is None))}
        stating = self._stating(state, totals)
        # advice is about what holds whenever it is asked: "what should I cook for Lotte
        # on Friday?" is answered by "Lotte is vegetarian", said in June
        advice = (state.analysis is not None and bool(stating)
                  and asks_advice(state.analysis.query))
        if advice and timed:
            timed = timed | stating
        evidence = self._evidence(state, totals)
        evidence.update({m: max(ATTRIBUTE_EVIDENCE, evidence.get(m, 0.0)) for m in stating
                         if m in evidence})
        if timed:
            evidence.update({m: max(TIME_EVIDENCE, evidence.get(m, 0.0)) for m in timed
                             if m in evidence})
        plainest = max(evidence.values(), default=0.0)
        # Every part but the subject's is cheap; the subject part (reading who a memory
        # is about) is at most 1. So candidates are taken by the product of the other
        # parts, best first, and the subject is read only while that bound can still
        # reach the ``limit`` best finished scores: the hits returned are exactly those
        # of scoring every candidate (issue 27).
        bounded = []
        for m, total in totals.items():
            item = state.items[m]
            profile = self.profiles.get(item.memory_type, self.profiles[MemoryType.EPISODIC])
            # The profile's similarity slot takes the normalised fused relevance.
            scored = score(profile, item, now, similarity=total / top,
                           graph=graph[m] / gmax if m in graph else None)
            factors = (
                plainest,
                ((STANDING_TIME_MISS_FACTOR if item.memory_type == MemoryType.SEMANTIC
                  else TIME_MISS_FACTOR) if timed and m not in timed else 1.0),
                WHEN_MISS_FACTOR if says_when and m not in says_when else 1.0,
                ATTRIBUTE_MISS_FACTOR if stating and m not in stating else 1.0)
            bound = scored.breakdown.profile * factors[0] * factors[1] * factors[2] * factors[3]
            bounded.append((bound, m, scored, factors))
        bounded.sort(key=lambda b: -b[0])
        hits: list[SearchHit] = []
        kept: list[float] = []  # the ``limit`` best finished scores, ascending
        for bound, m, scored, (evidence_part, time_part, when_part, attribute_part) in bounded:
            if len(kept) >= limit and bound < kept[0]:
                break  # no later candidate can reach the hits returned
            item = state.items[m]
            views = fused.get(m, (0.0, {}))[1]
            # Every factor that moves a rank is in the breakdown (docs/RETRIEVAL.md,
            # "Reading a score"); the product of the parts is the score, in [0, 1].
            parts = replace(
                scored.breakdown, evidence=evidence_part, time=time_part, when=when_part,
                # an event inside the time the question names is the user's own day,
                # whoever it names ("Moving day. Lotte carried boxes all afternoon")
                subject=(SUBJECT_MISS_FACTOR if state.analysis is not None
                         and m not in timed and not (advice and m in stating)
                         and about_someone_else(item, state.analysis) else 1.0),
                attribute=attribute_part)
            final = (parts.profile * parts.evidence * parts.time * parts.when * parts.subject
                     * parts.attribute)
            hits.append(SearchHit(item=item, score=final, fused=fused.get(m, (0.0, {}))[0],
                                 views=dict(views), context=context.get(m, 0.0),
                                 breakdown=parts,
                                 queries=tuple(state.found_by.get(m, ()))))
            bisect.insort(kept, final)
            if len(kept) > limit:
                del kept[0]
        # Ties (reciprocal ranks tie often: ranks 1 + 2 = 2 + 1): the stronger fused
        # evidence, then the raw evidence of the views (cosine, then BM25), the older
        # event, the text itself: never an order that changes between processes.
        def raw(h: SearchHit, view: str) -> float:
            return h.views[view].score if view in h.views else 0.0

        hits.sort(key=lambda h: (-h.score, -h.fused, -raw(h, "semantic"), -raw(h, "lexical"),
                                 h.item.event_time.timestamp(), h.item.content, h.item.id))
        return hits
