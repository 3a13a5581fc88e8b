"""Fusion and the final score: the part of :class:`~hello_memory.retrieval.hybrid.HybridRetriever`
that fuses the views' rankings (weighted reciprocal-rank fusion, the extra votes),
gives a share of a memory's score to its session neighbours, reads how plainly the
question is answered at all (the evidence) and applies the scoring profiles and the
question's factors (time, when, subject, attribute) to order the final list
(docs/RETRIEVAL.md, "Reading a score", "One scale" and "The pipeline" steps 3 and 5).

``HybridRetriever`` inherits :class:`ScoringMixin`; the code is the retriever's own,
kept here so that no module of the search runs over 600 lines (issue 31).
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections.abc import Callable, Hashable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from hello_memory.config import RetrievalSettings
from hello_memory.memory.episodic import matches
from hello_memory.memory.scoring import ScoreBreakdown, ScoringProfile, SearchHit, profile_parts
from hello_memory.retrieval.fusion import tie_order, weighted_rrf
from hello_memory.retrieval.registry import registered_views
from hello_memory.retrieval.views import about_named, about_someone_else, without_times
from hello_memory.stores.records import ItemFilter
from hello_memory.text.attributes import asked_attributes, asks_advice, attributes_of
from hello_memory.text.timeparse import says_when as says_when_text
from hello_memory.types import MemoryItem, MemoryType

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

if TYPE_CHECKING:
    from hello_memory.retrieval._hybrid_state import _Round
    from hello_memory.stores.bundle import Stores

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


# A candidate's profile parts in ``_bounded``: similarity, recency, graph, profile.
_Parts = tuple[float, float, float, float]
# Its factors there: evidence, time, when, attribute.
_Factors = tuple[float, float, float, float]


class ScoringMixin:
    """Fusion, neighbour context, evidence and the final scores of the search."""

    if TYPE_CHECKING:  # HybridRetriever's own (retrieval/hybrid.py)
        stores: Stores
        settings: RetrievalSettings
        profiles: dict[MemoryType, ScoringProfile]
        _clock: Callable[[], datetime]

        def _records_of(self, ns: str, ids: Sequence[str], state: _Round
                        ) -> list[MemoryItem]: ...

        def _kept_each(self, ns: str, kind: str, keys: Sequence[K],
                       read: Callable[[Sequence[K]], Mapping[K, T]], *, since: Any = None
                       ) -> dict[K, T]: ...

        def _mentioning_times(self, ns: str, ids: Sequence[str], state: _Round
                              ) -> set[str]: ...

    def _fuse(self, state: _Round, weights: Mapping[str, float]
              ) -> dict[str, tuple[float, dict[str, Any]]]:
        # Equal scores share a rank in every registered view that says so (shared_ranks,
        # working and perceptual memory's too; the symbolic view's score is a count of
        # constraints met, ordered within a count by the pool's relevance, so its order
        # is kept as it is).
        shared = tuple(n for n, v in registered_views().items() if v.shared_ranks)
        fused = weighted_rrf(state.results, weights, k=self.settings.rrf_k,
                             shared_ranks=shared)
        return {m: v for m, v in fused.items() if m in state.items}

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
        # One indexed query for the sessions not kept at the namespace's write
        # generation (read every time where the records give none).
        orders = self._kept_each(
            ns, "session", list(dict.fromkeys(str(state.items[m].session_id)
                                              for m in in_session)),
            lambda sessions: self.stores.records.memories.session_orders(ns, sessions))
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
        says_when = self._saying_when(ns, state, totals)
        stating = self._stating(state, totals)
        # advice is about what holds whenever it is asked: "what should I cook for Lotte
        # on Friday?" is answered by "Lotte is vegetarian", said in June
        advice = (state.analysis is not None and bool(stating)
                  and asks_advice(state.analysis.query))
        if advice and timed:
            timed = timed | stating
        plainest = self._plainest(state, totals, stating, timed)
        bounded = self._bounded(state, totals, now, top=top, graph=graph, gmax=gmax,
                                plainest=plainest, timed=timed, says_when=says_when,
                                stating=stating)
        hits = self._finished(state, fused, context, bounded, timed, advice, stating, limit)
        return _best_first(hits)

    def _saying_when(self, ns: str, state: _Round, totals: Mapping[str, float]) -> set[str]:
        """The candidates that say when, for a question asking when (``_final``'s part;
        empty for any other question)."""
        # A question asking when is answered by a memory that says when (its text
        # mentions a time, hm_memory_times): once the candidates hold one, the others
        # count WHEN_MISS_FACTOR of their score (issue 15).
        if state.analysis is None or not state.analysis.asks_time:
            return set()

        def read(ids: Sequence[str]) -> dict[str, bool]:
            # those whose text mentions a time (hm_memory_times), and those naming a
            # recurring day or a time of day ("on Mondays"); and a note of what
            # happened, outside any conversation session, is dated by its event time
            # ("Housewarming: about twenty people in our little house"), while a
            # conversation turn is dated by its session and often speaks of other
            # times ("I went to the support group yesterday"; issue 26)
            mention = self._mentioning_times(ns, ids, state)
            return {m: m in mention or bool(says_when_text(state.items[m].content))
                    or (state.items[m].memory_type == MemoryType.EPISODIC
                        and state.items[m].session_id is None) for m in ids}

        # kept per memory at the namespace's write generation (a record's text and
        # times change only with a write)
        kept = self._kept_each(ns, "says-when", list(totals), read, since=state.generation)
        return {m for m, yes in kept.items() if yes}

    def _plainest(self, state: _Round, totals: Mapping[str, float], stating: set[str],
                  timed: set[str]) -> float:
        """How plainly the question is answered at all: the best candidate's evidence,
        with those stating the attribute asked for and those inside the time asked
        about counted at least ATTRIBUTE_EVIDENCE and TIME_EVIDENCE (``_final``'s part)."""
        evidence = self._evidence(state, totals)
        evidence.update({m: max(ATTRIBUTE_EVIDENCE, evidence.get(m, 0.0)) for m in stating
                         if m in evidence})
        if timed:
            evidence.update({m: max(TIME_EVIDENCE, evidence.get(m, 0.0)) for m in timed
                             if m in evidence})
        return max(evidence.values(), default=0.0)

    def _bounded(self, state: _Round, totals: Mapping[str, float], now: datetime, *,
                 top: float, graph: Mapping[str, float], gmax: float, plainest: float,
                 timed: set[str], says_when: set[str], stating: set[str]
                 ) -> list[tuple[float, str, _Parts, _Factors]]:
        """Each candidate's bound on its final score, best first, with its profile's
        parts (similarity, recency, graph, profile: numbers only, the breakdown is built
        for the hits returned) and its factors (``_final``'s part: ``top`` and ``gmax``
        scale the fused and the graph scores; ``timed``, ``says_when`` and ``stating``
        are the candidates inside the time asked about, saying when and stating the
        attribute asked for)."""
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
            similarity = total / top
            _, part, rec, graph_part = profile_parts(
                profile, item, now, similarity=similarity,
                graph=graph[m] / gmax if m in graph else None)
            factors = (
                plainest,
                ((STANDING_TIME_MISS_FACTOR if item.memory_type == MemoryType.SEMANTIC
                  else TIME_MISS_FACTOR) if timed and m not in timed else 1.0),
                WHEN_MISS_FACTOR if says_when and m not in says_when else 1.0,
                ATTRIBUTE_MISS_FACTOR if stating and m not in stating else 1.0)
            bound = part * factors[0] * factors[1] * factors[2] * factors[3]
            bounded.append((bound, m, (similarity, rec, graph_part, part), factors))
        bounded.sort(key=lambda b: -b[0])
        return bounded

    @staticmethod
    def _finished(state: _Round, fused: dict[str, tuple[float, dict[str, Any]]],
                  context: Mapping[str, float],
                  bounded: list[tuple[float, str, _Parts, _Factors]],
                  timed: set[str], advice: bool, stating: set[str], limit: int
                  ) -> list[SearchHit]:
        """The hits with their subject part read, taken from ``bounded`` (best bound
        first) while a bound can still reach the ``limit`` best finished scores
        (``_final``'s part; not yet in their final order)."""
        hits: list[SearchHit] = []
        kept: list[float] = []  # the ``limit`` best finished scores, ascending
        for bound, m, (similarity, rec, graph_part, part), (
                evidence_part, time_part, when_part, attribute_part) in bounded:
            if len(kept) >= limit and bound < kept[0]:
                break  # no later candidate can reach the hits returned
            item = state.items[m]
            views = fused.get(m, (0.0, {}))[1]
            # Every factor that moves a rank is in the breakdown (docs/RETRIEVAL.md,
            # "Reading a score"); the product of the parts is the score, in [0, 1].
            parts = ScoreBreakdown(
                similarity=similarity, recency=rec, importance=item.importance,
                graph=graph_part, profile=part,
                evidence=evidence_part, time=time_part, when=when_part,
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
        return hits


def _best_first(hits: list[SearchHit]) -> list[SearchHit]:
    """``hits`` in their final order, sorted in place (``ScoringMixin._final``'s part)."""
    # Ties (reciprocal ranks tie often: ranks 1 + 2 = 2 + 1): the stronger fused
    # evidence, then the raw evidence of the views (cosine, then BM25), the older
    # event, the text itself: never an order that changes between processes.
    def raw(h: SearchHit, view: str) -> float:
        return h.views[view].score if view in h.views else 0.0

    hits.sort(key=lambda h: (-h.score, -h.fused, -raw(h, "semantic"), -raw(h, "lexical"),
                             *tie_order(h.item)))
    return hits
