"""Progressive disclosure: load just enough memory for a query under a token budget.

Three layers, from cheap to detailed (seed 003, "Progressive Loader"):

1. **index**: one short line per topic found by :meth:`MemoryManager.search`;
2. **timeline**: the most recent entries of each relevant topic, one truncated line each;
3. **full**: complete contents of the matching memories, only when the timeline is not
   enough (a detail-seeking query, or no timeline at all).

A memory's topic is ``metadata["topic"]`` when set, else its ``session_id``, else its
own id. The budget is never exceeded: every text handed out (the index included) is
counted, and items are added whole or not at all.

>>> loader = ProgressiveLoader(manager)                               # doctest: +SKIP
>>> memories, metrics = loader.load_relevant_context("how did we fix the db pool?")
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hello_memory.errors import InvalidInputError
from hello_memory.memory.scoring import SearchHit
from hello_memory.text.tokens import TokenCounter, default_token_counter, truncate_to_tokens
from hello_memory.types import MemoryItem
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = [
    "DETAIL_KEYWORDS_EN", "DETAIL_KEYWORDS_ZH", "ContextPlan", "IndexLayer",
    "ProgressiveLoader", "TimelineLayer", "TokenMetrics", "Topic", "hit_relevance",
    "is_detail_seeking", "optimize_context", "topic_key",
]

DETAIL_KEYWORDS_EN = ("exactly", "specifically", "details", "detail", "detailed",
                      "precisely", "verbatim", "full text", "quote")
DETAIL_KEYWORDS_ZH = ("具体", "详细", "原文", "准确", "确切", "完整", "细节")
_DETAIL_EN_RE = re.compile(r"\b(?:" + "|".join(map(re.escape, DETAIL_KEYWORDS_EN)) + r")\b",
                           re.IGNORECASE)
ContextItem = Mapping[str, Any] | SearchHit | str


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
    """``metadata["topic"]``, else ``session_id``, else the memory's own id."""
    topic = item.metadata.get("topic")
    if topic is not None and str(topic).strip():
        return _one_line(str(topic))  # keys are printed in one-line index entries
    return item.session_id or item.id


def hit_relevance(hit: SearchHit) -> float:
    """How well one hit matches the query, in [0, 1].

    Final scores blend in recency and importance and use different weights per memory
    type, so they are not comparable across types and never reach 1. The evidence parts
    (cosine similarity, graph score, keyword share) are each in [0, 1] and mean the same
    thing for every type; the strongest one is the hit's relevance.
    """
    b = hit.breakdown
    return min(1.0, max(0.0, b.similarity, b.graph, b.keyword))


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

    def __init__(self, manager: MemoryManager, *, token_counter: TokenCounter | None = None,
                 label_tokens: int = 12) -> None:
        self.manager = manager
        self.counter = token_counter or default_token_counter()
        self.label_tokens = label_tokens

    def find_relevant_topics(self, query: str, *, namespace: str | None = None,
                             threshold: float = 0.5, limit: int = 20) -> list[Topic]:
        """Topics of the top ``limit`` hits with relevance >= ``threshold``, best first."""
        groups: dict[str, list[SearchHit]] = {}
        for hit in self.manager.search(query, top_k=limit, namespace=namespace):
            groups.setdefault(topic_key(hit.item), []).append(hit)
        topics = []
        for key, hits in groups.items():
            hits.sort(key=lambda h: -hit_relevance(h))
            best = _one_line(hits[0].item.content)
            label = truncate_to_tokens(best, self.label_tokens, self.counter)
            topics.append(Topic(key, label + ("…" if label != best else ""),
                                hit_relevance(hits[0]), tuple(hits),
                                max(h.item.event_time for h in hits)))
        topics.sort(key=lambda t: (-t.relevance, -t.latest_time.timestamp()))
        return [t for t in topics if t.relevance >= threshold]

    def render(self, topic: Topic) -> str:
        """One index line; the count is of the topic's memories that matched the query."""
        n = len(topic.hits)
        return (f"[{topic.key}] {topic.label} · {n} memor{'y' if n == 1 else 'ies'}"
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

    def __init__(self, manager: MemoryManager, *, token_counter: TokenCounter | None = None,
                 entries: int = 3, content_tokens: int = 24) -> None:
        self.manager = manager
        self.counter = token_counter or default_token_counter()
        self.entries = entries
        self.content_tokens = content_tokens

    def render(self, item: MemoryItem) -> str:
        text = _one_line(item.content)
        short = truncate_to_tokens(text, self.content_tokens, self.counter)
        return (f"{item.event_time.date().isoformat()} {item.memory_type.value}: {short}"
                + ("…" if short != text else ""))

    def recent(self, topic: Topic, *, namespace: str | None = None,
               pool: Sequence[MemoryItem] | None = None, limit: int | None = None
               ) -> list[MemoryItem]:
        """Newest first. ``pool`` is every memory of the namespace (read when None):
        a topic's timeline covers all of its memories, not just the ones that matched."""
        if pool is None:
            pool = namespace_items(self.manager, namespace)
        members = {i.id: i for i in pool if topic_key(i) == topic.key}
        members.update((h.id, h.item) for h in topic.hits if h.id not in members)
        ordered = sorted(members.values(), key=lambda i: (-i.event_time.timestamp(), i.id))
        return ordered[:self.entries if limit is None else limit]


def namespace_items(manager: MemoryManager, namespace: str | None) -> list[MemoryItem]:
    """Every live memory of a namespace: active records plus working memory."""
    ns = require_namespace(manager.default_namespace if namespace is None else namespace)
    return manager.stores.records.list_items(ns) + manager.working.list(ns)


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
    """Loads index → timeline → full memories of a :class:`MemoryManager` under a budget.

    ``metrics`` describe the last :meth:`load_relevant_context` call (or manual
    :meth:`track_token_usage` calls) and ``last_index`` holds that call's index text
    (layer 1, counted in the budget but not among the returned memories). One loader
    is not meant for concurrent calls.
    """

    DESCRIPTIONS = {1: "Index (topics)", 2: "Timeline (recent entries)", 3: "Full memories"}

    def __init__(self, manager: MemoryManager, *, token_counter: TokenCounter | None = None,
                 relevance_threshold: float = 0.5, high_relevance_threshold: float = 0.8,
                 timeline_entries: int = 3, default_max_tokens: int = 2000) -> None:
        if not 0.0 <= relevance_threshold <= high_relevance_threshold <= 1.0:
            raise InvalidInputError("need 0 <= relevance_threshold <= "
                                    "high_relevance_threshold <= 1")
        if _check_tokens(timeline_entries, "timeline_entries") < 1:
            raise InvalidInputError("timeline_entries must be at least 1")
        self.manager = manager
        self.counter = token_counter or default_token_counter()
        self.relevance_threshold = relevance_threshold
        self.high_relevance_threshold = high_relevance_threshold
        self.default_max_tokens = _check_tokens(default_max_tokens, "default_max_tokens")
        self.index = IndexLayer(manager, token_counter=self.counter)
        self.timeline = TimelineLayer(manager, token_counter=self.counter,
                                      entries=timeline_entries)
        self._metrics = TokenMetrics()
        self.last_index = ""

    def load_relevant_context(self, query: str, max_tokens: int | None = None, *,
                              namespace: str | None = None
                              ) -> tuple[list[dict[str, Any]], TokenMetrics]:
        """Memories for ``query`` as dicts (id, type, layer, content, topic, relevance,
        event_time) and the token metrics; ``metrics.total_tokens <= max_tokens``."""
        budget = _check_tokens(self.default_max_tokens if max_tokens is None else max_tokens,
                               "max_tokens")
        self._metrics = m = TokenMetrics()
        # One read of the namespace per call: timelines and the savings baseline share it.
        pool = namespace_items(self.manager, namespace)
        available = sum(self.counter.count(i.content) for i in pool)
        # Layer 1: the index of every topic the search touched (what the loader scans to
        # choose), charged even when none is relevant, as in the seed.
        topics = self.index.find_relevant_topics(query, namespace=namespace, threshold=0.0)
        self.last_index = self.index.render_index(topics, budget)
        m.layer1_tokens = self.counter.count(self.last_index)
        relevant = [t for t in topics if t.relevance >= self.relevance_threshold]
        if not relevant:
            m.calculate_savings(available)
            return [], replace(m)
        # Layer 2: recent entries of the relevant topics, best topic first.
        entries = [self._entry(item, topic, "timeline", self.timeline.render(item),
                               topic.relevance)
                   for topic in relevant for item in self.timeline.recent(topic, pool=pool)]
        plan = optimize_context(entries, budget - m.layer1_tokens, token_counter=self.counter)
        kept = {id(e) for e in plan.included}
        timeline = [e for e in entries if id(e) in kept]
        m.layer2_tokens = plan.tokens
        if self.sufficient_context(timeline, query):
            m.calculate_savings(available)
            return timeline, replace(m)
        # Layer 3: full contents. A full memory replaces its own timeline line, so only
        # the difference is charged against the budget.
        wanted = [t for t in relevant if t.relevance >= self.high_relevance_threshold
                  or is_detail_seeking(query)]
        by_id = {e["id"]: e for e in timeline}
        full: list[dict[str, Any]] = []
        for topic in wanted:
            for hit in topic.hits:  # topics are disjoint: no memory is seen twice
                cost = self.counter.count(hit.item.content)
                line = by_id.get(hit.id)
                freed = self.counter.count(line["content"]) if line else 0
                if m.layer1_tokens + m.layer2_tokens - freed + m.layer3_tokens + cost > budget:
                    continue
                if line:
                    timeline.remove(line)
                    m.layer2_tokens -= freed
                m.layer3_tokens += cost
                full.append(self._entry(hit.item, topic, "full", hit.item.content,
                                        hit_relevance(hit)))
        m.calculate_savings(available)
        return full + timeline, replace(m)

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
