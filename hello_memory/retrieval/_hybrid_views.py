"""Running the views: the part of :class:`~hello_memory.retrieval.hybrid.HybridRetriever`
that runs the registered views of one search in parallel (or in turn, on a store whose
calls run in turn), loads the records of their candidates under the caller's filters,
and ranks the symbolic view's time and soft constraints on the candidate pool
(docs/RETRIEVAL.md, "The pipeline" step 2, "Adding a view" and "Time").

``HybridRetriever`` inherits :class:`ViewsMixin`; the code is the retriever's own,
kept here so that no module of the search runs over 600 lines (issue 31). The views'
thread pool (``_executor``, ``_submit``) stays in retrieval/hybrid.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from hello_memory import telemetry
from hello_memory.config import RetrievalSettings
from hello_memory.memory.episodic import matches
from hello_memory.retrieval.fusion import ViewResult, tie_order, weighted_rrf
from hello_memory.retrieval.planning import QueryAnalysis
from hello_memory.retrieval.registry import registered_views, runs_with, served_types
from hello_memory.retrieval.views import ViewRequest, symbolic_pool_view
from hello_memory.stores.vector.base import calls_in_turn
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType

if TYPE_CHECKING:
    from hello_memory.retrieval._hybrid_state import _Round
    from hello_memory.retrieval.parts import SearchParts
    from hello_memory.stores.bundle import Stores
    from hello_memory.stores.records import ItemFilter

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


# Scores equal to this many decimals are equal: the index sums a memory's BM25 terms in
# its own order, so one score can differ in the last bits between two stores.
TIE_DIGITS = 5


def settle_ties(state: _Round) -> None:
    """Each view's equal scores in one order that the memories fix (``tie_order``).
    A vector index returns them in its own order, which
    differs between two stores of the same memories (ids are random, segments fill in
    their own order), and the fusion's ranks, the symbolic pool's order and so the
    final list followed it: the same conversation ingested twice ranked differently
    (retrieval/_hybrid_scoring.py ``_best_first`` settles the final list the same way;
    docs/RETRIEVAL.md, "Ties")."""
    items = state.items
    for view, ranked in state.results.items():
        state.results[view] = sorted(ranked, key=lambda ms: (
            -round(ms[1], TIE_DIGITS), *tie_order(items[ms[0]])))


class ViewsMixin:
    """The registered views of one search, their records, the symbolic ranking."""

    if TYPE_CHECKING:  # HybridRetriever's own (retrieval/hybrid.py)
        stores: Stores
        parts: SearchParts
        settings: RetrievalSettings
        use_embeddings: bool

        def _kept(self, ns: str, key: tuple[Any, ...], read: Callable[[], T], *,
                  graph: bool = False, fallback: Callable[[], Any] | None = None) -> T: ...

        def _generation(self, ns: str, *, graph: bool = False) -> Any: ...

        def _weights(self) -> dict[str, float]: ...

        def _kept_each(self, ns: str, kind: str, keys: Sequence[K],
                       read: Callable[[Sequence[K]], Mapping[K, V]], *, since: Any = None
                       ) -> dict[K, V]: ...

        def _submit(self, fn: Callable[[], ViewResult], parallel: bool
                    ) -> Callable[[], ViewResult]: ...

    def _request(self, ns: str, question: str, queries: Sequence[str],
                 analysis: QueryAnalysis, flt: ItemFilter, active: Sequence[str]
                 ) -> ViewRequest:
        """The one request every view of a search gets: the caller's filter as it is
        (``ViewRequest.flt``), the question's embeddings when a chosen view needs them."""
        registry = registered_views()
        vectors = None
        # the symbolic view runs on a pool the semantic view may be asked to fill
        if active and self.use_embeddings and ("symbolic" in active or any(
                registry[v].needs_vectors for v in active if v in registry)):
            vectors = [self.stores.embedder.embed_query(q) for q in queries]
        return ViewRequest(ns, list(queries), vectors, analysis, flt,
                           self.settings.candidates, self.settings.min_similarity,
                           symbolic="symbolic" in active, question=question,
                           parts=self.parts, all_active=self._all_active(ns, flt))

    def _run_views(self, ns: str, req: ViewRequest, active: Sequence[str],
                   state: _Round) -> None:
        """The chosen views (``active``) on the text collection, their records, and the
        symbolic view's ranking of the candidate pool."""
        registry = registered_views()
        queries, analysis, vectors = req.queries, req.analysis, req.vectors
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
        settle_ties(state)
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

    def _run_beside(self, req: ViewRequest, types: Sequence[MemoryType],
                    active: Sequence[str], state: _Round) -> None:
        """The views that run beside the chosen ones (registry.runs_with: working and
        perceptual memory, retrieval/memory_views.py), in the registry's order, after
        them: each when one of the views it runs with is chosen and it serves a memory
        type searched. They bring the records of what they find (RankedItems); ids
        without one are read from the records store under the caller's filter."""
        for name, view in registered_views().items():
            beside = runs_with(view)
            if (beside is None or not set(beside) & set(active)
                    or not set(served_types(view)) & set(types)
                    or view.needs_vectors and not req.vectors):
                continue
            ranked = telemetry.wrap_for_thread(partial(view.rank, self.stores, req),
                                               f"hello_memory.view {name}",
                                               {"hello_memory.view.name": name})()
            if not ranked:
                continue
            state.results[name] = list(ranked)
            records: dict[str, MemoryItem] = getattr(ranked, "records", {})
            for memory_id, _ in ranked:
                if memory_id in records:
                    state.items[memory_id] = records[memory_id]
            if any(m not in state.items for m, _ in ranked):
                self._load_items(req.namespace, state)  # ids of the records store

    def _all_active(self, ns: str, flt: ItemFilter) -> bool:
        """Whether ``flt`` asks for active memories and ``ns`` holds no other, read
        once per write generation (_kept); where the records give none, False, and
        the vector queries keep their status condition."""
        if flt.status != MemoryStatus.ACTIVE or self._generation(ns) is None:
            return False
        return self._kept(ns, ("all-active",),
                          lambda: not self.stores.records.memories.holds_inactive(ns))

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

    def _mentioning_times(self, ns: str, ids: Sequence[str], state: _Round) -> set[str]:
        """Those of ``ids`` whose text mentions a time (``hm_memory_times``), kept per
        memory at the namespace's write generation (_kept_each): a record's times change
        only with a write, and every "when" question asked them of its whole pool in
        one more query (issue 27)."""
        def read(missing: Sequence[str]) -> dict[str, bool]:
            found = self.stores.records.memories.with_mentioned_times(ns, missing)
            return {m: m in found for m in missing}

        kept = self._kept_each(ns, "mentions-time", ids, read, since=state.generation)
        return {m for m, yes in kept.items() if yes}

    def _symbolic(self, state: _Round, analysis: QueryAnalysis) -> list[tuple[str, float]]:
        """Time-constrained hits and soft-constraint matches in one ranking: by the
        number of constraints met, then by the pool's fused relevance so far."""
        in_time = dict(state.time_hits)
        base = weighted_rrf({v: r for v, r in state.results.items() if v != "symbolic"},
                            self._weights(), k=self.settings.rrf_k)
        # Equal weights tie often (k 5: semantic rank 1 = lexical rank 1): among equal
        # fused scores the better lexical rank goes first. The words a question shares
        # with a memory decide more ties right than its meaning alone: on the LoCoMo dev
        # split, R@1 0.3427 and MRR 0.5089 against 0.3389 and 0.5065 with the meaning
        # first (R@10 0.7226 against 0.7234); the assistant benchmark is unchanged
        # (docs/RETRIEVAL.md, "Ties").
        lexical = {m: n for n, (m, _) in enumerate(state.results.get("lexical", []))}
        order = {m: f for m, (f, _) in sorted(base.items(), key=lambda kv: (
            -kv[1][0], lexical.get(kv[0], len(lexical))))}
        pool = [state.items[m] for m in dict.fromkeys([*order, *in_time, *state.unread])
                if m in state.items]
        # "When ...?" is answered by a memory that says when (its text mentions a time).
        timed = (self._mentioning_times(pool[0].namespace, [i.id for i in pool], state)
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
