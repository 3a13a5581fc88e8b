"""Working memory: short-term context kept in process only, never persisted.

Each namespace is a :class:`cachetools.TTLCache` whose timer reads the injected clock,
so items expire ``ttl_minutes`` after they were added (``update`` and
``record_access`` do not extend that) and tests can move time by hand.

Overflow (``capacity`` items, or ``token_budget`` tokens per namespace) never uses the
cache's LRU order. Before an item goes in, the lowest-priority live items leave first::

    priority = importance × decay,   decay = 0.5 ** (time since added / half_life)

(ties: the oldest goes first). One item larger than the whole budget is refused.

Search scores with the ``WORKING`` profile of :mod:`hello_memory.memory.scoring`::

    tfidf   = cosine(TF-IDF(query), TF-IDF(content)), clipped to [0, 1], stopwords out
    keyword = |Q ∩ D| / |Q|   Q = tokenize(query, remove_stopwords=True), or every query
                              token if that leaves none; D = tokenize(content)
    recency = 0.5 ** (age of event_time / half_life)                 (30 min by default)
    score   = (0.7 * tfidf + 0.3 * keyword) * recency * (0.8 + 0.4 * importance)

The TF-IDF model is fitted per namespace on all live items (so IDF does not depend on
the filters) and refitted only when the namespace's (id, content) pairs change. When it
cannot be fitted (empty vocabulary) the search falls back to keyword matching alone.
Items with tfidf == keyword == 0 are not returned. Filters run before scoring.
"""

from __future__ import annotations

import builtins
import dataclasses
import itertools
import logging
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cachetools import TTLCache

from hello_memory.config import LimitsSettings
from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.memory.scoring import (
    WORKING,
    ScoringProfile,
    SearchHit,
    clip_similarity,
    recency,
    score,
)
from hello_memory.text import TokenCounter, default_token_counter, tokenize
from hello_memory.types import MemoryItem, MemoryType, utcnow
from hello_memory.validation import (
    DEFAULT_LIMITS,
    require_namespace,
    validate_content,
    validate_importance,
    validate_item,
    validate_time_range,
)

__all__ = ["WorkingMemory"]

log = logging.getLogger(__name__)

_FIELDS = frozenset(f.name for f in dataclasses.fields(MemoryItem))
# Identity fields: changing them would move the item to another slot or store.
_FIXED = frozenset({"id", "namespace", "memory_type"})


@dataclass
class _Entry:
    item: MemoryItem
    added: datetime  # by the injected clock: drives the eviction decay
    seq: int  # insertion order, to list oldest first and break ties
    tokens: int  # counted once on write, so budgets never recount


@dataclass
class _Index:
    key: tuple[tuple[str, str], ...]  # the (id, content) pairs it was fitted on
    terms: dict[str, frozenset[str]]
    vectorizer: Any  # fitted TfidfVectorizer, or None when fitting failed
    matrix: Any  # scipy sparse, one L2-normalised row per item
    rows: dict[str, int]


def _content_terms(text: str) -> list[str]:
    return tokenize(text, remove_stopwords=True)


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{name} must be an integer >= 1, got {value!r}")
    return value


class WorkingMemory:
    """Short-term memory per namespace with TTL, capacity and token budget; thread-safe."""

    def __init__(
        self,
        *,
        capacity: int = 50,
        ttl_minutes: float = 60.0,
        token_budget: int = 2000,
        token_counter: TokenCounter | None = None,
        clock: Callable[[], datetime] = utcnow,
        profile: ScoringProfile = WORKING,
        limits: LimitsSettings | None = None,
    ) -> None:
        # the ``limits`` settings its items and queries are checked against
        # (docs/ARCHITECTURE.md, "Where settings reach the parts")
        self.limits = limits or DEFAULT_LIMITS
        self._capacity = _positive_int("capacity", capacity)
        self._budget = _positive_int("token_budget", token_budget)
        if (isinstance(ttl_minutes, bool) or not isinstance(ttl_minutes, (int, float))
                or not math.isfinite(ttl_minutes) or ttl_minutes <= 0):
            raise InvalidInputError(f"ttl_minutes must be a finite number > 0, got {ttl_minutes!r}")
        self._ttl_seconds = float(ttl_minutes) * 60.0
        self._counter = token_counter or default_token_counter()
        self._clock = clock
        self._profile = profile
        # Re-entrant: public methods call each other's helpers while holding it.
        self._lock = threading.RLock()
        self._frozen: datetime | None = None  # the instant of the operation in progress
        self._caches: dict[str, TTLCache[str, _Entry]] = {}
        self._indexes: dict[str, _Index] = {}
        self._seq = itertools.count()

    # --- internals ------------------------------------------------------------------
    def _now(self) -> datetime:
        now = self._clock()
        if now.utcoffset() is None:
            raise InvalidInputError("the clock must return timezone-aware datetimes")
        return now

    def _timer(self) -> float:
        # Only called by the caches, always inside _op(), so under the lock.
        return (self._frozen or self._now()).timestamp()

    @contextmanager
    def _op(self) -> Iterator[datetime]:
        """Hold the lock and freeze time for one operation. With a live clock an item
        could otherwise expire between TTLCache's ``in`` and ``[]`` (a KeyError)."""
        with self._lock:
            if self._frozen is not None:  # nested: keep the outer instant
                yield self._frozen
                return
            self._frozen = self._now()
            try:
                yield self._frozen
            finally:
                self._frozen = None

    def _cache(self, namespace: str, *, create: bool = False) -> TTLCache[str, _Entry] | None:
        cache = self._caches.get(namespace)
        if cache is None and create:
            cache = TTLCache(maxsize=self._capacity, ttl=self._ttl_seconds, timer=self._timer)
            self._caches[namespace] = cache
        if cache is not None:
            # TTLCache's len() still counts expired items until expire() runs.
            cache.expire()
        return cache

    def _entries(self, namespace: str) -> list[_Entry]:
        """Live entries, oldest first."""
        cache = self._cache(namespace)
        if cache is None:
            return []
        return sorted(cache.values(), key=lambda e: e.seq)

    def _prepare(self, item: MemoryItem) -> tuple[MemoryItem, int]:
        if not isinstance(item, MemoryItem):
            raise InvalidInputError(f"expected a MemoryItem, got {type(item).__name__}")
        item.memory_type = MemoryType.WORKING
        validate_item(item, self.limits)
        tokens = self._counter.count(item.content)
        if tokens > self._budget:
            raise InvalidInputError(
                f"memory {item.id!r} has {tokens} tokens, more than the whole working-memory "
                f"token_budget of {self._budget}; shorten it, store it in a long-term memory, "
                "or raise token_budget"
            )
        return item, tokens

    def _priority(self, entry: _Entry, now: datetime) -> float:
        return entry.item.importance * recency(entry.added, now, self._profile.half_life_days)

    def _make_room(self, cache: TTLCache[str, _Entry], now: datetime, *, add_count: int,
                   add_tokens: int, keep: str | None = None) -> None:
        """Evict lowest-priority entries until ``add_count`` more items and
        ``add_tokens`` more tokens fit (``keep`` is never evicted)."""
        entries = list(cache.values())
        count = len(entries) + add_count
        used = sum(e.tokens for e in entries) + add_tokens
        victims = sorted((e for e in entries if e.item.id != keep),
                         key=lambda e: (self._priority(e, now), e.seq))
        for victim in victims:
            if count <= self._capacity and used <= self._budget:
                return
            del cache[victim.item.id]
            count -= 1
            used -= victim.tokens
            log.debug("working memory evicted %s from %r (priority %.4g)", victim.item.id,
                      victim.item.namespace, self._priority(victim, now))

    def _index(self, namespace: str, entries: list[_Entry]) -> _Index:
        key = tuple((e.item.id, e.item.content) for e in entries)
        index = self._indexes.get(namespace)
        if index is not None and index.key == key:
            return index
        # Imported here: scikit-learn takes ~1 s to import and most callers never search.
        from sklearn.feature_extraction.text import TfidfVectorizer

        # Stopwords out: on a handful of short items a shared "the" would otherwise
        # dominate the cosine.
        vectorizer: Any = TfidfVectorizer(tokenizer=_content_terms, lowercase=False,
                                          token_pattern=None)
        try:
            matrix = vectorizer.fit_transform([content for _, content in key])
        except ValueError as exc:  # empty vocabulary: no content has a single token
            log.debug("TF-IDF unavailable in namespace %r (%s); keyword matching only",
                      namespace, exc)
            vectorizer = matrix = None
        index = _Index(key, {mid: frozenset(tokenize(content)) for mid, content in key},
                       vectorizer, matrix, {mid: row for row, (mid, _) in enumerate(key)})
        self._indexes[namespace] = index
        return index

    def _drop_namespace(self, namespace: str) -> None:
        self._caches.pop(namespace, None)
        self._indexes.pop(namespace, None)

    # --- writes ---------------------------------------------------------------------
    def add(self, item: MemoryItem) -> MemoryItem:
        """Validate and store ``item`` (as WORKING; an existing id is replaced)."""
        return self.add_many([item])[0]

    def add_many(self, items: Sequence[MemoryItem]) -> list[MemoryItem]:
        """Validate every item first, so one bad item adds nothing; then store in order."""
        if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
            raise InvalidInputError("add_many takes a sequence of MemoryItem")
        prepared = [self._prepare(item) for item in items]
        with self._op() as now:
            for item, tokens in prepared:
                cache = self._cache(item.namespace, create=True)
                assert cache is not None
                cache.pop(item.id, None)
                self._make_room(cache, now, add_count=1, add_tokens=tokens)
                cache[item.id] = _Entry(item, now, next(self._seq), tokens)
        return [item for item, _ in prepared]

    def update(self, namespace: str, memory_id: str, /, **changes: Any) -> MemoryItem:
        """Change fields of a live item (re-validated); its TTL keeps counting from add.

        ``namespace`` and ``memory_id`` are positional-only so that ``namespace=`` in
        ``changes`` reaches the "cannot change" check instead of a TypeError."""
        require_namespace(namespace)
        unknown = set(changes) - _FIELDS
        if unknown:
            raise InvalidInputError(f"unknown MemoryItem field(s): {sorted(unknown)}")
        fixed = set(changes) & _FIXED
        if fixed:
            raise InvalidInputError(f"cannot change {sorted(fixed)}; remove and add instead")
        with self._op() as now:
            cache = self._cache(namespace)
            entry = cache.get(memory_id) if cache is not None else None
            if cache is None or entry is None:
                raise NotFoundError(f"no working memory {memory_id!r} in namespace {namespace!r}")
            if "content" in changes and "content_hash" not in changes:
                changes["content_hash"] = None  # validate_item recomputes it
            changes.setdefault("metadata", dict(entry.item.metadata))
            new, tokens = self._prepare(dataclasses.replace(entry.item, **changes))
            # Mutating the entry (not re-inserting) keeps the cache's expiry time.
            entry.item, entry.tokens = new, tokens
            self._make_room(cache, now, add_count=0, add_tokens=0, keep=memory_id)
            return new

    def remove(self, namespace: str, memory_id: str) -> bool:
        require_namespace(namespace)
        with self._op():
            cache = self._cache(namespace)
            if cache is None or memory_id not in cache:
                return False
            del cache[memory_id]
            return True

    def clear(self, namespace: str) -> int:
        """Drop every item of ``namespace`` (only); returns how many live items went."""
        require_namespace(namespace)
        with self._op():
            removed = len(self._entries(namespace))
            self._drop_namespace(namespace)
            return removed

    def expire(self) -> int:
        """Drop expired items in all namespaces; returns how many this call dropped
        (every other call also drops its namespace's expired items on the way)."""
        with self._op():
            dropped = 0
            for namespace, cache in list(self._caches.items()):
                dropped += len(cache.expire())
                if not len(cache):
                    self._drop_namespace(namespace)
            return dropped

    def record_access(self, namespace: str, ids: Sequence[str]) -> None:
        """Count one access of each live id (unknown or expired ids are skipped:
        an item may expire between a search and this call)."""
        require_namespace(namespace)
        if isinstance(ids, str):
            raise InvalidInputError("ids must be a sequence of ids, not a single str")
        with self._op() as now:
            cache = self._cache(namespace)
            if cache is None:
                return
            for memory_id in ids:
                entry = cache.get(memory_id)
                if entry is not None:
                    entry.item.access_count += 1
                    entry.item.last_access = now

    # --- reads ----------------------------------------------------------------------
    def get(self, namespace: str, memory_id: str) -> MemoryItem | None:
        require_namespace(namespace)
        with self._op():
            cache = self._cache(namespace)
            entry = cache.get(memory_id) if cache is not None else None
            return entry.item if entry is not None else None

    def ids_starting(self, namespace: str, prefix: str) -> list[str]:
        """Ids of live items that start with ``prefix`` (a short handle)."""
        require_namespace(namespace)
        with self._op():
            cache = self._cache(namespace)
            return sorted(k for k in (cache or {}) if k.startswith(prefix))

    def list(self, namespace: str) -> list[MemoryItem]:
        """Live items, oldest first."""
        require_namespace(namespace)
        with self._op():
            return [e.item for e in self._entries(namespace)]

    def count(self, namespace: str) -> int:
        require_namespace(namespace)
        with self._op():
            return len(self._entries(namespace))

    def tokens(self, namespace: str) -> int:
        """Token total of the live items of ``namespace``."""
        require_namespace(namespace)
        with self._op():
            return sum(e.tokens for e in self._entries(namespace))

    def namespaces(self) -> builtins.list[str]:
        """Namespaces holding at least one live item, sorted."""
        with self._op():
            return sorted(ns for ns in list(self._caches) if self._entries(ns))

    def retrieve(
        self,
        namespace: str,
        query: str,
        *,
        top_k: int = 5,
        min_importance: float | None = None,
        time_range: tuple[datetime | None, datetime | None] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
    ) -> builtins.list[SearchHit]:
        """Best ``top_k`` live items for ``query`` (formula in the module docstring);
        ties go to the newer event. ``time_range`` bounds ``event_time``, inclusive."""
        require_namespace(namespace)
        validate_content(query, limits=self.limits)
        _positive_int("top_k", top_k)
        floor = validate_importance(min_importance) if min_importance is not None else None
        start, end = validate_time_range(time_range)
        terms = set(tokenize(query, remove_stopwords=True)) or set(tokenize(query))
        with self._op() as now:
            entries = self._entries(namespace)
            candidates = [
                e for e in entries
                if (floor is None or e.item.importance >= floor)
                and (start is None or e.item.event_time >= start)
                and (end is None or e.item.event_time <= end)
                and (user_id is None or e.item.user_id == user_id)
                and (session_id is None or e.item.session_id == session_id)
            ]
            if not candidates:
                return []
            index = self._index(namespace, entries)
            cosines = None
            if index.vectorizer is not None:
                # Rows are L2-normalised, so the dot product is the cosine.
                cosines = (index.matrix @ index.vectorizer.transform([query]).T).toarray().ravel()
            ranked: list[tuple[SearchHit, int]] = []
            for entry in candidates:
                item = entry.item
                tfidf = 0.0 if cosines is None else clip_similarity(
                    float(cosines[index.rows[item.id]]))
                keyword = len(terms & index.terms[item.id]) / len(terms) if terms else 0.0
                if tfidf == 0.0 and keyword == 0.0:
                    continue
                hit = score(self._profile, item, now, similarity=tfidf, keyword=keyword)
                ranked.append((hit, entry.seq))
        ranked.sort(key=lambda p: (-p[0].score, -p[0].item.event_time.timestamp(), -p[1]))
        return [hit for hit, _ in ranked[:top_k]]
