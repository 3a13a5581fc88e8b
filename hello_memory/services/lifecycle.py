"""Forgetting, restoring and consolidating memories: the :class:`Lifecycle` service.

The facade (``MemoryManager.forget`` / ``forget_ids`` / ``restore`` / ``consolidate``)
calls one ``Lifecycle`` built over its stores and working memory; each operation
returns its typed report (:mod:`hello_memory.memory.reports`).

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
``dedup_threshold`` (``memory.dedup_threshold``) they merge into one — the survivor
keeps the longest content, the max importance (never above 1) and
``metadata["merged_from"]`` with every source id. The new target memory is committed
before its source is removed, so a
failure in between leaves a duplicate, never a loss, and the next run recognises it
(the target's ``merged_from`` already names the source) and only removes the source;
a second run after a complete one finds nothing to do.

Concurrent writes (issue 28; docs/RELIABILITY.md "Concurrency"): every job here decides
on what it read, then writes by compare-and-swap on each record's ``version`` (schema
v7, ``MemoryRepository``), never from a stale copy. One merge (the target inserted or
updated and its stored sources deleted) is one transaction that holds only while the
target and every source are still the versions read: an update acknowledged in between
makes the merge skip, all of it (the next run sees the new text), so it is never lost
under a merged copy. ``forget`` by a strategy leaves a memory that changed since it was
chosen (its importance raised, say) for the next run; ``forget_ids`` and ``restore``
re-read a memory that changed and act on its current version.

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

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.memory.reports import ConsolidateReport, ForgetReport
from hello_memory.memory.scoring import EPISODIC, recency
from hello_memory.ports.vector import VectorFilter
from hello_memory.stores.records import ItemFilter, WriteConflictError
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, utcnow
from hello_memory.validation import (
    require_namespace,
    validate_importance,
    validate_memory_type,
)

if TYPE_CHECKING:
    from hello_memory.config import JobsSettings
    from hello_memory.memory.working import WorkingMemory
    from hello_memory.stores.bundle import Stores
    from hello_memory.stores.records import MemoryRepository

__all__ = ["ConsolidateReport", "ForgetReport", "Lifecycle"]

log = logging.getLogger(__name__)

# How many times forget_ids / restore re-read a memory that changed under them.
_CAS_ROUNDS = 5

MAX_AGE_DAYS = 365_000  # a thousand years: any real age, and a cutoff datetime can hold

_STORED = (MemoryType.EPISODIC, MemoryType.SEMANTIC)
_PROMOTIONS = {
    (MemoryType.WORKING, MemoryType.EPISODIC),
    (MemoryType.EPISODIC, MemoryType.SEMANTIC),
}


def _priority(item: MemoryItem, now: datetime) -> float:
    return item.importance * recency(item.event_time, now, EPISODIC.half_life_days)


def _default_jobs() -> JobsSettings:
    from hello_memory.config import JobsSettings

    return JobsSettings()


class Lifecycle:
    """Forget, forget by id, restore and consolidate over the stores and the working
    memory, each returning its report (:mod:`hello_memory.memory.reports`).

    Built from what it works on (the stores, the working memory) and what it decides
    with: ``defaults``, the ``jobs`` settings every argument left out (None) comes from
    (ARCHITECTURE decision 9), the ``dedup_threshold`` that merges near-duplicates, the
    ``clock`` and ``namespace``, which turns None into the default namespace (the
    facade passes its :meth:`~hello_memory.memory.manager.MemoryManager.resolve_namespace`).
    """

    def __init__(self, stores: Stores, working: WorkingMemory, *,
                 defaults: JobsSettings | None = None, dedup_threshold: float = 0.92,
                 clock: Callable[[], datetime] = utcnow,
                 namespace: Callable[[str | None], str] = require_namespace) -> None:
        self.stores = stores
        self.working = working
        self.defaults = defaults if defaults is not None else _default_jobs()
        self.dedup_threshold = dedup_threshold
        self._clock = clock
        self._namespace = namespace

    @property
    def _memories(self) -> MemoryRepository:
        return self.stores.records.memories

    def _audit(self, namespace: str, action: str, details: dict[str, Any]) -> None:
        self.stores.records.audit.add(namespace, action, details)

    # --- forget / restore ------------------------------------------------------------
    def forget(
        self,
        strategy: str | None = None,
        *,
        namespace: str | None = None,
        threshold: float | None = None,
        max_age_days: float | None = None,
        max_items: int | None = None,
        memory_types: Sequence[MemoryType | str] | None = None,
        dry_run: bool = False,
        hard: bool = False,
    ) -> ForgetReport:
        """Choose by ``strategy`` (``importance``, ``time`` or ``capacity``; left out:
        :attr:`defaults`), then forget softly (``restore`` undoes it) or, ``hard``,
        purge; working memories are dropped."""
        args = self.defaults.forget_options(strategy, threshold, max_age_days, max_items)
        ns = self._namespace(namespace)
        chosen = self._forget_candidates(ns, self._forget_types(memory_types), **args)
        ids = tuple(sorted(i.id for i in chosen))
        if dry_run or not ids:
            return ForgetReport(args["strategy"], ns, ids, dry_run, hard)
        working = [i for i in chosen if i.memory_type == MemoryType.WORKING]
        # Chosen at the versions read: one changed since (importance raised, content
        # rewritten) is left for the next run, never forgotten on stale grounds.
        versions = {i.id: i.version for i in chosen if i.memory_type != MemoryType.WORKING}
        done = [i.id for i in working if self.working.get(ns, i.id) is i]
        for wid in done:  # working memory has no soft state: it is short-lived anyway
            self.working.remove(ns, wid)
        if hard:
            done += self.stores.delete_unchanged(ns, versions)
        else:
            done += [i.id for i in self.stores.update_many(
                ns, list(versions), expect=versions, status=MemoryStatus.FORGOTTEN)]
        ids = tuple(sorted(done))
        if ids:
            self._audit(ns, "forget", {"strategy": args["strategy"], "hard": hard,
                                       "count": len(ids), "ids": list(ids)})
        return ForgetReport(args["strategy"], ns, ids, dry_run, hard)

    @staticmethod
    def _forget_types(memory_types: Sequence[MemoryType | str] | None
                      ) -> tuple[MemoryType, ...]:
        try:
            return tuple(MemoryType(t) for t in (memory_types or _STORED))
        except ValueError as exc:
            raise InvalidInputError(f"forget: {exc}; use episodic, semantic or working"
                                    ) from None

    def _forget_candidates(self, ns: str, types: tuple[MemoryType, ...], *, strategy: str,
                           threshold: float, max_age_days: float, max_items: int
                           ) -> list[MemoryItem]:
        now = self._clock()
        stored = tuple(t for t in types if t in _STORED)
        items = (self._memories.list_items(ns, ItemFilter(memory_types=stored))
                 if stored else [])
        if MemoryType.WORKING in types:
            items += self.working.list(ns)
        if strategy == "importance":
            threshold = validate_importance(threshold)
            return [i for i in items if i.importance < threshold]
        if strategy == "time":
            # Bounded so the cutoff is a date (1e10 days overflowed datetime: a 500).
            if (isinstance(max_age_days, bool) or not isinstance(max_age_days, (int, float))
                    or not 0 <= max_age_days <= MAX_AGE_DAYS):
                raise InvalidInputError("max_age_days must be a number from 0 to "
                                        f"{MAX_AGE_DAYS}, got {max_age_days!r}")
            cutoff = now - timedelta(days=float(max_age_days))
            return [i for i in items if i.event_time < cutoff]
        if strategy == "capacity":
            if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0:
                raise InvalidInputError("max_items must be a non-negative int")
            return sorted(items, key=lambda i: (-_priority(i, now), i.id))[max_items:]
        raise InvalidInputError(f"unknown forget strategy {strategy!r}; "
                                "use 'importance', 'time' or 'capacity'")

    def forget_ids(self, ids: Sequence[str], *, namespace: str | None = None,
                   dry_run: bool = False) -> list[str]:
        """Soft-forget the given memories of ``namespace`` (``restore`` undoes it); working
        memories, which have no soft state, are dropped. Unknown ids are an error and
        nothing is changed; already forgotten ones are skipped. Returns the ids forgotten
        (with ``dry_run``: the ids that would be, changing nothing)."""
        ns = self._namespace(namespace)
        wanted = list(dict.fromkeys(ids))
        if not wanted or not all(isinstance(i, str) and i for i in wanted):
            raise InvalidInputError("memory_ids must be a non-empty list of ids")
        working = [i for i in wanted if self.working.get(ns, i) is not None]
        stored = {i.id: i for i in self._memories.get_items(
            ns, [i for i in wanted if i not in working])}
        if missing := [i for i in wanted if i not in stored and i not in working]:
            raise NotFoundError(f"no memory {missing[0]!r} in namespace {ns!r}")
        active = [i for i in stored.values() if i.status is MemoryStatus.ACTIVE]
        if dry_run:
            return working + [i.id for i in active]
        for wid in working:
            self.working.remove(ns, wid)
        done = working + self._set_status(ns, active, MemoryStatus.ACTIVE,
                                          MemoryStatus.FORGOTTEN)
        if done:
            self._audit(ns, "forget", {"strategy": "ids", "hard": False,
                                                         "count": len(done), "ids": done})
        return done

    def restore(self, ids: Sequence[str], *, namespace: str | None = None) -> int:
        """Bring soft-forgotten memories back into search; returns how many."""
        ns = self._namespace(namespace)
        found = self._memories.get_items(ns, list(ids))
        back = self._set_status(ns, found, MemoryStatus.FORGOTTEN, MemoryStatus.ACTIVE)
        if back:
            self._audit(ns, "restore", {"ids": back})
        return len(back)

    def _set_status(self, ns: str, items: Sequence[MemoryItem], old: MemoryStatus,
                    new: MemoryStatus) -> list[str]:
        """Move the ``items`` whose status is ``old`` to ``new``, by compare-and-swap on
        the versions read; one that changed meanwhile is read again and moved if it is
        still ``old`` (gone: skipped). Returns the ids moved, in ``items`` order."""
        order = {i.id: n for n, i in enumerate(items)}
        todo = [i for i in items if i.status == old]
        done: list[str] = []
        for _ in range(_CAS_ROUNDS):
            if not todo:
                break
            versions = {i.id: i.version for i in todo}
            moved = {i.id for i in self.stores.update_many(ns, list(versions),
                                                           expect=versions, status=new)}
            done += moved
            todo = [i for i in self._memories.get_items(ns, [i for i in versions
                                                             if i not in moved])
                    if i.status == old]
        return sorted(done, key=order.__getitem__)

    # --- consolidate -----------------------------------------------------------------
    def consolidate(
        self,
        from_type: MemoryType | str | None = None,
        to_type: MemoryType | str | None = None,
        *,
        namespace: str | None = None,
        importance_threshold: float | None = None,
        min_access_count: int | None = None,
        dry_run: bool = False,
    ) -> ConsolidateReport:
        """Promote important memories one step (working -> episodic -> semantic); the
        direction and thresholds left out come from :attr:`defaults` (one end of the
        direction names the other); ``consolidate(t, t)`` merges near-duplicates of t."""
        args = self.defaults.consolidate_options(from_type, to_type, importance_threshold,
                                                 min_access_count)
        src_type = validate_memory_type(args["from_type"])
        dst_type = validate_memory_type(args["to_type"])
        within_only = src_type == dst_type and src_type in _STORED
        if (src_type, dst_type) not in _PROMOTIONS and not within_only:
            raise InvalidInputError(
                f"cannot consolidate {src_type.value} -> {dst_type.value}; use working -> "
                "episodic or episodic -> semantic (or episodic -> episodic, semantic -> "
                "semantic: near-duplicates within the type)")
        ns = self._namespace(namespace)
        threshold = validate_importance(args["importance_threshold"])
        pool = ([] if within_only else self.working.list(ns) if src_type == MemoryType.WORKING
                else self._memories.list_items(ns, ItemFilter(memory_types=(src_type,))))
        sources = [i for i in pool if i.importance >= threshold
                   and i.access_count >= args["min_access_count"]]
        targets = self._memories.list_items(ns, ItemFilter(memory_types=(dst_type,)))
        if not sources and len(targets) < 2:
            return ConsolidateReport(ns, src_type, dst_type, dry_run)
        run = _Run(ns, src_type, dst_type, dry_run)
        self._promote(run, sources, targets, within_only)
        report = ConsolidateReport(ns, src_type, dst_type, dry_run, tuple(run.promoted),
                                   run.merged, tuple(run.removed), run.deduplicated)
        if not dry_run and (run.merged or run.deduplicated):
            self._audit(ns, "consolidate", {
                "from": src_type.value, "to": dst_type.value,
                "merged": {k: list(v) for k, v in run.merged.items()},
                "deduplicated": {k: list(v) for k, v in run.deduplicated.items()}})
        return report

    def _promote(self, run: _Run, sources: list[MemoryItem], targets: list[MemoryItem],
                 within_only: bool) -> None:
        if sources or within_only:
            vecs = self.stores.embedder.embed([s.content for s in sources]
                                              + [t.content for t in targets])
        else:  # only the copies of a text in the target type: no embedding needed
            vecs = np.zeros((len(targets), 1), dtype=np.float32)
        src_v, tgt_v = vecs[: len(sources)], vecs[len(sources):]
        # Near-duplicates already inside the target type first: the promotions below then
        # meet one memory of each, not its copies.
        gone: set[str] = set()
        for survivor, members in _within(self.stores, self.dedup_threshold, run.namespace,
                                         targets, tgt_v, near=within_only):
            if not run.dry_run and self._commit_merge(run, survivor, members) is None:
                continue  # changed since read: left as it is for the next run
            run.deduplicated[survivor.id] = tuple(m.id for m in members)
            gone.update(m.id for m in members)
            if not run.dry_run:
                run.removed.extend(m.id for m in members)
        keep = [k for k, t in enumerate(targets) if t.id not in gone]
        targets, tgt_v = [targets[k] for k in keep], tgt_v[keep]
        done_before = {src: t for t in targets for src in t.metadata.get("merged_from", [])}
        for g in _group(sources, src_v, targets, tgt_v, done_before, self.dedup_threshold):
            self._apply_group(run, g)

    def _apply_group(self, run: _Run, g: _Group) -> None:
        target, members = g.target, g.members
        if run.dry_run:
            key = target.id if target is not None else f"new:{members[0].id}"
            run.merged[key] = tuple(m.id for m in members)
            return
        tid = self._commit_merge(run, target, members)
        if tid is None:
            return  # a member or the target changed since read: the next run retries
        run.merged[tid] = tuple(m.id for m in members)
        if target is None:
            run.promoted.append(tid)
        run.removed.extend(m.id for m in members)

    def _commit_merge(self, run: _Run, target: MemoryItem | None,
                      members: list[MemoryItem]) -> str | None:
        """Merge ``members`` into ``target`` (None: a new memory of the target type) as
        read, in ONE transaction that holds only while the target and every stored
        member are still the versions read (``Stores.merge``); returns the target's id,
        or None when something changed since it was read (nothing is written: an
        acknowledged update is never lost under a merged copy). Working members are
        removed after the commit, each only if it is still the item read (a working
        memory updated meanwhile stays: a duplicate, never a loss)."""
        ns = run.namespace
        working = [m for m in members if m.memory_type == MemoryType.WORKING]
        if any(self.working.get(ns, m.id) is not m for m in working):
            log.info("consolidate %s: a working memory changed since read; skipped", ns)
            return None
        add, changes = _merged(ns, run.to_type, target, members)
        spec = None if target is None else (target.id, target.version, changes)
        stored = {m.id: m.version for m in members if m.memory_type != MemoryType.WORKING}
        try:
            made = self.stores.merge(ns, add=add, target=spec, remove=stored)
        except (WriteConflictError, NotFoundError) as exc:
            log.info("consolidate %s: %s; that merge is left for the next run", ns, exc)
            return None
        for m in working:
            if self.working.get(ns, m.id) is m:
                self.working.remove(ns, m.id)
        assert made is not None or target is not None
        return made.id if made is not None else target.id  # type: ignore[union-attr]


@dataclass
class _Run:
    """What one consolidate run has done so far (its report's parts)."""

    namespace: str
    from_type: MemoryType
    to_type: MemoryType
    dry_run: bool
    promoted: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    merged: dict[str, tuple[str, ...]] = field(default_factory=dict)
    deduplicated: dict[str, tuple[str, ...]] = field(default_factory=dict)


# Neighbours a memory is compared with when looking for near-duplicates within a type.
_WITHIN_NEIGHBOURS = 5


def _within(stores: Stores, threshold: float, ns: str, items: list[MemoryItem],
            vecs: np.ndarray, *, near: bool) -> list[tuple[MemoryItem, list[MemoryItem]]]:
    """Duplicates inside one type, oldest first: each memory not yet taken keeps the
    later ones with its ``content_hash`` and, with ``near``, those whose cosine with it
    reaches ``threshold`` (among its nearest neighbours in the vector store;
    no chaining: a member is near the survivor itself). Returns (survivor, members)
    pairs with at least one member."""
    if len(items) < 2:
        return []
    from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION

    order = sorted(range(len(items)), key=lambda k: (items[k].recorded_time, items[k].id))
    rank = {items[k].id: n for n, k in enumerate(order)}
    # one user's memory is never another's duplicate (issue 28): same user, same text
    by_hash: dict[tuple[str | None, str | None], list[int]] = {}
    for k in order:
        by_hash.setdefault((items[k].user_id, items[k].content_hash), []).append(k)
    taken: set[str] = set()
    out: list[tuple[MemoryItem, list[MemoryItem]]] = []
    for k in order:
        head = items[k]
        if head.id in taken:
            continue
        same = [items[j] for j in by_hash.get((head.user_id, head.content_hash), [])
                if j != k and items[j].id not in taken] if head.content_hash else []
        if not near:
            if same:
                taken.update(m.id for m in same)
                out.append((head, same))
            continue
        hits = stores.vectors.nearest(
            MEMORY_COLLECTION, vecs[k].tolist(), namespace=ns, using=DENSE,
            limit=_WITHIN_NEIGHBOURS + 1, score_threshold=threshold,
            filters=VectorFilter.where(memory_type=head.memory_type.value,
                                       status=MemoryStatus.ACTIVE.value))
        members = same + [items[order[rank[h.id]]] for h in hits
                          if h.id in rank and h.id != head.id and h.id not in taken
                          and rank[h.id] > rank[head.id] and h.score >= threshold
                          and items[order[rank[h.id]]].user_id == head.user_id
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


def _merged(ns: str, to_type: MemoryType, target: MemoryItem | None,
            members: list[MemoryItem]) -> tuple[MemoryItem | None, dict[str, Any]]:
    """What merging ``members`` into ``target`` writes: (a new memory, no changes) when
    there is no target, else (None, the target's changes: the longest content, the max
    importance, ``merged_from``; none when an earlier, interrupted run already merged
    them and only their removal is left)."""
    ids = [m.id for m in members]
    importance = min(1.0, max(m.importance for m in members))
    if target is not None:
        merged_from = list(dict.fromkeys([*target.metadata.get("merged_from", []), *ids]))
        if merged_from == target.metadata.get("merged_from"):
            return None, {}  # already merged by an earlier, interrupted run
        longest = max([target, *members], key=lambda i: len(i.content)).content
        return None, {"content": longest,
                      "importance": max(target.importance, importance),
                      "metadata": {**target.metadata, "merged_from": merged_from}}
    head = max(members, key=lambda i: len(i.content))
    meta = {**head.metadata, "promoted_from": head.id, "merged_from": ids}
    return MemoryItem(
        content=head.content, namespace=ns, memory_type=to_type, importance=importance,
        user_id=head.user_id, agent_id=head.agent_id, session_id=head.session_id,
        event_time=min(m.event_time for m in members), metadata=meta), {}
