"""Task-aware retrieval (seed 000): weights over memory categories chosen by task type.

A memory's **category** is ``metadata["category"]`` when it names one (``skills`` for
skills/procedures, ``anti_patterns`` for anti-patterns/lessons/mistakes, or any category
a configured strategy weights), else its memory type (working memory counts as
episodic). :data:`TASK_STRATEGIES` gives, per task type, the weight of each category;
:func:`detect_task_type` picks the task type from a context dict (goal keywords x2,
action type x3, phase x4; "implementation" when nothing matches).

:class:`TaskAwareRetriever` runs the hybrid retriever for the context's query, multiplies
each hit's score by its category's weight (``_weighted_score``) and re-ranks. Namespaces:
:meth:`~TaskAwareRetriever.with_namespace`, :meth:`~TaskAwareRetriever.retrieve_cross_namespace`
(other namespaces x 0.9), :meth:`~TaskAwareRetriever.retrieve_with_inheritance`
(``a/b/c`` -> ``a/b`` -> ``a`` -> ``global``). Token budgets:
:meth:`~TaskAwareRetriever.retrieve_with_budget` (20% topic index, 40% summaries, the
rest full memories). Without an embedder (or ``use_embeddings=False``) every search
falls back to the keyword views (BM25, symbolic, graph).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from hello_memory.config import RetrievalSettings
from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.memory.scoring import SearchHit
from hello_memory.retrieval.hybrid import HybridRetriever
from hello_memory.retrieval.parts import HasSearchParts, SearchHost
from hello_memory.retrieval.progressive import optimize_context, topic_key
from hello_memory.stores.records import ItemFilter
from hello_memory.text.tokens import TokenCounter, default_token_counter, truncate_to_tokens
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import require_namespace

__all__ = [
    "CATEGORIES", "CROSS_NAMESPACE_FACTOR", "GLOBAL_NAMESPACE", "RetrieverHost", "TASK_SIGNALS",
    "TASK_STRATEGIES", "TaskAwareRetriever", "category_of", "detect_task_type",
]


class RetrieverHost(SearchHost, HasSearchParts, Protocol):
    """The task-aware retriever's host: a :class:`~hello_memory.retrieval.parts.SearchHost`
    that also lends its engine (shared, not rebuilt) and its parts (to build another).
    ``MemoryManager`` is one by its shape (docs/ARCHITECTURE.md, Layers). It lives
    beside the engine it names, so that ``retrieval/parts.py`` never imports it."""

    @property
    def retriever(self) -> HybridRetriever: ...


CATEGORIES = ("episodic", "semantic", "skills", "anti_patterns")
CROSS_NAMESPACE_FACTOR = 0.9
GLOBAL_NAMESPACE = "global"
LAYER1_SHARE, LAYER2_SHARE = 0.2, 0.4

TASK_STRATEGIES: dict[str, dict[str, float]] = {
    "exploration": {"episodic": 0.25, "semantic": 0.40, "skills": 0.25, "anti_patterns": 0.10},
    "implementation": {"episodic": 0.20, "semantic": 0.30, "skills": 0.40,
                       "anti_patterns": 0.10},
    "debugging": {"episodic": 0.35, "semantic": 0.15, "skills": 0.15, "anti_patterns": 0.35},
    "review": {"episodic": 0.20, "semantic": 0.30, "skills": 0.20, "anti_patterns": 0.30},
    "refactoring": {"episodic": 0.20, "semantic": 0.30, "skills": 0.35, "anti_patterns": 0.15},
}

TASK_SIGNALS: dict[str, dict[str, list[str]]] = {
    "exploration": {
        "keywords": ["explore", "understand", "investigate", "research", "learn", "what is",
                     "how does", "overview", "find out", "了解", "调研", "探索", "研究"],
        "actions": ["read_file", "search", "list_files", "browse", "query"],
        "phases": ["exploration", "discovery", "research", "planning", "analysis"],
    },
    "implementation": {
        "keywords": ["implement", "add", "create", "build", "write", "feature", "support",
                     "实现", "添加", "新增", "开发"],
        "actions": ["write_file", "create_file", "edit_file", "generate"],
        "phases": ["implementation", "development", "coding", "build"],
    },
    "debugging": {
        "keywords": ["fix", "bug", "error", "fail", "crash", "broken", "debug", "exception",
                     "traceback", "修复", "错误", "报错", "崩溃", "调试"],
        "actions": ["run_test", "debug", "inspect", "reproduce", "read_logs"],
        "phases": ["debugging", "troubleshooting", "bugfix", "incident"],
    },
    "review": {
        "keywords": ["review", "check", "audit", "verify", "assess", "feedback", "审查", "评审",
                     "检查"],
        "actions": ["review", "comment", "approve", "diff"],
        "phases": ["review", "code review", "qa", "verification"],
    },
    "refactoring": {
        "keywords": ["refactor", "restructure", "clean up", "simplify", "rename", "extract",
                     "reorganize", "重构", "整理", "简化"],
        "actions": ["rename", "move", "extract_method", "inline"],
        "phases": ["refactoring", "cleanup", "maintenance"],
    },
}

_CATEGORY_ALIASES = {
    "skill": "skills", "skills": "skills", "procedure": "skills", "procedures": "skills",
    "procedural": "skills", "anti_pattern": "anti_patterns", "anti_patterns": "anti_patterns",
    "antipattern": "anti_patterns", "lesson": "anti_patterns", "lessons": "anti_patterns",
    "mistake": "anti_patterns", "mistakes": "anti_patterns",
}
_QUERY_KEYS = ("goal", "query", "description", "error", "task")


def category_of(item: MemoryItem, known: Sequence[str] = CATEGORIES) -> str:
    """The memory's category (see the module docstring)."""
    raw = item.metadata.get("category")
    if isinstance(raw, str) and raw.strip():
        name = raw.strip().lower()
        name = _CATEGORY_ALIASES.get(name, name)
        if name in known:
            return name
    if item.memory_type == MemoryType.SEMANTIC:
        return "semantic"
    return "episodic"


def detect_task_type(context: Mapping[str, Any],
                     signals: Mapping[str, Mapping[str, Sequence[str]]] | None = None) -> str:
    """The task type whose signals score highest: each goal keyword found counts 2,
    an action type 3, a phase 4; "implementation" when nothing matches."""
    if not isinstance(context, Mapping):
        raise InvalidInputError("context must be a mapping (goal, action_type, phase, ...)")
    goal = str(context.get("goal") or "").lower()
    action = str(context.get("action_type") or "").lower()
    phase = str(context.get("phase") or "").lower()
    scores: dict[str, int] = {}
    for task_type, sig in (signals or TASK_SIGNALS).items():
        s = 2 * sum(1 for k in sig.get("keywords", ()) if k.lower() in goal)
        s += 3 * sum(1 for a in sig.get("actions", ()) if action and a.lower() in action)
        s += 4 * sum(1 for p in sig.get("phases", ()) if phase and p.lower() in phase)
        scores[task_type] = s
    best = max(scores, key=lambda k: scores[k], default="implementation")
    return best if scores.get(best) else "implementation"


def _check_strategies(strategies: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for task, weights in strategies.items():
        if not weights:
            raise InvalidInputError(f"task strategy {task!r} has no category weights")
        for cat, w in weights.items():
            if not isinstance(w, (int, float)) or w < 0:
                raise InvalidInputError(f"task strategy {task!r}: weight of {cat!r} must be "
                                        f"a number >= 0, got {w!r}")
        out[task] = {c: float(w) for c, w in weights.items()}
    return out


class TaskAwareRetriever:
    """Seed 000's ``MemoryRetrieval`` over a :class:`MemoryManager`.

    Args:
        manager: the memory front door (its stores, working memory, engine and search
            parts; any :class:`~hello_memory.retrieval.parts.RetrieverHost`).
        namespace: the namespace searched (default: the manager's default namespace).
        retriever: a configured :class:`HybridRetriever` to share (default: a new one).
        settings: retrieval settings; ``task_strategies`` there add or override
            strategies of :data:`TASK_STRATEGIES`.
        strategies / signals: explicit overrides (merged over the defaults).
        use_embeddings: False forces the keyword fallback.
    """

    def __init__(
        self,
        manager: RetrieverHost,
        *,
        namespace: str | None = None,
        retriever: HybridRetriever | None = None,
        settings: RetrievalSettings | None = None,
        strategies: Mapping[str, Mapping[str, float]] | None = None,
        signals: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
        use_embeddings: bool = True,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.manager = manager
        # The manager's own engine unless told otherwise: task-aware retrieval re-weights
        # the one search's results, it does not rank on its own (docs/RETRIEVAL.md).
        if retriever is None and settings is None and use_embeddings:
            retriever = manager.retriever
        self.settings = settings or (retriever.settings if retriever else RetrievalSettings())
        self.retriever = retriever or HybridRetriever(manager, settings=self.settings,
                                                      use_embeddings=use_embeddings)
        self.namespace = require_namespace(namespace or manager.default_namespace)
        self.strategies = _check_strategies({**TASK_STRATEGIES, **self.settings.task_strategies,
                                             **(strategies or {})})
        self.signals = {**TASK_SIGNALS, **(signals or {})}
        self.use_embeddings = use_embeddings and self.retriever.use_embeddings
        self.counter = token_counter or default_token_counter()
        self._topic_index: dict[str, dict[str, Any]] = {}

    @property
    def categories(self) -> list[str]:
        return list(dict.fromkeys([*CATEGORIES, *(c for w in self.strategies.values()
                                                  for c in w)]))

    def with_namespace(self, namespace: str) -> TaskAwareRetriever:
        """The same retriever scoped to ``namespace`` (stores and settings shared)."""
        other = TaskAwareRetriever(self.manager, namespace=namespace, retriever=self.retriever,
                                   settings=self.settings, strategies=self.strategies,
                                   signals=self.signals, use_embeddings=self.use_embeddings,
                                   token_counter=self.counter)
        return other

    def detect_task_type(self, context: Mapping[str, Any]) -> str:
        return detect_task_type(context, self.signals)

    def _task_type(self, context: Mapping[str, Any]) -> str:
        given = context.get("task_type")
        if given is not None:
            if given not in self.strategies:
                raise InvalidInputError(f"unknown task_type {given!r}; use one of "
                                        f"{sorted(self.strategies)}")
            return str(given)
        return self.detect_task_type(context)

    @staticmethod
    def build_query(context: Mapping[str, Any]) -> str:
        """The search text of a context: goal, query, description, error, task."""
        if not isinstance(context, Mapping):
            raise InvalidInputError("context must be a mapping (goal, action_type, phase, ...)")
        parts = [str(context[k]).strip() for k in _QUERY_KEYS if context.get(k)]
        text = " ".join(p for p in parts if p)
        if not text:
            raise InvalidInputError("context has nothing to search for: give a goal or query")
        return text

    # --- retrieval --------------------------------------------------------------------
    def _fit(self, rows: list[dict[str, Any]], budget: int) -> tuple[list[dict[str, Any]], int]:
        """The rows :func:`optimize_context` keeps within ``budget``, and their tokens."""
        plan = optimize_context(rows, budget, token_counter=self.counter)
        kept = {id(x) for x in plan.included}
        return [r for r in rows if id(r) in kept], plan.tokens

    def _row(self, hit: SearchHit, weights: Mapping[str, float]) -> dict[str, Any]:
        cat = category_of(hit.item, self.categories)
        return {"id": hit.id, "content": hit.item.content,
                "memory_type": hit.memory_type.value, "event_time": hit.item.event_time,
                "metadata": dict(hit.item.metadata), "importance": hit.item.importance,
                "_source": cat, "_score": hit.score, "_namespace": hit.item.namespace,
                "_weighted_score": hit.score * weights.get(cat, 0.0)}

    def retrieve_task_aware(self, context: Mapping[str, Any], top_k: int = 5,
                            token_budget: int | None = None) -> list[dict[str, Any]]:
        """Memories for the context, re-ranked by the task type's category weights;
        with ``token_budget``, trimmed to fit it (whole memories, best first)."""
        task = self._task_type(context)
        weights = self.strategies[task]
        query = self.build_query(context)
        views = None if self.use_embeddings else ("lexical", "symbolic", "graph")
        hits = self.retriever.retrieve(query, max(4 * top_k, 20), namespace=self.namespace,
                                     views=views)
        rows = [self._row(h, weights) for h in hits]
        rows = [r for r in rows if r["_weighted_score"] > 0]
        rows.sort(key=lambda r: -r["_weighted_score"])
        for r in rows:
            r["_task_type"] = task
        rows = rows[:top_k]
        if token_budget is not None:
            rows = self._fit(rows, token_budget)[0]
        return rows

    def retrieve_cross_namespace(self, context: Mapping[str, Any], namespaces: Sequence[str],
                                 top_k: int = 5, token_budget: int | None = None
                                 ) -> list[dict[str, Any]]:
        """Search each of ``namespaces``; results from namespaces other than this one
        count 0.9 of their weighted score; at most ``top_k`` per namespace."""
        if not namespaces:
            raise InvalidInputError("namespaces must name at least one namespace")
        rows: list[dict[str, Any]] = []
        for ns in dict.fromkeys(require_namespace(n) for n in namespaces):
            for row in self.with_namespace(ns).retrieve_task_aware(context, top_k=top_k):
                row["_namespace"] = ns
                if ns != self.namespace:
                    row["_weighted_score"] *= CROSS_NAMESPACE_FACTOR
                rows.append(row)
        rows.sort(key=lambda r: -r["_weighted_score"])
        rows = rows[: top_k * len(namespaces)]
        if token_budget is not None:
            rows = self._fit(rows, token_budget)[0]
        return rows

    def inheritance_chain(self, include_global: bool = True) -> list[str]:
        """This namespace, then its parents (``a/b/c`` -> ``a/b`` -> ``a``), then global."""
        parts = self.namespace.split("/")
        chain = ["/".join(parts[:n]) for n in range(len(parts), 0, -1)]
        if include_global and GLOBAL_NAMESPACE not in chain:
            chain.append(GLOBAL_NAMESPACE)
        return chain

    def retrieve_with_inheritance(self, context: Mapping[str, Any], top_k: int = 5,
                                  include_global: bool = True,
                                  token_budget: int | None = None) -> list[dict[str, Any]]:
        """Child, then parents, then global; each step away weighs 0.9 as much, so a
        more specific namespace wins ties. Identical contents are kept once (the most
        specific)."""
        rows: list[dict[str, Any]] = []
        seen: set[str] = set()
        for depth, ns in enumerate(self.inheritance_chain(include_global)):
            for row in self.with_namespace(ns).retrieve_task_aware(context, top_k=top_k):
                key = row["content"].strip().lower()
                if key in seen:
                    continue
                seen.add(key)
                row["_namespace"] = ns
                row["_inheritance_depth"] = depth
                row["_weighted_score"] *= CROSS_NAMESPACE_FACTOR ** depth
                rows.append(row)
        rows.sort(key=lambda r: (-r["_weighted_score"], r["_inheritance_depth"]))
        rows = rows[:top_k]
        if token_budget is not None:
            rows = self._fit(rows, token_budget)[0]
        return rows

    def retrieve_by_temporal(self, since: datetime, until: datetime | None = None, *,
                             memory_types: Sequence[MemoryType | str] | None = None,
                             limit: int = 100) -> list[dict[str, Any]]:
        """Memories whose event time lies in [since, until], newest first."""
        for bound in (since, until):
            if bound is not None and (not isinstance(bound, datetime) or bound.tzinfo is None):
                raise InvalidInputError("since/until must be timezone-aware datetimes")
        types = tuple(MemoryType(t) for t in memory_types) if memory_types else None
        items = self.manager.stores.records.memories.list_items(
            self.namespace, ItemFilter(memory_types=types, since=since, until=until))
        items += [i for i in self.manager.working.list(self.namespace)
                  if i.event_time >= since and (until is None or i.event_time <= until)
                  and (types is None or MemoryType.WORKING in types)]
        items.sort(key=lambda i: i.event_time, reverse=True)
        cats = self.categories
        return [{"id": i.id, "content": i.content, "memory_type": i.memory_type.value,
                 "event_time": i.event_time, "timestamp": i.event_time.isoformat(),
                 "metadata": dict(i.metadata), "_source": category_of(i, cats),
                 "_namespace": self.namespace} for i in items[:limit]]

    # --- progressive disclosure under a budget -------------------------------------------
    def retrieve_with_budget(self, context: Mapping[str, Any], token_budget: int,
                             progressive: bool = True) -> dict[str, Any]:
        """Layer 1 (<= 20% of the budget): one line per relevant topic; layer 2 (<= 40%):
        a short summary of the best topics; layer 3: full memories in what remains.
        ``progressive=False`` fills the budget with full memories only. The total never
        exceeds ``token_budget``."""
        if type(token_budget) is not int or token_budget < 1:
            raise InvalidInputError(f"token_budget must be a positive int, got {token_budget!r}")
        task = self._task_type(context)
        full = self.retrieve_task_aware(context, top_k=20)
        selected: list[dict[str, Any]] = []
        remaining = token_budget
        if progressive:
            topics: dict[str, list[dict[str, Any]]] = {}
            records = {i.id: i for i in self.manager.stores.records.memories.get_items(
                self.namespace, [r["id"] for r in full])}
            for row in full:
                item = records.get(row["id"])
                key = topic_key(item) if item is not None else row["id"]
                topics.setdefault(key, []).append(row)
            index = [{"id": f"topic:{k}", "content": f"{k}: {len(v)} memories, "
                      f"{', '.join(sorted({r['_source'] for r in v}))}", "_layer": 1}
                     for k, v in topics.items()][:10]
            kept, tokens = self._fit(index, int(token_budget * LAYER1_SHARE))
            selected += kept
            remaining -= tokens
            budget2 = min(int(token_budget * LAYER2_SHARE), remaining)
            if remaining > int(token_budget * LAYER2_SHARE) * 0.5:
                summaries = [{"id": f"summary:{k}", "_layer": 2, "content": truncate_to_tokens(
                    " / ".join(r["content"] for r in v[:3]), 60, self.counter)}
                    for k, v in list(topics.items())[:5]]
                kept, tokens = self._fit(summaries, budget2)
                selected += kept
                remaining -= tokens
        if remaining > (100 if progressive else 0):
            for row in full:
                row["_layer"] = 3
            kept, tokens = self._fit(full, remaining)
            selected += kept
            remaining -= tokens
        used = token_budget - remaining
        available = sum(self.counter.count(i.content) for i in
                        self.manager.stores.records.memories.list_items(self.namespace))
        metrics = {"tokens_used": used, "token_budget": token_budget,
                   "efficiency": round(used / token_budget, 4),
                   "total_available": available,
                   "savings_percent": round(max(0.0, 100 * (available - used) / available), 1)
                   if available else 0.0,
                   "layers_used": sorted({r.get("_layer", 3) for r in selected})}
        return {"memories": selected, "metrics": metrics, "task_type": task}

    # --- indices --------------------------------------------------------------------------
    def build_indices(self, *, show_progress: bool = False) -> int:
        """Rebuild this namespace's derived indexes from the records (the truth):
        dense + BM25 vectors in Qdrant (re-embedded in batches) and the in-process
        topic/category index. Returns how many memories were indexed."""
        from tqdm import tqdm

        from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION, memory_payload
        from hello_memory.text.bm25 import BM25_VECTOR
        from hello_memory.types import VectorPoint

        stores = self.manager.stores
        items = stores.records.memories.list_items(self.namespace)
        batch = 64
        with tqdm(total=len(items), desc=f"indexing {self.namespace}", unit="memory",
                  disable=not show_progress) as bar:
            for start in range(0, len(items), batch):
                chunk = items[start:start + batch]
                if self.use_embeddings:
                    vectors = stores.embedder.embed([i.content for i in chunk])
                    points = []
                    for item, vec in zip(chunk, vectors, strict=True):
                        sparse = stores.lexical.document(item.content)
                        points.append(VectorPoint(id=item.id, vectors={DENSE: vec.tolist()},
                                                  payload=memory_payload(item),
                                                  sparse={BM25_VECTOR: sparse} if sparse
                                                  else {}))
                    stores.vectors.upsert(MEMORY_COLLECTION, points)
                bar.update(len(chunk))
        cats = self.categories
        self._topic_index = {i.id: {"category": category_of(i, cats), "topic": topic_key(i),
                                    "tokens": self.counter.count(i.content),
                                    "event_time": i.event_time.isoformat()} for i in items}
        return len(items)

    def save_indices(self, path: str | Path) -> Path:
        """Write the topic/category index (and what it was built with) as JSON. The
        vectors themselves persist in Qdrant and are rebuilt from records."""
        if not self._topic_index:
            self.build_indices()
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"namespace": self.namespace,
                                   "embedder": getattr(self.manager.stores.embedder, "name", None),
                                   "memories": self._topic_index}, ensure_ascii=False),
                       encoding="utf-8")
        return out

    def load_indices(self, path: str | Path) -> int:
        """Read an index written by :meth:`save_indices` for this namespace; memories
        deleted since are dropped. Returns how many entries were loaded."""
        src = Path(path)
        if not src.exists():
            raise NotFoundError(f"no index file at {src}; run build_indices() and save_indices()")
        try:
            data = json.loads(src.read_text(encoding="utf-8"))
            memories = dict(data["memories"])
            ns = data["namespace"]
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInputError(f"{src} is not a hello-memory index file: {exc}") from exc
        if ns != self.namespace:
            raise InvalidInputError(f"{src} indexes namespace {ns!r}, not {self.namespace!r}")
        alive = self.manager.stores.records.memories.all_ids(self.namespace)
        self._topic_index = {k: v for k, v in memories.items() if k in alive}
        return len(self._topic_index)

    @property
    def topic_index(self) -> dict[str, dict[str, Any]]:
        return dict(self._topic_index)
