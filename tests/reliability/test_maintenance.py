"""reconcile and reindex: damage the derived indexes through the public store
protocols, then check that the records alone bring them back."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hello_memory.memory.maintenance import ReconcileReport, ReindexReport
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION
from hello_memory.types import Entity, MemoryItem, MemoryType, VectorPoint

from .support import assert_consistent, fingerprint, make_manager

pytestmark = pytest.mark.slow

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)

CORPUS = [
    ("Alice moved to Lisbon in 2019 and works at Acme Robotics", "semantic"),
    ("Bob prefers green tea over coffee in the morning", "semantic"),
    ("Carol adopted a grey cat named Pixel", "semantic"),
    ("The team shipped the billing service on Friday", "episodic"),
    ("Dave ran the Berlin marathon in under four hours", "semantic"),
    ("We discussed the quarterly roadmap with Erin", "episodic"),
    ("The build server ran out of disk space overnight", "episodic"),
    ("Frank is allergic to peanuts and shellfish", "semantic"),
    ("Grace plays the cello in the city orchestra", "semantic"),
    ("Lunch at the ramen place near the office was great", "episodic"),
    ("Heidi learned to sail on Lake Geneva last summer", "semantic"),
    ("The deploy failed because a migration timed out", "episodic"),
]
QUERIES = ["what does Bob drink", "pets", "sports and running", "production incidents",
           "where does Alice live", "music"]


def _clock() -> datetime:
    return NOW


@pytest.fixture
def mm(tmp_path: Path, embedder: Any) -> Iterator[MemoryManager]:
    m = make_manager(tmp_path / "data", embedder, clock=_clock)
    m.add_many([{"content": c, "memory_type": t, "importance": 0.3 + 0.05 * k,
                 "event_time": NOW - timedelta(days=k), "namespace": "ns"}
                for k, (c, t) in enumerate(CORPUS)])
    m.add("Ivan keeps bees in the garden", "semantic", 0.5, namespace="other")
    yield m
    m.close()


def _results(mm: MemoryManager) -> list[list[tuple[str, float]]]:
    return [[(h.id, round(h.score, 4)) for h in mm.search(q, top_k=5, namespace="ns")]
            for q in QUERIES]


def test_reconcile_on_consistent_stores_changes_nothing(mm: MemoryManager) -> None:
    before = fingerprint(mm, ["ns", "other"])
    report = mm.reconcile()
    assert isinstance(report, ReconcileReport)
    assert report.changed == 0, report.as_dict()
    assert report.namespaces == ["ns", "other"]
    assert fingerprint(mm, ["ns", "other"]) == before


def test_reconcile_repairs_every_kind_of_drift(mm: MemoryManager, embedder: Any) -> None:
    st = mm.stores
    items = {i.content: i for i in st.records.memories.list_items("ns")}
    lost = items[CORPUS[1][0]]          # semantic: vector and graph links lost
    stale = items[CORPUS[3][0]]         # payload disagrees with the record
    unlinked = items[CORPUS[0][0]]      # graph links lost, vector kept
    st.vectors.delete(MEMORY_COLLECTION, [lost.id], namespace="ns")
    st.graph.remove_memory("ns", lost.id)
    st.graph.remove_memory("ns", unlinked.id)
    st.vectors.set_payload(MEMORY_COLLECTION, [stale.id], {"status": "forgotten"},
                           namespace="ns")
    ghost = str(uuid.uuid4())           # vector and graph link without a record
    vec = embedder.embed(["a ghost memory nobody wrote"])[0].tolist()
    st.vectors.upsert(MEMORY_COLLECTION, [VectorPoint(
        id=ghost, vectors={DENSE: vec}, payload={"namespace": "ns", "status": "active",
                                                 "memory_type": "episodic"})])
    st.graph.add_mentions("ns", ghost, [Entity(name="Ghost", type="person", namespace="ns")])
    other_before = fingerprint(mm, ["other"])["other"]

    dry = mm.reconcile(namespace="ns", dry_run=True)
    assert dry.reindexed == [lost.id] and dry.orphan_vectors == [ghost]
    assert st.vectors.ids(MEMORY_COLLECTION, namespace="ns") >= {ghost}  # dry: untouched

    report = mm.reconcile(namespace="ns")
    assert report.reindexed == [lost.id]
    assert report.orphan_vectors == [ghost]
    assert report.orphan_graph_links == [ghost]
    assert report.payloads_refreshed == [stale.id]
    assert report.graph_relinked == [unlinked.id]
    assert report.as_dict()["changed"] == 5
    assert_consistent(mm, "ns")
    assert lost.id in st.graph.memory_ids("ns")  # re-indexing re-extracts the graph
    hits = mm.search("Bob prefers green tea", top_k=1, namespace="ns")
    assert [h.id for h in hits] == [lost.id]
    assert mm.reconcile(namespace="ns").changed == 0  # idempotent
    assert fingerprint(mm, ["other"])["other"] == other_before


def test_reconcile_replays_pending_outbox(mm: MemoryManager) -> None:
    # A crash after the record commit: the record and its outbox row exist, no vector.
    item = MemoryItem(content="Judy collects vintage maps", namespace="ns",
                      memory_type=MemoryType.SEMANTIC, event_time=NOW)
    mm.stores.records.memories.add_items([item])
    report = mm.reconcile()
    assert report.outbox_replayed == 1
    assert_consistent(mm, "ns")
    assert [h.id for h in mm.search("vintage maps", top_k=1, namespace="ns")] == [item.id]


def test_reconcile_finds_orphans_of_a_namespace_without_records(mm: MemoryManager) -> None:
    ids = [i.id for i in mm.stores.records.memories.list_items("other")]
    mm.stores.records.memories.delete_items("other", ids)  # crash before the outbox is applied
    assert mm.stores.vectors.ids(MEMORY_COLLECTION, namespace="other") == set(ids)
    report = mm.reconcile()
    assert "other" in report.namespaces
    assert mm.stores.vectors.ids(MEMORY_COLLECTION, namespace="other") == set()
    assert mm.stores.graph.memory_ids("other") == set()


def test_reindex_gives_the_same_results_from_records_alone(mm: MemoryManager) -> None:
    before = _results(mm)
    assert all(before)
    graph_before = mm.stores.graph.stats("ns")
    # Lose every derived index of the namespace.
    mm.stores.vectors.clear(MEMORY_COLLECTION, namespace="ns")
    mm.stores.graph.clear("ns")
    assert mm.search(QUERIES[0], top_k=5, namespace="ns") == []
    other = fingerprint(mm, ["other"])["other"]

    dry = mm.reindex(namespace="ns", dry_run=True)
    assert isinstance(dry, ReindexReport) and dry.vectors_written == len(CORPUS)
    assert mm.stores.vectors.count(MEMORY_COLLECTION, namespace="ns") == 0

    report = mm.reindex(namespace="ns", progress=True)
    assert report.as_dict()["vectors_written"] == len(CORPUS)
    assert report.graph_memories == sum(t == "semantic" for _, t in CORPUS)
    assert _results(mm) == before  # same ids, same order, same scores
    assert mm.stores.graph.stats("ns") == graph_before
    assert_consistent(mm, "ns")
    assert fingerprint(mm, ["other"])["other"] == other


def test_reindex_all_namespaces_is_idempotent(mm: MemoryManager) -> None:
    before = _results(mm)
    fp = fingerprint(mm, ["ns", "other"])
    report = mm.reindex()
    assert report.namespaces == ["ns", "other"]
    assert report.orphan_vectors == 0
    assert _results(mm) == before
    after = fingerprint(mm, ["ns", "other"])
    for ns in ("ns", "other"):
        assert after[ns] == fp[ns]


def test_replay_at_open_links_the_graph(tmp_path: Path, embedder: Any) -> None:
    mm = make_manager(tmp_path / "d", embedder)
    item = MemoryItem(content="Judy collects vintage maps in Vienna", namespace="ns",
                      memory_type=MemoryType.SEMANTIC, event_time=NOW)
    mm.stores.records.memories.add_items([item])  # a crash right after the commit
    mm.close()
    mm = make_manager(tmp_path / "d", embedder)  # opening replays the outbox
    try:
        assert mm.stores.records.outbox.pending_outbox() == []
        assert item.id in mm.stores.vectors.ids(MEMORY_COLLECTION, namespace="ns")
        assert item.id in mm.stores.graph.memory_ids("ns")
    finally:
        mm.close()


def test_reconcile_links_what_the_replay_at_open_missed(tmp_path: Path, embedder: Any) -> None:
    mm = make_manager(tmp_path / "d", embedder)
    item = MemoryItem(content="Judy collects vintage maps in Vienna", namespace="ns",
                      memory_type=MemoryType.SEMANTIC, event_time=NOW)
    mm.stores.records.memories.add_items([item])  # a crash right after the commit
    mm.close()
    mm = make_manager(tmp_path / "d", embedder)
    try:
        mm.reconcile()
        assert item.id in mm.stores.graph.memory_ids("ns")
        assert_consistent(mm, "ns")
    finally:
        mm.close()
