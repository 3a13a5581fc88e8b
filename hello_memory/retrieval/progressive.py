"""Progressive disclosure: load just enough memory for a query under a token budget.

Three layers, from cheap to detailed (seed 003, "Progressive Loader"):

1. **index**: one short line per topic found by :meth:`MemoryManager.search`;
2. **timeline**: the most recent entries of each relevant topic, one truncated line each;
3. **full**: complete contents of the matching memories, only when the timeline is not
   enough (a detail-seeking query, or no timeline at all).

A memory's topic is ``metadata["topic"]`` when set, else its ``session_id``, else its
own id. The budget is never exceeded: every text handed out (the index included) is
counted, and items are added whole or not at all.

With ``standing_share`` > 0 a small part of the budget goes to **standing facts**: the
namespace's most important semantic memories (allergies, preferences, who the user
is), whatever the query, because a question rarely names the fact that should shape
its answer ("suggest a snack" vs. "allergic to peanuts").

Every read of one call is bounded by its limits, not by the namespace's size: one
search (top ``limit``), one indexed ``LIMIT`` query per relevant topic for its timeline,
one for the standing facts, and the savings baseline from the record store's running
token total (``MemoryRepository.namespace_totals``) plus working memory (capped).

>>> loader = ProgressiveLoader(manager)                               # doctest: +SKIP
>>> memories, metrics = loader.load_relevant_context("how did we fix the db pool?")
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hello_memory.errors import InvalidInputError
from hello_memory.memory.scoring import SearchHit
from hello_memory.stores.records import ItemFilter
from hello_memory.stores.records.memories import item_topic
from hello_memory.text.tokenize import tokenize
from hello_memory.text.tokens import TokenCounter, default_token_counter, truncate_to_tokens
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    # the host: MemoryManager by its shape (retrieval/parts.py; docs/ARCHITECTURE.md)
    from hello_memory.retrieval.parts import SearchHost

__all__ = [
    "DETAIL_KEYWORDS_EN", "DETAIL_KEYWORDS_ZH", "ContextPlan", "IndexLayer",
    "ProgressiveLoader", "TimelineLayer", "TokenMetrics", "Topic", "available_tokens",
    "hit_relevance", "is_detail_seeking", "optimize_context", "term_share", "topic_key",
]

DETAIL_KEYWORDS_EN = ("exactly", "specifically", "details", "detail", "detailed",
                      "precisely", "verbatim", "full text", "quote")
DETAIL_KEYWORDS_ZH = ("具体", "详细", "原文", "准确", "确切", "完整", "细节")
_DETAIL_EN_RE = re.compile(r"\b(?:" + "|".join(map(re.escape, DETAIL_KEYWORDS_EN)) + r")\b",
                           re.IGNORECASE)
ContextItem = Mapping[str, Any] | SearchHit | str
Render = Callable[[Mapping[str, Any]], str]


def _check_tokens(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass
class TokenMetrics:
    """Tokens spent per layer, and the share saved against loading every memory."""

    layer1_tokens: int = 0
    layer2_tokens: int = 0
    layer3_tokens: int = 0
    total_tokens: int = 0
    estimated_savings_percent: float = 0.0

    def calculate_savings(self, total_available: int) -> None:
        """Savings against ``total_available`` tokens (all memories in full), >= 0."""
        used = self.layer1_tokens + self.layer2_tokens + self.layer3_tokens
        self.total_tokens = used
        self.estimated_savings_percent = (
            round(max(0.0, (total_available - used) / total_available * 100), 1)
            if total_available > 0 else 0.0)


def topic_key(item: MemoryItem) -> str:
    """``metadata["topic"]``, else ``session_id``, else the memory's own id (the same
    key the record store keeps in its indexed ``topic`` column)."""
    return item_topic(item)


@lru_cache(maxsize=256)
def _query_terms(query: str) -> frozenset[str]:
    return frozenset(tokenize(query, remove_stopwords=True) or tokenize(query))


def term_share(query: str, content: str) -> float:
    """Share of the query's terms (stopwords out, unless that leaves none) found in
    ``content``: lexical evidence on the same [0, 1] scale as a cosine."""
    terms = _query_terms(query)
    return len(terms & set(tokenize(content))) / len(terms) if terms else 0.0


# Views whose raw score is already an absolute [0, 1] match: the dense cosine, and
# working memory's own blend of TF-IDF cosine and keyword share.
_ABSOLUTE_VIEWS = ("semantic", "working", "perceptual")


def hit_relevance(hit: SearchHit, query: str | None = None) -> float:
    """How well one hit matches the query, in [0, 1]: its strongest absolute evidence.

    Final scores blend in recency and importance and use different weights per memory
    type, so they are not comparable across types and never reach 1. A per-type search
    hit's evidence parts (cosine similarity, graph score, keyword share) are each in
    [0, 1] and mean the same thing for every type. A hybrid hit's
    ``breakdown.similarity`` is the fused relevance normalised to the query's best hit:
    the top hit gets 1.0 however poorly it matches, so it cannot gate. Its evidence is
    read from the views instead: the semantic (or perceptual) view's cosine, the
    working view's score, the graph view's score (1 for a memory that names an entity of
    the query, 1/(1 + hops) for a neighbour's), and, with ``query``, the share of the
    query's terms the memory contains (:func:`term_share`; BM25 scores are unbounded).
    """
    b = hit.breakdown
    if not (hit.views or hit.fused or hit.context):  # the per-type recipe
        return min(1.0, max(0.0, b.similarity, b.graph, b.keyword))
    parts = [b.keyword] + [hit.views[v].score for v in _ABSOLUTE_VIEWS if v in hit.views]
    if "graph" in hit.views:
        parts.append(hit.views["graph"].score)
    if query is not None:
        parts.append(term_share(query, hit.item.content))
    return min(1.0, max(0.0, *parts))


@dataclass(frozen=True)
class Topic:
    """A group of hits sharing a :func:`topic_key`; ``hits`` best first, ``relevance``
    the best hit's :func:`hit_relevance`, ``latest_time`` the newest hit's event time."""

    key: str
    label: str
    relevance: float
    hits: tuple[SearchHit, ...]
    latest_time: datetime


class IndexLayer:
    """Layer 1: the topics a query touches, each rendered as one short index line."""

    def __init__(self, manager: SearchHost, *, token_counter: TokenCounter | None = None,
                 label_tokens: int = 12) -> None:
        self.manager = manager
        self.counter = token_counter or default_token_counter()
        self.label_tokens = label_tokens

    def find_relevant_topics(self, query: str, *, namespace: str | None = None,
                             threshold: float = 0.5, limit: int = 20,
                             exclude: Collection[str] = ()) -> list[Topic]:
        """Topics of the top ``limit`` hits with relevance >= ``threshold``, best first;
        hits whose id is in ``exclude`` are dropped before grouping."""
        groups: dict[str, list[tuple[float, SearchHit]]] = {}
        for hit in self.manager.search(query, top_k=limit, namespace=namespace):
            if hit.id not in exclude:
                groups.setdefault(topic_key(hit.item), []).append(
                    (hit_relevance(hit, query), hit))
        topics = []
        for key, scored in groups.items():
            scored.sort(key=lambda p: -p[0])
            hits = [h for _, h in scored]
            best = _one_line(hits[0].item.content)
            label = truncate_to_tokens(best, self.label_tokens, self.counter)
            topics.append(Topic(key, label + ("…" if label != best else ""),
                                scored[0][0], tuple(hits),
                                max(h.item.event_time for h in hits)))
        topics.sort(key=lambda t: (-t.relevance, -t.latest_time.timestamp()))
        return [t for t in topics if t.relevance >= threshold]

    def render(self, topic: Topic) -> str:
        """One index line; the count is of the topic's memories that matched the query.
        A topic that is one memory's own id shows the id's first 8 characters: a whole
        UUID costs about 25 tokens, and how many varies from id to id."""
        n = len(topic.hits)
        key = topic.key[:8] if any(h.id == topic.key for h in topic.hits) else topic.key
        return (f"[{key}] {topic.label} · {n} memor{'y' if n == 1 else 'ies'}"
                f" · latest {topic.latest_time.date().isoformat()}")

    def render_index(self, topics: Sequence[Topic], max_tokens: int | None = None) -> str:
        """The index text; with ``max_tokens``, only the whole lines that fit (in order)."""
        lines: list[str] = []
        for topic in topics:
            text = "\n".join([*lines, self.render(topic)])
            # Count the joined text, not line by line: real tokenizers count newlines.
            if max_tokens is not None and self.counter.count(text) > max_tokens:
                break
            lines.append(self.render(topic))
        return "\n".join(lines)


class TimelineLayer:
    """Layer 2: a topic's most recent memories, one truncated line each."""

    def __init__(self, manager: SearchHost, *, token_counter: TokenCounter | None = None,
                 entries: int = 3, content_tokens: int = 24) -> None:
        self.manager = manager
        self.counter = token_counter or default_token_counter()
        self.entries = entries
        self.content_tokens = content_tokens

    @staticmethod
    def prefix(item: MemoryItem) -> str:
        """``"<date> <type>: "``, the head of every timeline line."""
        return f"{item.event_time.date().isoformat()} {item.memory_type.value}: "

    def render(self, item: MemoryItem) -> str:
        text = _one_line(item.content)
        short = truncate_to_tokens(text, self.content_tokens, self.counter)
        return self.prefix(item) + short + ("…" if short != text else "")

    def recent(self, topic: Topic, *, namespace: str | None = None,
               pool: Sequence[MemoryItem] | None = None, limit: int | None = None
               ) -> list[MemoryItem]:
        """Newest first: a topic's timeline covers all of its memories, not just the
        ones that matched. Read from the record store's topic index (bounded by the
        limit) plus working memory, unless ``pool`` gives the memories to choose from."""
        return self.recent_many([topic], namespace=namespace, pool=pool, limit=limit)[topic.key]

    def recent_many(self, topics: Sequence[Topic], *, namespace: str | None = None,
                    pool: Sequence[MemoryItem] | None = None, limit: int | None = None,
                    exclude: Collection[str] = ()) -> dict[str, list[MemoryItem]]:
        """:meth:`recent` of several topics in one record-store transaction (one
        indexed LIMIT query per topic); memories whose id is in ``exclude`` left out."""
        k = self.entries if limit is None else limit
        ns = require_namespace(self.manager.default_namespace if namespace is None
                               else namespace)
        keys = [t.key for t in topics]
        members: dict[str, dict[str, MemoryItem]] = {key: {} for key in keys}
        if pool is None:
            # Excluded ids may take LIMIT slots: ask for that many more.
            stored = self.manager.stores.records.memories.recent_by_topic(
                ns, keys, k + len(exclude))
            for key, items in stored.items():
                members[key].update((i.id, i) for i in items)
            pool = self.manager.working.list(ns)  # capped by working-memory capacity
        for item in pool:
            key = topic_key(item)
            if key in members:
                members[key][item.id] = item
        out: dict[str, list[MemoryItem]] = {}
        for topic in topics:
            found = members[topic.key]
            found.update((h.id, h.item) for h in topic.hits if h.id not in found)
            ordered = sorted((i for i in found.values() if i.id not in exclude),
                             key=lambda i: (-i.event_time.timestamp(), i.id))
            out[topic.key] = ordered[:k]
        return out


def available_tokens(manager: SearchHost, namespace: str | None) -> int:
    """Tokens of every live memory of a namespace (the savings baseline): the record
    store's running total of its active memories plus working memory's, O(1)."""
    ns = require_namespace(manager.default_namespace if namespace is None else namespace)
    return manager.stores.records.memories.namespace_totals(ns)[1] + manager.working.tokens(ns)


def _pack(entries: list[dict[str, Any]], room: int, cost: Callable[[Mapping[str, Any]], int]
          ) -> tuple[list[dict[str, Any]], int]:
    """Greedy, in order, whole entries only (a later, smaller one may still fit):
    the entries kept and the tokens they cost."""
    kept, spent = [], 0
    for entry in entries:
        c = cost(entry)
        if spent + c <= room:
            kept.append(entry)
            spent += c
    return kept, spent


def _stored_first(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries of stored memories first, working memory's after, each in its order."""
    return sorted(entries, key=lambda e: e["type"] == MemoryType.WORKING.value)


def is_detail_seeking(query: str) -> bool:
    return bool(_DETAIL_EN_RE.search(query)) or any(k in query for k in DETAIL_KEYWORDS_ZH)


@dataclass
class ContextPlan:
    """What :func:`optimize_context` kept, what it left out (with why), and the cost."""

    included: list[ContextItem] = field(default_factory=list)
    left_out: list[tuple[ContextItem, str]] = field(default_factory=list)
    tokens: int = 0


def _text_and_id(item: ContextItem) -> tuple[str, str | None]:
    if isinstance(item, SearchHit):
        return item.item.content, item.id
    if isinstance(item, str):
        return item, None
    if isinstance(item, Mapping):
        ident = item.get("id")
        return str(item.get("content") or ""), None if ident is None else str(ident)
    raise InvalidInputError(f"cannot put a {type(item).__name__} into a context")


def optimize_context(items: Sequence[ContextItem], budget: int, *,
                     token_counter: TokenCounter | None = None) -> ContextPlan:
    """Greedy, in the given order, whole items only: an item that does not fit the
    remaining budget is skipped, and later (smaller) items are still tried."""
    budget = _check_tokens(budget, "budget")
    counter = token_counter or default_token_counter()
    plan = ContextPlan()
    seen: set[str] = set()
    for item in items:
        text, ident = _text_and_id(item)
        # Duplicates by id when there is one, else by the text itself.
        key = f"id:{ident}" if ident is not None else f"text:{_one_line(text)}"
        if not text.strip():
            plan.left_out.append((item, "empty"))
        elif key in seen:
            plan.left_out.append((item, "duplicate"))
        elif plan.tokens + (cost := counter.count(text)) > budget:
            plan.left_out.append((item, "over budget"))
        else:
            seen.add(key)
            plan.included.append(item)
            plan.tokens += cost
    return plan


class ProgressiveLoader:
    """Loads index → timeline → full memories of a :class:`MemoryManager` (any
    :class:`~hello_memory.retrieval.parts.SearchHost`) under a budget.

    ``metrics`` describe the last :meth:`load_relevant_context` call (or manual
    :meth:`track_token_usage` calls) and ``last_index`` holds that call's index text
    (layer 1, counted in the budget but not among the returned memories). One loader
    is not meant for concurrent calls.

    ``standing_share`` (0 = off) is the most of the budget the standing facts may take:
    up to ``standing_limit`` active semantic memories of importance at least
    ``standing_min_importance``, most important first, whole; they are full memories
    (layer 3 in the metrics) with ``layer: "standing"``. The savings baseline is the
    namespace's token total as the record store counts it (the default token counter),
    whatever ``token_counter`` this loader spends its budget with.
    """

    DESCRIPTIONS = {1: "Index (topics)", 2: "Timeline (recent entries)", 3: "Full memories"}

    def __init__(self, manager: SearchHost, *, token_counter: TokenCounter | None = None,
                 relevance_threshold: float = 0.5, high_relevance_threshold: float = 0.8,
                 timeline_entries: int = 3, default_max_tokens: int = 2000,
                 standing_share: float = 0.0, standing_limit: int = 3,
                 standing_min_importance: float = 0.6) -> None:
        if not 0.0 <= relevance_threshold <= high_relevance_threshold <= 1.0:
            raise InvalidInputError("need 0 <= relevance_threshold <= "
                                    "high_relevance_threshold <= 1")
        if _check_tokens(timeline_entries, "timeline_entries") < 1:
            raise InvalidInputError("timeline_entries must be at least 1")
        if not 0.0 <= standing_share <= 1.0 or not 0.0 <= standing_min_importance <= 1.0:
            raise InvalidInputError("standing_share and standing_min_importance must be "
                                    "in [0, 1]")
        self.manager = manager
        self.counter = token_counter or default_token_counter()
        self.relevance_threshold = relevance_threshold
        self.high_relevance_threshold = high_relevance_threshold
        self.default_max_tokens = _check_tokens(default_max_tokens, "default_max_tokens")
        self.standing_share = standing_share
        self.standing_limit = _check_tokens(standing_limit, "standing_limit")
        self.standing_min_importance = standing_min_importance
        self.index = IndexLayer(manager, token_counter=self.counter)
        self.timeline = TimelineLayer(manager, token_counter=self.counter,
                                      entries=timeline_entries)
        self._metrics = TokenMetrics()
        self.last_index = ""

    def load_relevant_context(self, query: str, max_tokens: int | None = None, *,
                              namespace: str | None = None, exclude: Collection[str] = (),
                              working_last: bool = False, render: Render | None = None,
                              charge_index: bool = True
                              ) -> tuple[list[dict[str, Any]], TokenMetrics]:
        """Memories for ``query`` as dicts (id, type, layer, content, topic, relevance,
        event_time) and the token metrics; ``metrics.total_tokens <= max_tokens``.

        ``exclude``: memory ids never handed out (the turn being answered).
        ``working_last``: stored memories are packed (and returned) before working
        memory, so the conversation itself never outranks what was remembered.
        ``render``: the text the caller will show for an entry (its id, a prefix);
        each entry is then charged that text's tokens instead of its content's.
        ``charge_index=False``: the caller does not show the index (``last_index``), so
        it costs nothing (``layer1_tokens`` 0) and the whole budget goes to memories.
        Standing facts come last whatever the order of the rest."""
        budget = _check_tokens(self.default_max_tokens if max_tokens is None else max_tokens,
                               "max_tokens")
        ns = require_namespace(self.manager.default_namespace if namespace is None
                               else namespace)
        exclude = frozenset(exclude)
        shown_text = render or (lambda e: str(e["content"]))

        def cost(entry: Mapping[str, Any]) -> int:
            return self.counter.count(shown_text(entry))

        self._metrics = m = TokenMetrics()
        available = available_tokens(self.manager, ns)
        # Layer 1: the index of every topic the search touched (what the loader scans to
        # choose), charged even when none is relevant, as in the seed.
        topics = self.index.find_relevant_topics(query, namespace=ns, threshold=0.0,
                                                 exclude=exclude)
        # Unbudgeted when uncharged: the whole index, and no counting to pay for it.
        self.last_index = self.index.render_index(topics, budget if charge_index else None)
        m.layer1_tokens = self.counter.count(self.last_index) if charge_index else 0
        relevant = [t for t in topics if t.relevance >= self.relevance_threshold]
        # Standing facts: what they need of their share is reserved before the timeline;
        # one that the timeline or full layer shows anyway is not repeated at the end.
        standing, reserve = _pack(
            self._standing(ns, exclude),
            min(int(budget * self.standing_share), budget - m.layer1_tokens), cost)
        # Layer 2: recent entries of the relevant topics, best topic first.
        recent = self.timeline.recent_many(relevant, namespace=ns, exclude=exclude)
        entries = [self._entry(item, topic, "timeline", self.timeline.render(item),
                               topic.relevance)
                   for topic in relevant for item in recent[topic.key]]
        if working_last:
            entries = _stored_first(entries)
        timeline, m.layer2_tokens = _pack(entries, budget - m.layer1_tokens - reserve, cost)
        full: list[dict[str, Any]] = []
        if relevant and not self.sufficient_context(timeline, query):
            full = self._full(query, relevant, timeline, m, budget - reserve, cost,
                              working_last)
        shown = {e["id"] for e in full + timeline}
        standing = [e for e in standing if e["id"] not in shown]
        m.layer3_tokens += sum(cost(e) for e in standing)
        m.calculate_savings(available)
        out = full + timeline
        return (_stored_first(out) if working_last else out) + standing, replace(m)

    def _full(self, query: str, relevant: Sequence[Topic], timeline: list[dict[str, Any]],
              m: TokenMetrics, budget: int, cost: Callable[[Mapping[str, Any]], int],
              working_last: bool) -> list[dict[str, Any]]:
        """Layer 3: full contents of the hits of the high-relevance topics (every
        relevant topic for a detail-seeking query). A full memory replaces its own
        timeline line (removed from ``timeline``), so only the difference is charged."""
        wanted = [(topic, hit) for topic in relevant
                  if topic.relevance >= self.high_relevance_threshold
                  or is_detail_seeking(query)
                  for hit in topic.hits]  # topics are disjoint: no memory is seen twice
        if working_last:
            wanted.sort(key=lambda p: p[1].memory_type is MemoryType.WORKING)  # stable
        by_id = {e["id"]: e for e in timeline}
        full: list[dict[str, Any]] = []
        for topic, hit in wanted:
            entry = self._entry(hit.item, topic, "full", hit.item.content,
                                hit_relevance(hit, query))
            line = by_id.get(hit.id)
            freed = cost(line) if line else 0
            if (m.layer1_tokens + m.layer2_tokens - freed + m.layer3_tokens + cost(entry)
                    > budget):
                continue
            if line:
                timeline.remove(line)
                m.layer2_tokens -= freed
            m.layer3_tokens += cost(entry)
            full.append(entry)
        return full

    def standing_facts(self, namespace: str, exclude: Collection[str] = ()) -> list[MemoryItem]:
        """The standing facts of ``namespace``: its most important semantic memories
        (at least ``standing_min_importance``, at most ``standing_limit``), most
        important first; one indexed LIMIT query. The context block shows them too
        (``MemoryTool.get_context_for_query``)."""
        if self.standing_share == 0 or self.standing_limit == 0:
            return []
        facts = self.manager.stores.records.memories.list_items(
            namespace, ItemFilter(memory_types=(MemoryType.SEMANTIC,),
                                  min_importance=self.standing_min_importance),
            order="-importance", limit=self.standing_limit + len(exclude))
        return [i for i in facts if i.id not in exclude][:self.standing_limit]

    def _standing(self, namespace: str, exclude: Collection[str]) -> list[dict[str, Any]]:
        """Standing-fact candidates as loader entries."""
        return [{"id": i.id, "type": i.memory_type.value, "layer": "standing",
                 "content": i.content, "topic": topic_key(i), "relevance": 0.0,
                 "event_time": i.event_time}
                for i in self.standing_facts(namespace, exclude)]

    @staticmethod
    def _entry(item: MemoryItem, topic: Topic, layer: str, content: str,
               relevance: float) -> dict[str, Any]:
        return {"id": item.id, "type": item.memory_type.value, "layer": layer,
                "content": content, "topic": topic.key, "relevance": round(relevance, 4),
                "event_time": item.event_time}

    def sufficient_context(self, memories: Any, query: str) -> bool:
        """Seed heuristics: nothing → no; detail-seeking query → no; otherwise try what
        we have (three or more entries are likely enough, fewer are tried first too)."""
        if not memories:
            return False
        # Three or more entries are likely enough; fewer are tried first too (the seed's
        # "use what we have"), so only a detail-seeking query asks for full memories.
        return not is_detail_seeking(query)

    # --- metrics ----------------------------------------------------------------------
    def track_token_usage(self, layer: int, tokens: int) -> None:
        """Add ``tokens`` to one layer (1, 2 or 3) and update the total."""
        if isinstance(layer, bool) or layer not in (1, 2, 3):
            raise InvalidInputError(f"layer must be 1, 2 or 3, got {layer!r}")
        tokens = _check_tokens(tokens, "tokens")
        name = f"layer{layer}_tokens"
        setattr(self._metrics, name, getattr(self._metrics, name) + tokens)
        m = self._metrics
        m.total_tokens = m.layer1_tokens + m.layer2_tokens + m.layer3_tokens

    def get_token_metrics(self) -> TokenMetrics:
        """A copy of the current metrics."""
        return replace(self._metrics)

    def reset_metrics(self) -> None:
        self._metrics = TokenMetrics()

    def get_layer_summary(self) -> dict[str, Any]:
        m = self._metrics
        total = m.layer1_tokens + m.layer2_tokens + m.layer3_tokens
        summary: dict[str, Any] = {}
        for n, tokens in ((1, m.layer1_tokens), (2, m.layer2_tokens), (3, m.layer3_tokens)):
            summary[f"layer{n}"] = {"tokens": tokens, "description": self.DESCRIPTIONS[n],
                                    "percent": round(tokens / total * 100, 1) if total else 0.0}
        summary["total_tokens"] = total
        summary["estimated_savings_percent"] = m.estimated_savings_percent
        return summary
