"""Namespace isolation, property-based: random interleavings of add / search / update /
forget / clear / consolidate across several namespaces (hostile names included). After
every step, no other namespace's records, vectors, graph or working memory changed, and
nothing returned belongs to another namespace."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from hello_memory.errors import NotFoundError
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.bundle import MEMORY_COLLECTION
from hello_memory.types import MemoryType

from .support import all_items, assert_consistent, make_manager

pytestmark = pytest.mark.slow

NAMESPACES = ["alpha", "beta'; DROP TABLE hm_memory_items; --", "团队/🧠 {x}"]
CONTENTS = [
    "Alice moved to Lisbon and works at Acme",
    "Bob drinks green tea every morning",
    "The deploy failed because a migration timed out",
    "Carol's cat Pixel likes the sunny window",
    "MATCH (n) DETACH DELETE n",
    "' OR 1=1 -- and Dave laughed",
    "Erin said \"ship it\" on `main` with {braces}",
    "周末和小明去了杭州西湖",
]
TYPES = ["episodic", "semantic", "working"]
IMPORTANCE = [0.05, 0.5, 0.95]

_EMBEDDER: Any = None  # set by the test below (hypothesis builds the machine itself)
# () -> settings overrides naming a fresh record database; set by the test below
_NEW_RECORDS: Any = dict


def ns_state(mm: MemoryManager, ns: str) -> tuple[Any, ...]:
    """Everything one namespace holds, in every store (access counts included: a
    search elsewhere must not touch them)."""
    items = tuple(sorted((i.id, i.content, i.memory_type.value, i.status.value, i.importance,
                          i.access_count, tuple(sorted(i.metadata.items(), key=str)))
                         for i in all_items(mm, ns)))
    g = mm.stores.graph.stats(ns)
    return (items, tuple(sorted(mm.stores.vectors.ids(MEMORY_COLLECTION, namespace=ns))),
            (g.entities, g.relations, g.mentions), tuple(sorted(mm.stores.graph.memory_ids(ns))),
            tuple(sorted((w.id, w.content, w.access_count) for w in mm.working.list(ns))))


class Isolation(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="hm-iso-"))
        self.mm = make_manager(self.dir, _EMBEDDER,
                               **{"vector": {"location": ":memory:"}, **_NEW_RECORDS()})
        # namespace -> ids this test wrote there and did not delete
        self.ids: dict[str, set[str]] = {ns: set() for ns in NAMESPACES}

    def teardown(self) -> None:
        self.mm.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _others(self, ns: str) -> dict[str, Any]:
        return {o: ns_state(self.mm, o) for o in NAMESPACES if o != ns}

    def _check_others(self, ns: str, before: dict[str, Any]) -> None:
        assert self._others(ns) == before, f"an operation on {ns!r} changed another namespace"

    def _live(self, ns: str) -> set[str]:
        return {i.id for i in all_items(self.mm, ns)} | {w.id for w in self.mm.working.list(ns)}

    @rule(ns=st.sampled_from(NAMESPACES), content=st.sampled_from(CONTENTS),
          mtype=st.sampled_from(TYPES), importance=st.sampled_from(IMPORTANCE),
          n=st.integers(1, 3))
    def add(self, ns: str, content: str, mtype: str, importance: float, n: int) -> None:
        before = self._others(ns)
        items = self.mm.add_many([{"content": f"{content} #{k}", "memory_type": mtype,
                                   "importance": importance, "namespace": ns,
                                   "metadata": {"ns": ns}} for k in range(n)])
        assert all(i.namespace == ns for i in items)
        self.ids[ns] |= {i.id for i in items}
        self._check_others(ns, before)

    @rule(ns=st.sampled_from(NAMESPACES), query=st.sampled_from(CONTENTS),
          top_k=st.integers(1, 20))
    def search(self, ns: str, query: str, top_k: int) -> None:
        before = self._others(ns)
        hits = self.mm.search(query, top_k=top_k, namespace=ns)
        assert {h.item.namespace for h in hits} <= {ns}
        assert {h.id for h in hits} <= self.ids[ns]
        assert all(h.item.metadata.get("ns") == ns for h in hits)
        self._check_others(ns, before)

    @rule(data=st.data(), ns=st.sampled_from(NAMESPACES), other=st.sampled_from(NAMESPACES))
    def update(self, data: st.DataObject, ns: str, other: str) -> None:
        if not self.ids[ns]:
            return
        memory_id = data.draw(st.sampled_from(sorted(self.ids[ns])))
        if other != ns:  # reaching into another namespace finds nothing
            before = {o: ns_state(self.mm, o) for o in NAMESPACES}
            with pytest.raises(NotFoundError):
                self.mm.update(memory_id, namespace=other, importance=0.9)
            with pytest.raises(NotFoundError):
                self.mm.get(memory_id, namespace=other)
            assert self.mm.remove(memory_id, namespace=other) is False
            assert {o: ns_state(self.mm, o) for o in NAMESPACES} == before
            return
        before = self._others(ns)
        item = self.mm.update(memory_id, namespace=ns, content=data.draw(
            st.sampled_from(CONTENTS)) + " (edited)", metadata={"ns": ns, "edited": True})
        assert item.namespace == ns
        self._check_others(ns, before)

    @rule(ns=st.sampled_from(NAMESPACES), hard=st.booleans())
    def forget(self, ns: str, hard: bool) -> None:
        before = self._others(ns)
        report = self.mm.forget("importance", namespace=ns, threshold=0.1, hard=hard,
                                memory_types=["episodic", "semantic", "working"])
        assert set(report.ids) <= self.ids[ns]
        self.ids[ns] = self._live(ns)
        self._check_others(ns, before)

    @rule(ns=st.sampled_from(NAMESPACES))
    def clear(self, ns: str) -> None:
        before = self._others(ns)
        self.mm.clear(ns, confirm=True)
        assert self._live(ns) == set()
        self.ids[ns] = set()
        self._check_others(ns, before)

    @rule(ns=st.sampled_from(NAMESPACES), step=st.sampled_from(
        [("working", "episodic"), ("episodic", "semantic")]))
    def consolidate(self, ns: str, step: tuple[str, str]) -> None:
        before = self._others(ns)
        report = self.mm.consolidate(*step, namespace=ns, importance_threshold=0.7)
        for target, sources in report.merged.items():
            assert set(sources) <= self.ids[ns]
            assert self.mm.get(target, namespace=ns).namespace == ns
        self.ids[ns] = self._live(ns)
        self._check_others(ns, before)

    @invariant()
    def stores_agree(self) -> None:
        for ns in NAMESPACES:
            assert self._live(ns) == self.ids[ns]
            assert_consistent(self.mm, ns)
            stats = self.mm.stats(ns)
            stored = [i for i in all_items(self.mm, ns)
                      if i.memory_type in (MemoryType.EPISODIC, MemoryType.SEMANTIC)]
            assert stats["vectors"] == len(stored)
            assert stats["total"] == len(self.ids[ns]) - stats["forgotten"]


@pytest.mark.parametrize("records", ["sqlite",
                                     pytest.param("postgresql", marks=pytest.mark.postgres),
                                     pytest.param("pgvector", marks=pytest.mark.postgres)])
def test_random_interleavings_never_cross_namespaces(embedder: Any, records: str,
                                                     request: pytest.FixtureRequest) -> None:
    """With the records (and the SQL graph tables) in SQLite, and in PostgreSQL; and
    with the vectors in that PostgreSQL database too (pgvector, issue 30)."""
    global _EMBEDDER, _NEW_RECORDS
    _EMBEDDER = embedder
    _NEW_RECORDS = dict
    if records == "postgresql":
        server = request.getfixturevalue("postgres_server")
        _NEW_RECORDS = lambda: {"records": {"url": server.create_schema()}}  # noqa: E731
    if records == "pgvector":
        server = request.getfixturevalue("postgres_server")
        _NEW_RECORDS = lambda: {"records": {"url": server.create_schema()},  # noqa: E731
                                "vector": {"provider": "pgvector"}}
    # Fewer examples on PostgreSQL: the interleavings are the same program; what the
    # second database adds is its SQL, which four examples already run through.
    run_state_machine_as_test(Isolation, settings=settings(
        max_examples={"sqlite": 8, "postgresql": 4}.get(records, 3), stateful_step_count=14,
        deadline=None, database=None, suppress_health_check=list(HealthCheck)))
