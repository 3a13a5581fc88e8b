"""LangGraph ``BaseStore`` over hello-memory (extra ``hello-memory[langgraph]``).

>>> from langgraph.graph import StateGraph                            # doctest: +SKIP
>>> from hello_memory.interfaces.adapters.langgraph import HelloMemoryStore      # doctest: +SKIP
>>> graph = builder.compile(store=HelloMemoryStore(manager))          # doctest: +SKIP

- A namespace tuple is one of our namespaces: ``("users", "alice")`` is
  ``users/alice`` (``root/users/alice`` with ``root=``), so API keys granting
  ``users/*`` reach the same memories; ``list_namespaces`` lists ours as tuples.
- ``put(ns, key, value)`` stores one memory whose id is derived from ``(ns, key)``: a
  second put replaces it (``created_at`` kept), ``value=None`` / ``delete`` removes it.
  The memory's text is the value's ``fields`` (the store's ``index_fields``, or the
  put's ``index=[...]``; default ``["$"]``, the whole value: its strings, one a line,
  or its JSON when it has none); the value itself is kept as given
  in the memory's metadata and comes back unchanged. ``index=False`` items are stored
  and listed but left out of query searches.
- ``search(prefix, query=...)`` is hello-memory's one search (hybrid, every view) in
  each namespace under the prefix, best first; ``filter`` (exact values and
  ``$eq/$ne/$gt/$gte/$lt/$lte``, as LangGraph's own stores) is applied to the values of
  the ``candidates`` best hits, so a very selective filter can return fewer than
  ``limit``. Without a query, items come newest first.
- TTL (minutes) is supported: an expired item is gone for reads and deleted when a read
  meets it or :meth:`HelloMemoryStore.sweep_ttl` runs; reads refresh the TTL unless
  ``refresh_ttl=False``.
- Memories written by other interfaces appear too: key = memory id, value =
  ``{"content", "memory_type", "importance", "metadata"}``.

``abatch`` runs ``batch`` in :class:`~hello_memory.interfaces.aio.AsyncMemoryManager`'s pool.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from hello_memory.interfaces.adapters import missing_extra

try:  # the framework is an optional extra: a missing one names it
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
    )
    from langgraph.store.base.embed import get_text_at_path, tokenize_path
except ModuleNotFoundError as _missing:
    raise missing_extra("langgraph", _missing, __name__) from _missing

from hello_memory.interfaces.adapters._common import (
    active,
    add_keyed,
    existing,
    join_namespace,
    keyed_item,
    split_namespace,
    stable_id,
)
from hello_memory.interfaces.aio import AsyncMemoryManager
from hello_memory.memory.manager import MemoryManager
from hello_memory.services.browse import ItemFilter
from hello_memory.types import MemoryItem, MemoryType, utcnow

__all__ = ["HelloMemoryStore"]

META = "langgraph"  # the metadata key holding key, value, times and TTL


def _matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: nested dicts, ``$``-operators, exact values."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(value, op, arg) for op, arg in wanted.items())
        return isinstance(value, Mapping) and all(
            _matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(value, (list, tuple)) and len(value) == len(wanted)
                and all(_matches(a, b) for a, b in zip(value, wanted, strict=True)))
    return bool(value == wanted)


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if value is None:
        return False
    try:
        a, b = float(value), float(arg)
    except (TypeError, ValueError):
        return False
    if op == "$gt":
        return a > b
    if op == "$gte":
        return a >= b
    if op == "$lt":
        return a < b
    if op == "$lte":
        return a <= b
    raise ValueError(f"unsupported filter operator {op!r}")


def _strings(value: Any) -> list[str]:
    """The string leaves of a JSON value, in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _namespace_matches(ns: tuple[str, ...], cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    pairs = (zip(ns, path, strict=False) if cond.match_type == "prefix"
             else zip(reversed(ns), reversed(path), strict=False))
    return all(p == "*" or a == p for a, p in pairs)


class HelloMemoryStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are hello-memory memories (module doc).

    ``memory_type``: what a put stores (semantic by default: LangGraph stores hold
    profiles and facts). ``root``: a namespace prefix of ours to keep the store in
    (None: every namespace of the data directory is visible). ``index_fields``: the
    default text of a value (``["$"]``, the whole value). ``candidates``: how many
    hits a filtered query search looks at. ``ttl``: LangGraph's ``TTLConfig``."""

    supports_ttl = True

    def __init__(self, manager: MemoryManager | AsyncMemoryManager, *,
                 memory_type: MemoryType | str = MemoryType.SEMANTIC,
                 root: str | None = None, index_fields: Sequence[str] | None = None,
                 candidates: int = 50, ttl: TTLConfig | None = None) -> None:
        self.aio = AsyncMemoryManager.wrap(manager)
        self.manager = self.aio.manager
        self.memory_type = MemoryType(memory_type)
        self.root = root
        self.index_fields = list(index_fields or ["$"])
        self.candidates = candidates
        self.ttl_config = ttl

    # --- the two primitives -----------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self.aio.run(self.batch, list(ops))

    # --- helpers ----------------------------------------------------------------------
    def _ns(self, namespace: Sequence[str]) -> str:
        return join_namespace(tuple(namespace), self.root)

    def _id(self, ns: str, key: str) -> str:
        return stable_id("langgraph", ns, key)

    def _expired(self, item: MemoryItem, now: datetime) -> bool:
        expires = (item.metadata.get(META) or {}).get("expires_at")
        return bool(expires) and datetime.fromisoformat(str(expires)) <= now

    def _live(self, ns: str, items: Sequence[MemoryItem], refresh: bool) -> list[MemoryItem]:
        """Active, unexpired items; expired ones are deleted on the way, and the TTL of
        the others is refreshed when asked."""
        now = utcnow()
        live: list[MemoryItem] = []
        for item in items:
            if not active(item):
                continue
            if self._expired(item, now):
                self.manager.remove(item.id, namespace=ns)
                continue
            meta = item.metadata.get(META) or {}
            if refresh and meta.get("ttl"):
                meta = {**meta, "expires_at": (now + timedelta(minutes=meta["ttl"])).isoformat()}
                item = self.manager.update(item.id, namespace=ns,
                                           metadata={**item.metadata, META: meta})
            live.append(item)
        return live

    def _item(self, ns: str, item: MemoryItem) -> Item:
        labels = split_namespace(ns, self.root) or (ns,)
        meta = item.metadata.get(META)
        if meta is not None:
            key, value = meta["key"], meta["value"]
            created = datetime.fromisoformat(meta["created_at"])
            updated = datetime.fromisoformat(meta["updated_at"])
        else:  # a memory written by another interface
            key, created, updated = item.id, item.event_time, item.recorded_time
            value = {"content": item.content, "memory_type": item.memory_type.value,
                     "importance": item.importance, "metadata": item.metadata}
        return Item(value=value, key=key, namespace=labels, created_at=created,
                    updated_at=updated)

    @staticmethod
    def _search_item(item: Item, score: float | None) -> SearchItem:
        return SearchItem(namespace=item.namespace, key=item.key, value=item.value,
                          created_at=item.created_at, updated_at=item.updated_at, score=score)

    def _text(self, value: Mapping[str, Any], fields: Sequence[str]) -> str:
        if list(fields) == ["$"]:  # the whole value: its text, readable by every interface
            leaves = [t for t in _strings(value) if t.strip()]
            return "\n".join(leaves) or json.dumps(value, ensure_ascii=False, sort_keys=True)
        texts: list[str] = []
        for path in fields:
            texts += [t for t in get_text_at_path(value, tokenize_path(path)) if t.strip()]
        return "\n".join(texts) or json.dumps(value, ensure_ascii=False, sort_keys=True)

    # --- operations -------------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        ns = self._ns(op.namespace)
        memory_id = self._id(ns, op.key)
        found = existing(self.manager, ns, [memory_id]).get(memory_id)
        if found is None:  # a memory another interface wrote, by its own id
            found = existing(self.manager, ns, [op.key]).get(op.key)
        live = self._live(ns, [found] if found else [], op.refresh_ttl)
        return self._item(ns, live[0]) if live else None

    def _put(self, op: PutOp) -> None:
        ns = self._ns(op.namespace)
        memory_id = self._id(ns, op.key)
        old = existing(self.manager, ns, [memory_id]).get(memory_id)
        if op.value is None:
            old = old or existing(self.manager, ns, [op.key]).get(op.key)
            if old is not None:
                self.manager.remove(old.id, namespace=ns)
            return
        now = utcnow()
        created = ((old.metadata.get(META) or {}).get("created_at") if old is not None
                   else None) or now.isoformat()
        value = dict(op.value)
        meta: dict[str, Any] = {"key": op.key, "value": value, "created_at": created,
                                "updated_at": now.isoformat(), "indexed": op.index is not False}
        if op.ttl is not None:
            meta["ttl"] = op.ttl
            meta["expires_at"] = (now + timedelta(minutes=op.ttl)).isoformat()
        fields = op.index if isinstance(op.index, list) else self.index_fields
        item = keyed_item(memory_id, ns, self._text(value, fields), self.memory_type,
                          {META: meta}, event_time=now,  # validated before the old goes
                          limits=self.manager.limits)
        if old is not None:
            self.manager.remove(old.id, namespace=ns)
        add_keyed(self.manager, [item])

    def _namespaces_under(self, prefix: Sequence[str]) -> list[str]:
        prefix = tuple(prefix)
        if prefix:
            exact = self._ns(prefix)
            return [ns for ns in self.manager.browse.namespaces()
                    if ns == exact or ns.startswith(exact + "/")]
        return [ns for ns in self.manager.browse.namespaces()
                if split_namespace(ns, self.root) is not None]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        want = max(0, op.offset) + max(0, op.limit)
        found: list[tuple[float | None, str, MemoryItem]] = []
        for ns in self._namespaces_under(op.namespace_prefix):
            if op.query:
                top_k = max(want, self.candidates) if op.filter else want
                if top_k == 0:
                    continue
                hits = self.manager.search(op.query, top_k=top_k, namespace=ns)
                scores = {h.id: h.score for h in hits}
                stored = [h.item for h in hits
                          if (h.item.metadata.get(META) or {}).get("indexed", True)]
                for item in self._live(ns, stored, op.refresh_ttl):
                    found.append((scores[item.id], ns, item))
            else:
                limit = None if op.filter else want
                items = self.manager.browse.list_memories(ns, ItemFilter(), order="-event_time",
                                                          limit=limit)
                found += [(None, ns, i) for i in self._live(ns, items, op.refresh_ttl)]
        if op.filter:
            found = [f for f in found
                     if _matches(self._item(f[1], f[2]).value, dict(op.filter))]
        if op.query:
            found.sort(key=lambda f: -(f[0] or 0.0))  # merge the namespaces' result lists
        else:
            found.sort(key=lambda f: f[2].event_time, reverse=True)
        page = found[op.offset: op.offset + op.limit]
        return [self._search_item(self._item(ns, item), score) for score, ns, item in page]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = [t for t in (split_namespace(ns, self.root)
                              for ns in self.manager.browse.namespaces())
                  if t is not None]
        for cond in op.match_conditions or ():
            spaces = [t for t in spaces if _namespace_matches(t, cond)]
        if op.max_depth is not None:
            spaces = [t[: op.max_depth] for t in spaces]
        return sorted(set(spaces))[op.offset: op.offset + op.limit]

    def sweep_ttl(self) -> int:
        """Delete every expired item under ``root``; returns how many."""
        now, removed = utcnow(), 0
        for ns in self._namespaces_under(()):
            for item in self.manager.browse.list_memories(ns, ItemFilter()):
                if self._expired(item, now):
                    removed += int(self.manager.remove(item.id, namespace=ns))
        return removed
