"""Forgetting, restoring and consolidating memories.

forget — choose candidates by one strategy, then mark them ``forgotten`` (soft: they
leave search, ``restore`` brings them back) or purge them (``hard=True``: records,
vectors and graph links go together through the outbox):

- ``importance``: importance < ``threshold``;
- ``time``: event time older than ``max_age_days``;
- ``capacity``: keep the ``max_items`` with the highest priority
  importance × 0.5 ** (age_days / half_life_days), forget the rest.

consolidate — promote working → episodic or episodic → semantic the memories with
importance ≥ ``importance_threshold`` and access count ≥ ``min_access_count``. Before
a memory is promoted it is compared (cosine of embeddings) with the target type's
memories and with the other memories promoted in the same run: above
``manager.dedup_threshold`` they merge into one — the survivor keeps the longest
content, the max importance (never above 1) and ``metadata["merged_from"]`` with every
source id. The new target memory is committed before its source is removed, so a
failure in between leaves a duplicate, never a loss, and the next run recognises it
(the target's ``merged_from`` already names the source) and only removes the source;
a second run after a complete one finds nothing to do.

Duplicates within a type (issue 15: stored before the idempotent add, or with
``on_duplicate="store"``) merge into the oldest of them (same rules: the longest
content, the max importance, ``merged_from``; the others are removed after it is
written), reported in ``deduplicated``. Every promotion run does this for the copies
of one text in the target type (equal ``content_hash``); ``consolidate(t, t)`` for
episodic or semantic does it for the near-duplicates of type t (cosine >= the
threshold with the older memory itself, no chaining), and nothing else. Near-duplicates
are not merged by a promotion run on its own accord: "Note 1 about the shed" and "Note
2 about the shed" can be that close and still be two notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np

from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.memory.scoring import EPISODIC, recency
from hello_memory.stores.records import ItemFilter
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType
from hello_memory.validation import validate_importance

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["ConsolidateReport", "ForgetReport", "consolidate", "forget", "restore"]

MAX_AGE_DAYS = 365_000  # a thousand years: any real age, and a cutoff datetime can hold

_STORED = (MemoryType.EPISODIC, MemoryType.SEMANTIC)
_PROMOTIONS = {
    (MemoryType.WORKING, MemoryType.EPISODIC),
    (MemoryType.EPISODIC, MemoryType.SEMANTIC),
}


@dataclass(frozen=True)
class ForgetReport:
    strategy: str
    namespace: str
    ids: tuple[str, ...]
    dry_run: bool
    hard: bool

    @property
    def count(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class ConsolidateReport:
    namespace: str
    from_type: MemoryType
    to_type: MemoryType
    dry_run: bool
    promoted: tuple[str, ...] = ()          # new target ids
    merged: dict[str, tuple[str, ...]] = field(default_factory=dict)  # target id -> sources
    removed_sources: tuple[str, ...] = ()
    # duplicates within a type: the kept memory's id -> the ids merged into it (removed)
    deduplicated: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.merged.values())


def _priority(item: MemoryItem, now: datetime) -> float:
    return item.importance * recency(item.event_time, now, EPISODIC.half_life_days)


def forget(
    mm: MemoryManager,
    strategy: str = "importance",
    *,
    namespace: str | None = None,
    threshold: float = 0.1,
    max_age_days: float = 30.0,
    max_items: int = 1000,
    memory_types: Sequence[MemoryType | str] | None = None,
    dry_run: bool = False,
    hard: bool = False,
) -> ForgetReport:
    ns = mm._ns(namespace)
    try:
        types = tuple(MemoryType(t) for t in (memory_types or _STORED))
    except ValueError as exc:
        raise InvalidInputError(f"forget: {exc}; use episodic, semantic or working") from None
    now = mm._clock()
    working = MemoryType.WORKING in types
    stored = tuple(t for t in types if t in _STORED)
    items = (mm.stores.records.memories.list_items(ns, ItemFilter(memory_types=stored))
             if stored else [])
    if working:
        items += mm.working.list(ns)
    if strategy == "importance":
        threshold = validate_importance(threshold)
        chosen = [i for i in items if i.importance < threshold]
    elif strategy == "time":
        # Bounded so the cutoff is a date (1e10 days overflowed datetime: a 500).
        if (isinstance(max_age_days, bool) or not isinstance(max_age_days, (int, float))
                or not 0 <= max_age_days <= MAX_AGE_DAYS):
            raise InvalidInputError(f"max_age_days must be a number from 0 to {MAX_AGE_DAYS}, "
                                    f"got {max_age_days!r}")
        cutoff = now - timedelta(days=float(max_age_days))
        chosen = [i for i in items if i.event_time < cutoff]
    elif strategy == "capacity":
        if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0:
            raise InvalidInputError("max_items must be a non-negative int")
        ranked = sorted(items, key=lambda i: (-_priority(i, now), i.id))
        chosen = ranked[max_items:]
    else:
        raise InvalidInputError(f"unknown forget strategy {strategy!r}; "
                                "use 'importance', 'time' or 'capacity'")
    ids = tuple(sorted(i.id for i in chosen))
    report = ForgetReport(strategy, ns, ids, dry_run, hard)
    if dry_run or not ids:
        return report
    working_ids = [i.id for i in chosen if i.memory_type == MemoryType.WORKING]
    stored_ids = [i.id for i in chosen if i.memory_type != MemoryType.WORKING]
    for wid in working_ids:  # working memory has no soft state: it is short-lived anyway
        mm.working.remove(ns, wid)
    if hard:
        mm.stores.delete(ns, stored_ids)
    else:
        for sid in stored_ids:
            mm.stores.records.memories.update_item(ns, sid, status=MemoryStatus.FORGOTTEN)
        mm.stores.apply_outbox()
    mm.stores.records.audit.add(ns, "forget", {"strategy": strategy, "hard": hard,
                                               "count": len(ids), "ids": list(ids)})
    return report


def restore(mm: MemoryManager, ids: Sequence[str], *, namespace: str) -> int:
    """Bring soft-forgotten memories back into search; returns how many."""
    found = mm.stores.records.memories.get_items(namespace, list(ids))
    back = [i for i in found if i.status == MemoryStatus.FORGOTTEN]
    for item in back:
        mm.stores.records.memories.update_item(namespace, item.id, status=MemoryStatus.ACTIVE)
    if back:
        mm.stores.apply_outbox()
        mm.stores.records.audit.add(namespace, "restore", {"ids": [i.id for i in back]})
    return len(back)


def consolidate(
    mm: MemoryManager,
    from_type: MemoryType,
    to_type: MemoryType,
    *,
    namespace: str | None = None,
    importance_threshold: float = 0.7,
    min_access_count: int = 0,
    dry_run: bool = False,
) -> ConsolidateReport:
    within_only = from_type == to_type and from_type in _STORED
    if (from_type, to_type) not in _PROMOTIONS and not within_only:
        raise InvalidInputError(f"cannot consolidate {from_type.value} -> {to_type.value}; "
                                "use working -> episodic or episodic -> semantic (or "
                                "episodic -> episodic, semantic -> semantic: near-duplicates "
                                "within the type)")
    ns = mm._ns(namespace)
    importance_threshold = validate_importance(importance_threshold)
    if within_only:
        pool = []
    elif from_type == MemoryType.WORKING:
        pool = mm.working.list(ns)
    else:
        pool = mm.stores.records.memories.list_items(ns, ItemFilter(memory_types=(from_type,)))
    sources = [i for i in pool if i.importance >= importance_threshold
               and i.access_count >= min_access_count]
    targets = mm.stores.records.memories.list_items(ns, ItemFilter(memory_types=(to_type,)))
    if not sources and len(targets) < 2:
        return ConsolidateReport(ns, from_type, to_type, dry_run)
    if sources or within_only:
        vecs = mm.stores.embedder.embed([s.content for s in sources]
                                        + [t.content for t in targets])
    else:  # only the copies of a text in the target type: no embedding needed
        vecs = np.zeros((len(targets), 1), dtype=np.float32)
    src_v, tgt_v = vecs[: len(sources)], vecs[len(sources):]
    merged: dict[str, tuple[str, ...]] = {}
    promoted: list[str] = []
    removed: list[str] = []
    # Near-duplicates already inside the target type first: the promotions below then
    # meet one memory of each, not its copies.
    gone: set[str] = set()
    deduplicated: dict[str, tuple[str, ...]] = {}
    for survivor, members in _within(mm, ns, targets, tgt_v, near=within_only):
        deduplicated[survivor.id] = tuple(m.id for m in members)
        gone.update(m.id for m in members)
        if dry_run:
            continue
        _merge_into(mm, ns, to_type, survivor, members)
        mm.stores.delete(ns, [m.id for m in members])  # add-before-remove, as below
        removed.extend(m.id for m in members)
    keep = [k for k, t in enumerate(targets) if t.id not in gone]
    targets, tgt_v = [targets[k] for k in keep], tgt_v[keep]
    done_before = {src: t for t in targets for src in t.metadata.get("merged_from", [])}
    groups = _group(sources, src_v, targets, tgt_v, done_before, mm.dedup_threshold)
    for g in groups:
        target, members = g.target, g.members
        if dry_run:
            key = target.id if target is not None else f"new:{members[0].id}"
            merged[key] = tuple(m.id for m in members)
            continue
        tid = _merge_into(mm, ns, to_type, target, members)
        merged[tid] = tuple(m.id for m in members)
        if target is None:
            promoted.append(tid)
        for m in members:  # add-before-remove: the target is committed by now
            if m.memory_type == MemoryType.WORKING:
                mm.working.remove(ns, m.id)
            else:
                mm.stores.delete(ns, [m.id])
            removed.append(m.id)
    report = ConsolidateReport(ns, from_type, to_type, dry_run, tuple(promoted), merged,
                               tuple(removed), deduplicated)
    if not dry_run and (merged or deduplicated):
        mm.stores.records.audit.add(ns, "consolidate", {
            "from": from_type.value, "to": to_type.value,
            "merged": {k: list(v) for k, v in merged.items()},
            "deduplicated": {k: list(v) for k, v in deduplicated.items()}})
    return report


# Neighbours a memory is compared with when looking for near-duplicates within a type.
_WITHIN_NEIGHBOURS = 5


def _within(mm: MemoryManager, ns: str, items: list[MemoryItem], vecs: np.ndarray, *,
            near: bool) -> list[tuple[MemoryItem, list[MemoryItem]]]:
    """Duplicates inside one type, oldest first: each memory not yet taken keeps the
    later ones with its ``content_hash`` and, with ``near``, those whose cosine with it
    reaches ``mm.dedup_threshold`` (among its nearest neighbours in the vector store;
    no chaining: a member is near the survivor itself). Returns (survivor, members)
    pairs with at least one member."""
    if len(items) < 2:
        return []
    from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION

    order = sorted(range(len(items)), key=lambda k: (items[k].recorded_time, items[k].id))
    rank = {items[k].id: n for n, k in enumerate(order)}
    by_hash: dict[str | None, list[int]] = {}
    for k in order:
        by_hash.setdefault(items[k].content_hash, []).append(k)
    taken: set[str] = set()
    out: list[tuple[MemoryItem, list[MemoryItem]]] = []
    for k in order:
        head = items[k]
        if head.id in taken:
            continue
        same = [items[j] for j in by_hash.get(head.content_hash, []) if j != k
                and items[j].id not in taken] if head.content_hash else []
        if not near:
            if same:
                taken.update(m.id for m in same)
                out.append((head, same))
            continue
        hits = mm.stores.vectors.nearest(
            MEMORY_COLLECTION, vecs[k].tolist(), namespace=ns, using=DENSE,
            limit=_WITHIN_NEIGHBOURS + 1, score_threshold=mm.dedup_threshold,
            filters={"memory_type": head.memory_type.value,
                     "status": MemoryStatus.ACTIVE.value})
        members = same + [items[order[rank[h.id]]] for h in hits
                          if h.id in rank and h.id != head.id and h.id not in taken
                          and rank[h.id] > rank[head.id] and h.score >= mm.dedup_threshold
                          and items[order[rank[h.id]]] not in same]
        if members:
            taken.update(m.id for m in members)
            taken.add(head.id)
            out.append((head, members))
    return out


@dataclass
class _Group:
    target: MemoryItem | None  # an existing memory of the target type, or None (new)
    vector: np.ndarray
    members: list[MemoryItem]


def _group(sources: list[MemoryItem], src_v: np.ndarray, targets: list[MemoryItem],
           tgt_v: np.ndarray, done_before: dict[str, MemoryItem], threshold: float
           ) -> list[_Group]:
    """Assign every source to the most similar existing target or earlier group whose
    cosine reaches ``threshold``; otherwise it starts a new group."""
    groups: list[_Group] = []
    by_target: dict[str, _Group] = {}
    t_index = {t.id: k for k, t in enumerate(targets)}

    def for_target(k: int) -> _Group:
        t = targets[k]
        if t.id not in by_target:
            by_target[t.id] = _Group(t, tgt_v[k], [])
            groups.append(by_target[t.id])
        return by_target[t.id]

    for s, v in zip(sources, src_v, strict=True):
        if s.id in done_before:  # promoted by a run that died before removing it
            for_target(t_index[done_before[s.id].id]).members.append(s)
            continue
        best: _Group | None = None
        best_sim = threshold
        if len(targets):
            sims = tgt_v @ v  # embeddings are L2-normalised: dot = cosine
            k = int(np.argmax(sims))
            if float(sims[k]) >= best_sim:
                best, best_sim = for_target(k), float(sims[k])
        for g in groups:
            if g.members and g.target is None and float(g.vector @ v) >= best_sim:
                best, best_sim = g, float(g.vector @ v)
        if best is None:
            groups.append(_Group(None, v, [s]))
        else:
            best.members.append(s)
    return [g for g in groups if g.members]


def _merge_into(mm: MemoryManager, ns: str, to_type: MemoryType, target: MemoryItem | None,
                members: list[MemoryItem]) -> str:
    ids = [m.id for m in members]
    importance = min(1.0, max(m.importance for m in members))
    if target is not None:
        merged_from = list(dict.fromkeys([*target.metadata.get("merged_from", []), *ids]))
        if merged_from == target.metadata.get("merged_from"):
            return target.id  # already merged by an earlier, interrupted run
        longest = max([target, *members], key=lambda i: len(i.content)).content
        mm.stores.update(ns, target.id, content=longest,
                         importance=max(target.importance, importance),
                         metadata={**target.metadata, "merged_from": merged_from})
        return target.id
    head = max(members, key=lambda i: len(i.content))
    meta = {**head.metadata, "promoted_from": head.id, "merged_from": ids}
    [new] = mm.stores.add([MemoryItem(
        content=head.content, namespace=ns, memory_type=to_type, importance=importance,
        user_id=head.user_id, agent_id=head.agent_id, session_id=head.session_id,
        event_time=min(m.event_time for m in members), metadata=meta)])
    return new.id


def forget_ids(manager: MemoryManager, ids: Sequence[str], *, namespace: str | None = None,
               dry_run: bool = False) -> list[str]:
    """Soft-forget the given memories of ``namespace`` (``restore`` undoes it); working
    memories, which have no soft state, are dropped. Unknown ids are an error and
    nothing is changed; already forgotten ones are skipped. Returns the ids forgotten
    (with ``dry_run``: the ids that would be, changing nothing)."""
    ns = manager._ns(namespace)
    wanted = list(dict.fromkeys(ids))
    if not wanted or not all(isinstance(i, str) and i for i in wanted):
        raise InvalidInputError("memory_ids must be a non-empty list of ids")
    working = [i for i in wanted if manager.working.get(ns, i) is not None]
    stored = {i.id: i for i in manager.stores.records.memories.get_items(
        ns, [i for i in wanted if i not in working])}
    if missing := [i for i in wanted if i not in stored and i not in working]:
        raise NotFoundError(f"no memory {missing[0]!r} in namespace {ns!r}")
    active = [i for i in stored.values() if i.status is MemoryStatus.ACTIVE]
    if dry_run:
        return working + [i.id for i in active]
    for wid in working:
        manager.working.remove(ns, wid)
    for item in active:
        manager.stores.records.memories.update_item(ns, item.id, status=MemoryStatus.FORGOTTEN)
    done = working + [i.id for i in active]
    if active:
        manager.stores.apply_outbox()
    if done:
        manager.stores.records.audit.add(ns, "forget", {"strategy": "ids", "hard": False,
                                                        "count": len(done), "ids": done})
    return done
