"""The search's vector queries leave out the conditions every point meets (issue 27;
memory/episodic.py ``payload_filters``, docs/PERFORMANCE.md "Conditions every point
meets"): both stored types always, the status where the namespace holds active
memories only. Where one is forgotten the status condition comes back, so forgotten
memories never crowd the candidates out."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from hello_memory.config import load_settings
from hello_memory.memory.manager import MemoryManager
from hello_memory.ports.vector import VectorFilter

NS = "n"
NAMES = ["Ada", "Bram", "Chloe", "Dirk", "Eva", "Finn", "Greta", "Hugo", "Iris", "Jens",
         "Kira", "Lars", "Mila", "Noor", "Otto", "Pia", "Quinn", "Rosa", "Sven", "Tess"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _open(data_dir: Path, **extra: Any) -> MemoryManager:
    return MemoryManager.open(load_settings(environ={}, data_dir=data_dir, **extra))


@pytest.fixture()
def mm(tmp_path: Path) -> Iterator[MemoryManager]:
    manager = _open(tmp_path / "d", retrieval={"candidates": 8})
    try:
        yield manager
    finally:
        manager.close()


def _spy(mm: MemoryManager, monkeypatch: pytest.MonkeyPatch) -> list[VectorFilter]:
    """The filters the memory collection's nearest queries get, in order."""
    seen: list[VectorFilter] = []
    real = mm.stores.vectors.nearest

    def nearest(collection: str, query: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("filters") or VectorFilter())
        return real(collection, query, **kwargs)

    monkeypatch.setattr(mm.stores.vectors, "nearest", nearest)
    return seen


def test_a_search_leaves_out_what_every_point_meets(mm: MemoryManager,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    train = mm.add("Sofia takes the early train to the airport.", namespace=NS).id
    mm.add("The basil on the balcony needs water every morning.", namespace=NS)
    mm.add("I forgot to pay the electricity bill again.", namespace=NS,
           memory_type="semantic")
    seen = _spy(mm, monkeypatch)
    hits = mm.search("train to the airport", namespace=NS, touch=False)
    assert hits[0].id == train
    assert seen and all(f.conditions == {} for f in seen)  # namespace only
    # one memory forgotten: the status condition is back, the next write's generation
    mm.forget_ids([train], namespace=NS)
    seen.clear()
    hits = mm.search("train to the airport", namespace=NS, touch=False)
    assert train not in [h.id for h in hits]
    assert seen and all(f.conditions == {"status": "active"} for f in seen)
    # restored: every memory is active again, and found again
    assert mm.restore([train], namespace=NS) == 1
    seen.clear()
    assert mm.search("train to the airport", namespace=NS, touch=False)[0].id == train
    assert seen and all(f.conditions == {} for f in seen)
    # one of the two stored types asked for: its condition stays
    seen.clear()
    mm.search("train to the airport", ["semantic"], namespace=NS, touch=False)
    assert seen and all(f.conditions == {"memory_type": ("semantic",)} for f in seen)


def test_another_namespaces_forgotten_memory_changes_nothing_here(
        mm: MemoryManager, monkeypatch: pytest.MonkeyPatch) -> None:
    mm.add("Sofia takes the early train to the airport.", namespace=NS)
    gone = mm.add("Sofia takes the early train to the airport.", namespace="other").id
    mm.forget_ids([gone], namespace="other")
    seen = _spy(mm, monkeypatch)
    mm.search("train to the airport", namespace=NS, touch=False)
    assert seen and all(f.conditions == {} for f in seen)
    seen.clear()
    mm.search("train to the airport", namespace="other", touch=False)
    assert seen and all(f.conditions == {"status": "active"} for f in seen)


def test_forgotten_memories_never_crowd_out_the_active_one(mm: MemoryManager) -> None:
    """With 8 candidates per view, 30 forgotten memories nearer the question than the
    one active memory would fill every view's list if the status were left out while
    they are there: the active one would be found by none."""
    crowd = [mm.add(f"{NAMES[n % 20]} took the airport train on {DAYS[n % 7]} "
                    f"morning at {6 + n % 5} o'clock with luggage number {n}.",
                    namespace=NS).id for n in range(30)]
    assert len(set(crowd)) == 30  # none merged as a duplicate
    kept = mm.add("Packing list for the flight: passport, charger, snacks.",
                  namespace=NS).id
    mm.forget_ids(crowd, namespace=NS)
    hits = mm.search("airport train luggage", namespace=NS, touch=False)
    assert [h.id for h in hits] == [kept]


def test_holds_inactive_on_both_databases(tmp_path: Path, records_url: str) -> None:
    manager = _open(tmp_path / "d", records={"url": records_url})
    try:
        memories = manager.stores.records.memories
        a = manager.add("Pizza night on Friday.", namespace="a").id
        manager.add("I cycle to work.", namespace="b", memory_type="semantic")
        assert not memories.holds_inactive("a") and not memories.holds_inactive("b")
        manager.forget_ids([a], namespace="a")
        assert memories.holds_inactive("a") and not memories.holds_inactive("b")
        manager.restore([a], namespace="a")
        assert not memories.holds_inactive("a")
    finally:
        manager.close()


def test_holds_inactive_seeks_the_index_on_sqlite(mm: MemoryManager) -> None:
    """One EXISTS query by seeks on an index led by (namespace, memory_type, status)
    (SQLite picks ix_items_ns_type_status or ix_items_ns_type_importance), never a scan
    of the namespace: it runs again after every write the search follows."""
    mm.add("Pizza night on Friday.", namespace=NS)
    statements: list[tuple[str, Any]] = []
    engine = mm.stores.records.engine

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any,
                context: Any, executemany: bool) -> None:
        statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        assert not mm.stores.records.memories.holds_inactive(NS)
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    [(sql, params)] = [s for s in statements if "EXISTS" in s[0].upper()]
    with sqlite3.connect(engine.url.database) as raw:
        plan = " | ".join(row[-1] for row in raw.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    assert "SEARCH hm_memory_items USING" in plan, plan
    assert "(namespace=? AND memory_type=? AND status=?)" in plan, plan
    assert "SCAN hm_memory_items" not in plan, plan
