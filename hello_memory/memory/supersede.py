"""Facts that update (issue 15): a newer memory that contradicts an older one about the
same subject and attribute supersedes it, bi-temporally and without deleting anything.

Every memory keeps its event time and recorded time and gains validity (schema v5):
``valid_from`` (its event time unless given), ``valid_to`` and ``superseded_by``. When
memory B replaces memory A, A gets ``valid_to = B.valid_from`` and ``superseded_by =
B.id``; A stays in the record store, in export and in ``search(..., as_of=...)`` (what
was true then: ``valid_from <= as_of < valid_to``), and leaves default search, whose
filter keeps ``valid_to IS NULL`` (:class:`~hello_memory.stores.records.ItemFilter`).

:meth:`Superseder.apply` runs once per add, on the memories just stored
(``MemoryManager.add_many``):

The LLM is optional (ARCHITECTURE decision 4):

* **with an LLM** (``memory.supersede`` ``auto`` and an LLM configured): one structured
  decision per memory, ``ADD`` / ``UPDATE`` / ``SUPERSEDE`` / ``NOOP``
  (:class:`SupersedeDecision`, schema-validated JSON), against its nearest current
  memories (dense search) and the ones the rules say state the same fact. No
  candidate, no call. An answer that fails, does not validate, or names a candidate
  that is not there falls back to the rules (:func:`~hello_memory.llm.base.call_or_fallback`):
  the memory is already stored either way, so nothing is lost.
* **rules** (no LLM, ``memory.supersede: rules``, or the fallback): the clear cases of
  :mod:`hello_memory.text.facts` ("lives in", "moved to", "works at", "is married to",
  "我的手机号是" ... in English and Chinese; "I" is the memory's speaker,
  ``text.facts.fact_of``). The memories stating the same
  ``subject|attribute`` are put in valid-time order; each change of value ends the
  validity of the memories before it. Restating the same value supersedes nothing, so
  "Tom lives in Bergen" twice stays two current memories (duplicates are the business
  of ``memory.on_duplicate``).

A newer memory about an older time ("In 2019 Tom lived in Oslo", added after "Tom
lives in Bergen" with an earlier event time) is the one whose validity ends, not the
current one. Each decision that changes validity is written to the audit log
(``supersede``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hello_memory.llm.base import LLMClient, LLMSchemaError, Message, call_or_fallback
from hello_memory.memory.episodic import matches, payload_filters
from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION
from hello_memory.stores.records import ItemFilter
from hello_memory.text.attributes import attributes_of, replaces, states_now
from hello_memory.text.facts import fact_key, fact_of, same_value
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, VectorHit

if TYPE_CHECKING:
    from hello_memory.stores.bundle import Stores

__all__ = ["MODES", "SupersedeDecision", "Superseder", "Supersession"]

log = logging.getLogger(__name__)

MODES = ("auto", "rules", "off")
FACT_TYPES = (MemoryType.EPISODIC, MemoryType.SEMANTIC)
# A nearest memory under this cosine is not shown to the LLM (MiniLM puts unrelated
# sentences at 0-0.1 and related ones at 0.25-0.5: docs/RETRIEVAL.md).
MIN_CANDIDATE_COSINE = 0.2
# The general rule's candidates (Superseder._general): the nearest current memories of
# the new one. A change of value is often far in wording ("Started at Adyen on Monday"
# after "I work at Philips": cosine 0.1 with MiniLM), so only a negative cosine is out;
# text/attributes.py decides, not the cosine.
GENERAL_CANDIDATES = 20
GENERAL_MIN_COSINE = 0.0
# The rules read a fact's chain around the new memory's start (Superseder._rules): the
# memories valid then and this many of those starting after it.
CHAIN_WINDOW = 32


class SupersedeDecision(BaseModel):
    """The LLM's decision for one new memory against numbered existing ones.

    ``ADD``: a new fact, nothing changes. ``SUPERSEDE``: the fact changed; the
    ``targets`` held before and no longer do. ``UPDATE``: the new memory states the
    targets' fact better or more completely; they leave default search the same way.
    ``NOOP``: the new memory restates ``targets[0]``, which keeps holding the fact; the
    new one is stored with no validity of its own (kept in export, out of search)."""

    model_config = ConfigDict(extra="ignore")

    action: Literal["ADD", "UPDATE", "SUPERSEDE", "NOOP"]
    targets: list[int] = Field(default_factory=list, max_length=20)
    reason: str = Field(default="", max_length=1000)

    @field_validator("action", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value


@dataclass(frozen=True)
class Supersession:
    """One decision as applied: ``superseded`` lost its validity to ``by``."""

    memory_id: str
    action: str
    decided_by: str  # "llm" | "rules"
    superseded: tuple[str, ...] = ()


_SYSTEM = (
    "You keep a memory store consistent. A NEW memory is being stored; numbered EXISTING "
    "memories are the most similar ones already stored. Decide one action:\n"
    "ADD - the new memory states a new fact; nothing existing changes.\n"
    "SUPERSEDE - the new memory says a fact changed (someone moved, changed jobs, "
    "married, a number or preference changed): the existing memories it contradicts "
    "about the SAME subject and attribute are no longer true. List them in targets.\n"
    "UPDATE - the new memory states the same fact as existing ones, more completely or "
    "corrected; list them in targets.\n"
    "NOOP - the new memory only restates one existing memory; put it first in targets.\n"
    "Different people, different attributes, or facts that can hold together (several "
    "friends, hobbies, trips) are ADD. Answer JSON only: "
    '{"action": "ADD|UPDATE|SUPERSEDE|NOOP", "targets": [numbers], "reason": "short"}')


def _speaker(item: MemoryItem) -> tuple[str | None, ...]:
    """Who says "I" in ``item``: its user, speaker and role (all None: the user)."""
    meta = item.metadata or {}
    return (item.user_id, *(str(meta[k]) if meta.get(k) else None
                            for k in ("speaker", "role")))


def _valid_from(item: MemoryItem) -> datetime:
    return item.valid_from or item.event_time


def _unsettled(item: MemoryItem, start: datetime, runs: Sequence[Sequence[MemoryItem]],
               cut: bool) -> bool:
    """Whether the chain's window around ``start`` cannot settle ``item``'s add. The
    window holds the memories valid at ``start`` and the first ones after it: enough
    when those valid at ``start`` (other than ``item``) are one run that agrees on its
    end (a consistent chain has one run valid at any time; anything else was left
    by other writers and the whole chain is relinked), and, when more start after
    the window (``cut``), ``item``'s run is not the window's last (its end lies
    beyond)."""
    if cut and any(m.id == item.id for m in runs[-1]):
        return True
    before = [(n, m) for n, run in enumerate(runs) for m in run
              if m.id != item.id and _valid_from(m) <= start]
    return (len({n for n, _ in before}) > 1
            or len({(m.valid_to, m.superseded_by) for _, m in before}) > 1)


class _Links:
    """The validity links one :meth:`Superseder.apply` decided and has not written
    yet. Written together (``Stores.update_each``: one index pass and one outbox
    commit for them all; issue 27), and always before a read that could see one of
    them: the fact chain of a held member's key, or a held member read by id. So
    every decision reads what writing each link at once would have left."""

    def __init__(self, stores: Stores) -> None:
        self.stores = stores
        self.held: dict[str, dict[str, dict[str, Any]]] = {}  # namespace -> id -> changes
        self.keys: set[tuple[str, str | None]] = set()  # (namespace, fact key) held

    def hold(self, m: MemoryItem, valid_to: datetime | None, by: str | None) -> None:
        self.held.setdefault(m.namespace, {})[m.id] = {"valid_to": valid_to,
                                                        "superseded_by": by}
        self.keys.add((m.namespace, fact_key(m.content, m.metadata, m.user_id)))

    def before_chain(self, namespace: str, key: str) -> None:
        if (namespace, key) in self.keys:
            self.write()

    def before_items(self, namespace: str, ids: Sequence[str]) -> None:
        held = self.held.get(namespace, {})
        if any(i in held for i in ids):
            self.write()

    def write(self) -> None:
        held, self.held, self.keys = self.held, {}, set()
        for namespace, changes in held.items():
            self.stores.update_each(namespace, changes)


class _Pending:
    """The memories of one :meth:`Superseder.apply` batch that state a fact and whose
    turn has not come yet, by (namespace, fact key). They are stored with the batch
    but left out of the chains the rules read until their turn, so each decision sees
    what adding the batch one memory at a time would have shown it; without this, the
    first decision of a batch found every later member of its chain still unlinked and
    had to relink the whole chain (a read growing with the namespace; issue 27)."""

    def __init__(self, items: Sequence[MemoryItem]) -> None:
        self.ids: dict[tuple[str, str], set[str]] = {}
        self.key: dict[str, tuple[str, str]] = {}
        for item in items:
            if item.memory_type not in FACT_TYPES:
                continue
            key = fact_key(item.content, item.metadata, item.user_id)
            if key is not None:
                self.key[item.id] = (item.namespace, key)
                self.ids.setdefault((item.namespace, key), set()).add(item.id)

    def reached(self, item: MemoryItem) -> None:
        """``item``'s turn: from now on it is part of its chain."""
        where = self.key.pop(item.id, None)
        if where is not None:
            self.ids[where].discard(item.id)

    def of(self, namespace: str, key: str) -> frozenset[str]:
        return frozenset(self.ids.get((namespace, key), ()))


class Superseder:
    """The supersede step of the add path (see the module doc), over the stores and
    the configured LLM (None: the rules decide), given by construction (issue 31)."""

    def __init__(self, stores: Stores, llm: LLMClient | None = None, *, mode: str = "auto",
                 candidates: int = 5) -> None:
        if mode not in MODES:
            raise ValueError(f"memory.supersede must be one of {MODES}, got {mode!r}")
        self.stores = stores
        self._llm = llm
        self.mode = mode
        self.candidates = candidates

    @property
    def llm(self) -> LLMClient | None:
        return self._llm if self.mode == "auto" else None

    def apply(self, items: Sequence[MemoryItem],
              vectors: Mapping[str, Any] | None = None) -> list[Supersession]:
        """Decide and apply supersession for ``items``, memories just stored (in
        order); the items given are updated in place with their own validity.
        ``vectors`` (id -> the vector just stored) spares embedding them again for the
        candidates of the general rule."""
        if self.mode == "off":
            return []
        neighbours = {} if self.llm is not None else self._neighbours(items, vectors or {})
        links = _Links(self.stores)
        pending = _Pending(items)
        done: list[Supersession] = []
        try:
            for item in items:
                pending.reached(item)
                if item.memory_type not in FACT_TYPES:
                    continue
                if self.llm is not None:
                    result = self._with_llm(item, links, pending)
                elif not states_now(item.content):
                    continue  # "In 2019 I lived in Oslo", "I might move": nothing ends now
                else:
                    result = self._rules(item, links, pending)
                    if result is None or not result.superseded:
                        general = self._general(item, neighbours.get(item.id, []), links)
                        result = general or result
                if result is not None and (result.superseded or result.action == "NOOP"):
                    self.stores.records.audit.add(item.namespace, "supersede", {
                        "memory": result.memory_id, "action": result.action,
                        "by": result.decided_by, "superseded": list(result.superseded)})
                    done.append(result)
        finally:
            links.write()
        return done

    # --- rules ----------------------------------------------------------------------
    def _rules(self, item: MemoryItem, links: _Links, pending: _Pending
               ) -> Supersession | None:
        """The phrasing rules: the memories stating ``item``'s fact form a chain sorted
        by start; runs of one value are valid until the next run starts and are
        superseded by its first memory. An add reads only the chain's window around
        its start (issue 27: chains grow with the namespace, the window does not);
        where the window cannot settle it, the whole chain. The memories of the same
        batch not decided yet are not in the chain (``pending``): each joins it at its
        own turn, as adding the batch one memory at a time would."""
        fact = fact_of(item.content, item.metadata, item.user_id)
        if fact is None:
            return None
        memories = self.stores.records.memories
        start = _valid_from(item)
        links.before_chain(item.namespace, fact.key)
        skip = pending.of(item.namespace, fact.key)
        # read only (links are held, never set on the members): shared records
        window = memories.same_fact(item.namespace, fact.key, around=start,
                                    after=CHAIN_WINDOW, shared=True, exclude=skip)
        later = sum(1 for m in window if _valid_from(m) > start)
        runs = self._runs(item, fact.key, window, links)
        if runs is None:
            return None  # not stored as a fact memory (another type, forgotten)
        cut = later >= CHAIN_WINDOW  # more start after the window: its last run is open
        if _unsettled(item, start, runs, cut):
            runs = self._runs(item, fact.key, memories.same_fact(
                item.namespace, fact.key, shared=True, exclude=skip), links)
            cut = False
            if runs is None:
                return None
        wanted: dict[str, tuple[datetime | None, str | None]] = {}
        for n, run in enumerate(runs[:-1] if cut else runs):
            nxt = runs[n + 1][0] if n + 1 < len(runs) else None
            for m in run:
                wanted[m.id] = ((_valid_from(nxt), nxt.id) if nxt is not None else (None, None))
        superseded = self._set_validity(item, [m for run in runs for m in run], wanted,
                                        links)
        return Supersession(item.id, "SUPERSEDE" if superseded else "ADD", "rules",
                            tuple(superseded))

    def _runs(self, item: MemoryItem, key: str, members: Sequence[MemoryItem],
              links: _Links) -> list[list[MemoryItem]] | None:
        """``members`` of the fact ``key`` that the rules own, sorted by start and cut
        into runs of one value; None when ``item`` is not among them."""
        members = [m for m in members if m.memory_type in FACT_TYPES]
        if item.id not in {m.id for m in members}:
            return None
        values: dict[str, str] = {}
        for m in members:
            parsed = fact_of(m.content, m.metadata, m.user_id)
            if parsed is not None and parsed.key == key:
                values[m.id] = parsed.value
        chain = [m for m in members if m.id in values]
        ids = set(values)
        # Only links the rules own are rewritten: a memory superseded by one outside
        # this chain (an LLM decision) keeps its link. A link to a memory outside the
        # window is looked up, so the window decides as the whole chain would.
        outside = {m.superseded_by for m in chain
                   if m.superseded_by is not None and m.superseded_by not in ids}
        if outside:
            links.before_items(item.namespace, sorted(outside))
            for other in self.stores.records.memories.get_items(  # read only: cached
                    item.namespace, sorted(outside), shared=True):
                parsed = fact_of(other.content, other.metadata, other.user_id)
                if (other.memory_type in FACT_TYPES and other.status == MemoryStatus.ACTIVE
                        and parsed is not None and parsed.key == key):
                    ids.add(other.id)
        chain = [m for m in chain if m.superseded_by is None or m.superseded_by in ids]
        chain.sort(key=lambda m: (_valid_from(m), m.recorded_time, m.id))
        runs: list[list[MemoryItem]] = []
        for m in chain:
            if runs and same_value(values[runs[-1][0].id], values[m.id]):
                runs[-1].append(m)
            else:
                runs.append([m])
        return runs

    def _neighbours(self, items: Sequence[MemoryItem], vectors: Mapping[str, Any]
                    ) -> dict[str, list[VectorHit]]:
        """The dense neighbours the general rule reads (GENERAL_CANDIDATES + 1 fact
        memories), for each of ``items`` it may read them for: one batched search per
        namespace (``nearest_batch``; issue 27: the add path scores a namespace once per
        batch, not once per memory). Decisions never change a vector or a memory type,
        so the neighbours found before the first decision are the ones each would find."""
        todo = [i for i in items if i.memory_type in FACT_TYPES and states_now(i.content)
                and attributes_of(i.content)]
        stores = self.stores
        by_ns: dict[str, list[MemoryItem]] = {}
        for item in todo:
            by_ns.setdefault(item.namespace, []).append(item)
        out: dict[str, list[VectorHit]] = {}
        filters = payload_filters(ItemFilter(memory_types=FACT_TYPES))
        for namespace, members in by_ns.items():
            queries = [list(map(float, vectors[m.id] if vectors.get(m.id) is not None
                                else stores.embedder.embed_query(m.content)))
                       for m in members]
            found = stores.vectors.nearest_batch(
                MEMORY_COLLECTION, queries, namespace=namespace, using=DENSE,
                limit=GENERAL_CANDIDATES + 1, filters=filters)
            out.update((m.id, hits) for m, hits in zip(members, found, strict=True))
        return out

    def _general(self, item: MemoryItem, hits: Sequence[VectorHit], links: _Links
                 ) -> Supersession | None:
        """The general rule (text/attributes.py): among the nearest current memories
        (``hits``: the dense neighbours of :meth:`_neighbours`, those above
        GENERAL_MIN_COSINE), those about the same subject and attribute that ``item``
        replaces, or the newer one that replaces ``item`` when it states an older
        time. Both keep their records (bi-temporal validity, as the phrasing rules
        write it)."""
        if not hits:
            return None
        stores = self.stores
        flt = ItemFilter(memory_types=FACT_TYPES)
        ids = [h.id for h in hits if h.id != item.id and h.score >= GENERAL_MIN_COSINE]
        links.before_items(item.namespace, ids)
        # Standing facts only (an event is not replaced by a later one), said by the
        # same speaker: "I" is whoever speaks (text/facts.py fact_of reads it the same way).
        # Read only (``_set_validity`` holds their links and changes ``item`` alone), so
        # from the record cache where the store keeps one: the neighbours of a batch's
        # memories are mostly the same few records (stores/records/item_cache.py).
        found = [m for m in stores.records.memories.get_items(item.namespace, ids,
                                                              shared=True)
                 if matches(m, flt) and m.valid_to is None and m.superseded_by is None
                 and _speaker(m) == _speaker(item)]
        start = _valid_from(item)
        plain = item.memory_type == MemoryType.SEMANTIC  # an event needs a change marker
        older = [m for m in found if m.memory_type == MemoryType.SEMANTIC
                 and _valid_from(m) <= start and replaces(item.content, m.content, plain=plain)]
        if older:
            wanted: dict[str, tuple[datetime | None, str | None]] = {
                m.id: (start, item.id) for m in older}
            lost = self._set_validity(item, older, wanted, links)
            return Supersession(item.id, "SUPERSEDE", "rules", tuple(lost))
        newer = sorted((m for m in found if _valid_from(m) > start
                        and item.memory_type == MemoryType.SEMANTIC
                        and replaces(m.content, item.content)), key=_valid_from)
        if newer:
            holder = newer[0]
            self._set_validity(item, [item], {item.id: (_valid_from(holder), holder.id)},
                               links)
            return Supersession(item.id, "SUPERSEDE", "rules", (item.id,))
        return None

    def _set_validity(self, item: MemoryItem, members: Sequence[MemoryItem],
                      wanted: dict[str, tuple[datetime | None, str | None]],
                      links: _Links) -> list[str]:
        """Write the validity ``wanted`` (memory id -> (valid_to, superseded_by)) where
        it differs (held in ``links`` until a read could see it); returns the ids that
        lost their validity."""
        lost: list[str] = []
        for m in members:
            valid_to, by = wanted.get(m.id, (m.valid_to, m.superseded_by))
            if (valid_to, by) == (m.valid_to, m.superseded_by):
                continue
            links.hold(m, valid_to, by)
            if m.id == item.id:
                item.valid_to, item.superseded_by = valid_to, by
            if by is not None:
                lost.append(m.id)
        return lost

    # --- LLM ------------------------------------------------------------------------
    def _candidates(self, item: MemoryItem) -> list[MemoryItem]:
        """The nearest current memories of ``item``'s namespace (not itself), then the
        ones the rules say state the same fact."""
        stores = self.stores
        flt = ItemFilter(memory_types=FACT_TYPES)
        vector = stores.embedder.embed_query(item.content)
        hits = stores.vectors.nearest(MEMORY_COLLECTION, vector.tolist(),
                                      namespace=item.namespace, using=DENSE,
                                      limit=self.candidates + 1, filters=payload_filters(flt))
        ids = [h.id for h in hits if h.id != item.id and h.score >= MIN_CANDIDATE_COSINE]
        fact = fact_of(item.content, item.metadata, item.user_id)
        if fact is not None:
            ids += [m.id for m in stores.records.memories.same_fact(item.namespace, fact.key)
                    if m.id != item.id and m.valid_to is None]
        ids = list(dict.fromkeys(ids))[: self.candidates * 2]
        found = stores.records.memories.get_items(item.namespace, ids)
        return [m for m in found if matches(m, flt)]

    def _with_llm(self, item: MemoryItem, links: _Links, pending: _Pending
                  ) -> Supersession | None:
        links.write()  # the candidates are read whole: every earlier link written first
        candidates = self._candidates(item)
        if not candidates:
            return None
        llm = self.llm
        assert llm is not None
        return call_or_fallback(llm, lambda c: self._decide(c, item, candidates, links),
                                lambda: self._rules(item, links, pending),
                                what="supersede decision")

    def _decide(self, llm: LLMClient, item: MemoryItem, candidates: Sequence[MemoryItem],
                links: _Links) -> Supersession:
        listing = [{"n": n, "content": m.content, "event_time": _valid_from(m).isoformat()}
                   for n, m in enumerate(candidates, 1)]
        prompt = json.dumps({"new": {"content": item.content,
                                     "event_time": _valid_from(item).isoformat()},
                             "existing": listing}, ensure_ascii=False)
        messages: list[Message] = [{"role": "system", "content": _SYSTEM},
                                   {"role": "user", "content": prompt}]
        decision = llm.complete_json(messages, SupersedeDecision)
        targets = list(dict.fromkeys(decision.targets))
        if decision.action != "ADD" and (not targets or any(
                not 1 <= t <= len(candidates) for t in targets)):
            raise LLMSchemaError(f"{decision.action} names no candidate 1..{len(candidates)}: "
                                 f"{decision.targets}", schema=SupersedeDecision,
                                 answer=decision.model_dump_json())
        chosen = [candidates[t - 1] for t in targets]
        if decision.action == "ADD":
            return Supersession(item.id, "ADD", "llm")
        if decision.action == "NOOP":
            # The existing memory keeps holding the fact; the restatement holds nothing.
            holder = chosen[0]
            start = _valid_from(item)
            self._set_validity(item, [item], {item.id: (start, holder.id)}, links)
            return Supersession(item.id, "NOOP", "llm")
        wanted: dict[str, tuple[datetime | None, str | None]] = {}
        for old in chosen:
            if _valid_from(old) <= _valid_from(item):
                wanted[old.id] = (_valid_from(item), item.id)
            else:  # the new memory is about an earlier time: its validity ends
                wanted[item.id] = (_valid_from(old), old.id)
        lost = self._set_validity(item, [*chosen, item], wanted, links)
        return Supersession(item.id, decision.action, "llm", tuple(lost))
