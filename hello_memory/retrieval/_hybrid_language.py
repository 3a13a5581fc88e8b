"""Chinese and mixed text: the part of :class:`~hello_memory.retrieval.hybrid.HybridRetriever`
that runs the multilingual view (its namespace listing, the switch that reads whether a
namespace holds CJK text), finds the memories no view of the question's language could
read, and fits the multilingual view's vote to what each view can read of a pair
(docs/RETRIEVAL.md, "Chinese and mixed text"; retrieval/multilingual.py; issue 26).

``HybridRetriever`` inherits :class:`LanguageMixin`; the code is the retriever's own,
kept here so that no module of the search runs over 600 lines (issue 31).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from hello_memory.config import RetrievalSettings
from hello_memory.embedding.presets import preset_named
from hello_memory.retrieval.multilingual import MultilingualReader
from hello_memory.retrieval.planning import QueryAnalysis
from hello_memory.stores.records import ItemFilter
from hello_memory.text import contains_cjk
from hello_memory.text.attributes import asked_attributes, attributes_of, single_valued
from hello_memory.text.links import STORED_TYPES
from hello_memory.types import MemoryItem

if TYPE_CHECKING:
    from hello_memory.retrieval._hybrid_state import _Round
    from hello_memory.stores.bundle import Stores

T = TypeVar("T")

# The multilingual view's weight in the fusion unless view_weights names one, and the
# largest namespace it reads whole (retrieval/multilingual.py).
MULTILINGUAL_WEIGHT = 1.0
MULTILINGUAL_SCAN = 2000
# what of a memory's text the language rules and the multilingual view read
LISTED_CHARS = 2000
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


@lru_cache(maxsize=4096)
def _cjk_heavy(text: str) -> bool:
    """Whether at least CJK_SHARE of the text's letters and digits are CJK characters
    (kept per text: the multilingual view's fifty candidates are read on every search
    of a namespace holding Chinese text)."""
    letters = [ch for ch in text if ch.isalnum()]
    cjk = sum(1 for ch in letters if "\u3400" <= ch <= "\u9fff")
    return bool(letters) and cjk / len(letters) >= CJK_SHARE


class LanguageMixin:
    """The multilingual view and the language-aware parts of the search."""

    if TYPE_CHECKING:  # HybridRetriever's own (retrieval/hybrid.py)
        stores: Stores
        settings: RetrievalSettings
        multilingual: MultilingualReader

        def _kept(self, ns: str, key: tuple[Any, ...], read: Callable[[], T], *,
                  graph: bool = False, fallback: Callable[[], Any] | None = None) -> T: ...

        def _generation(self, ns: str, *, graph: bool = False) -> Any: ...

        @staticmethod
        def _stating(state: _Round, totals: Mapping[str, float]) -> set[str]: ...

        def _records_of(self, ns: str, ids: Sequence[str], state: _Round
                        ) -> list[MemoryItem]: ...

    def _listed_texts(self, ns: str, flt: ItemFilter) -> tuple[list[str], list[str]]:
        """The ids and texts of the text memories of :meth:`_listing`, kept while the
        namespace's write generation holds (_kept): a search of a small namespace
        reads no record the multilingual view does not rank high (issue 27). Where the
        process keeps no records (PostgreSQL) or the store gives no generation, they are
        read in three columns (MemoryRepository.list_texts)."""
        def columns() -> tuple[list[str], list[str]]:
            stored = {t.value for t in STORED_TYPES}
            rows = [(i, text) for i, kind, text in self.stores.records.memories.list_texts(
                ns, flt, limit=MULTILINGUAL_SCAN, order="-event_time", chars=LISTED_CHARS)
                if kind in stored]
            return [i for i, _ in rows], [text for _, text in rows]

        def records() -> tuple[list[str], list[str]]:
            items = [i for i in self._listing(ns, flt) if i.memory_type in STORED_TYPES]
            return [i.id for i in items], [i.content[:LISTED_CHARS] for i in items]
        whole = self.stores.records.item_cache is not None and self._generation(ns) is not None
        return self._kept(ns, ("listed-texts", flt), records if whole else columns)

    def _listing(self, ns: str, flt: ItemFilter) -> list[MemoryItem]:
        """The newest MULTILINGUAL_SCAN memories of ``ns`` matching ``flt`` (the
        multilingual view's small namespace): the ids kept while no write changes the
        namespace, the records from the record cache (only where the store gives a write
        generation: :meth:`_listed_texts` reads three columns elsewhere)."""
        records = self.stores.records.memories
        ids = self._kept(ns, ("ids", flt), lambda: records.list_ids(
            ns, flt, limit=MULTILINGUAL_SCAN, order="-event_time"))
        return records.get_items(ns, ids, shared=True)

    def _unread(self, ns: str, state: _Round, analysis: QueryAnalysis) -> list[str]:
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
        # what the search read: its records, then the listing's memories no view read
        listed = {m for m, _ in state.listed}
        read = [(m, item.content[:LISTED_CHARS]) for m, item in state.items.items()
                if m not in listed and item.memory_type in STORED_TYPES]
        found = [m for m, text in [*read, *state.listed]
                 if m not in seen and _cjk_heavy(text) != asked_cjk
                 and asked & attributes_of(text)]
        self._take(ns, found, state)
        return [m for m in found if m in state.items]

    def _multilingual_ahead(self, ns: str, query: str) -> Callable[[], Any] | None:
        """The question's multilingual vector started beside its query embedding when
        the multilingual view will read the namespace whatever the other views find:
        the question holds CJK text, or the namespace is small and holds some
        (:meth:`_multilingual_view`'s own conditions; MultilingualReader.ahead). None
        otherwise: the view then encodes the question itself, if the pool asks for it."""
        if not contains_cjk(query):
            small, totals = self._small(ns)
            if not (small and self._holds_cjk(ns, totals)):
                return None
        return self.multilingual.ahead(query)

    def _small(self, ns: str) -> tuple[bool, tuple[int, int]]:
        """Whether the multilingual view reads ``ns`` whole (at most MULTILINGUAL_SCAN
        memories), and its totals (kept at the write generation)."""
        records = self.stores.records.memories
        totals = self._kept(ns, ("totals",), lambda: records.namespace_totals(ns))
        return totals[0] <= MULTILINGUAL_SCAN, totals

    def _multilingual_view(self, ns: str, query: str, state: _Round,
                           ahead: Callable[[], Any] | None = None) -> None:
        """The candidates read again by a multilingual model when the question or one of
        them holds CJK text (retrieval/multilingual.py; issue 26). In a namespace of at
        most MULTILINGUAL_SCAN memories every memory is read (an English question finds
        the Chinese note no other view could); in a larger one, the views' pool. Only
        the records of the memories it ranks high are read (_take); the others' ids and
        texts wait in ``state.listed`` for _unread. ``ahead``: the question's vector,
        started before the views ran (:meth:`_multilingual_ahead`)."""
        pool = {m: state.items[m].content[:LISTED_CHARS] for r in state.results.values()
                for m, _ in r
                if m in state.items and state.items[m].memory_type in STORED_TYPES}
        small, totals = self._small(ns)
        # an English question over a small namespace that holds Chinese memories: the
        # pool of the English views may hold none of them
        if not pool or not (self.multilingual.wanted_texts(query, pool.values())
                            or (small and self._holds_cjk(ns, totals))):
            return
        listing: tuple[Any, list[str], list[str]] | None = None
        if small:
            ids, texts = self._listed_texts(ns, state.flt)
            state.listing, state.read_before = (ids, texts), frozenset(state.items)
            generation = self._generation(ns)
            if generation is not None:  # the listing is the same while it holds
                listing = ((ns, state.flt, generation), ids, texts)
            else:
                pool.update(kv for kv in state.listed if kv[0] not in pool)
        ranked = self.multilingual.rank_texts(query, pool, limit=self.settings.candidates,
                                              listing=listing, question=ahead)
        self._take(ns, [m for m, _ in ranked], state)
        ranked = [(m, c) for m, c in ranked if m in state.items]
        if ranked:
            state.results["multilingual"] = ranked

    def _take(self, ns: str, ids: Sequence[str], state: _Round) -> None:
        """The records of ``ids`` the search has not read yet, read (shared)."""
        missing = [m for m in ids if m not in state.items]
        if missing:
            for item in self._records_of(ns, missing, state):
                state.items[item.id] = item

    def _holds_cjk(self, ns: str, totals: tuple[int, int]) -> bool:
        """Whether the (small) namespace holds CJK text, read once per write generation
        where the store gives one (any write, an edit too, reads it again), else per
        namespace totals (_kept)."""
        return self._kept(ns, ("cjk",), lambda: self.stores.records.memories.holds_cjk(ns),
                          fallback=lambda: totals)

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
