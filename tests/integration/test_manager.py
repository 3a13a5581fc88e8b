"""MemoryManager end to end on embedded stores and the real MiniLM embedder."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from hello_memory.config import load_settings
from hello_memory.errors import (
    EmptyContentError,
    InvalidImportanceError,
    InvalidInputError,
    NotFoundError,
)
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.memory.working import WorkingMemory
from hello_memory.types import MemoryStatus, MemoryType

pytestmark = pytest.mark.slow

NOW = datetime(2024, 6, 1, 12, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(scope="module")
def embedder():
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def make(data: Path, embedder, clock: Clock | None = None) -> MemoryManager:
    settings = load_settings(environ={}, data_dir=data)
    clock = clock or Clock()
    return MemoryManager(open_stores(settings, embedder=embedder),
                         working=WorkingMemory(clock=clock), clock=clock)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mm(tmp_path: Path, embedder, clock: Clock) -> Iterator[MemoryManager]:
    m = make(tmp_path / "data", embedder, clock)
    yield m
    m.close()


def cos(embedder, a: str, b: str) -> float:
    va, vb = embedder.embed([a, b])
    return float(np.dot(va, vb))


def test_episodic_score_matches_hand_computation(mm: MemoryManager, embedder) -> None:
    text = "We celebrated Maria's birthday at the lake house."
    query = "birthday party at the lake"
    item = mm.add(text, "episodic", importance=0.6, namespace="u",
                  event_time=NOW - timedelta(days=15))
    [hit] = mm.search(query, ["episodic"], top_k=1, namespace="u", recipe="per-type")
    sim = cos(embedder, query, text)
    expected = (0.8 * sim + 0.2 * 0.5 ** (15 / 30)) * (0.8 + 0.4 * 0.6)
    assert hit.id == item.id and hit.memory_type == MemoryType.EPISODIC
    assert hit.score == pytest.approx(expected, abs=1e-5)
    assert hit.breakdown.similarity == pytest.approx(sim, abs=1e-5)
    assert hit.breakdown.recency == pytest.approx(math.sqrt(0.5))
    assert hit.breakdown.importance == 0.6


def test_semantic_score_blends_graph(mm: MemoryManager, embedder) -> None:
    text = "Alice works at Acme Robotics in Berlin."
    mm.add(text, "semantic", importance=0.5, namespace="u")
    query = "What do we know about Alice?"
    [hit] = mm.search(query, ["semantic"], top_k=1, namespace="u", recipe="per-type")
    sim = cos(embedder, query, text)
    # the query mentions one entity (Alice) that the memory mentions directly: graph = 1
    assert hit.breakdown.graph == pytest.approx(1.0)
    assert hit.score == pytest.approx((0.7 * sim + 0.3 * 1.0) * 1.0, abs=1e-5)
    assert mm.stats("u")["graph"]["entities"] >= 3


def test_ranked_by_relevance_not_importance(mm: MemoryManager) -> None:
    mm.add("The quarterly tax report is due in April.", importance=1.0, namespace="u")
    relevant = mm.add("Bob is allergic to peanuts.", importance=0.1, namespace="u")
    hits = mm.search("food allergies", top_k=2, namespace="u")
    assert hits[0].id == relevant.id


def test_min_importance_and_time_range_are_honoured(mm: MemoryManager) -> None:
    old = mm.add("Trip to Kyoto to see the temples.", importance=0.9, namespace="u",
                 event_time=NOW - timedelta(days=400))
    new = mm.add("Trip to Osaka for street food.", importance=0.3, namespace="u",
                 event_time=NOW - timedelta(days=2))
    ids = lambda hits: {h.id for h in hits}  # noqa: E731
    assert ids(mm.search("trip to Japan", namespace="u")) == {old.id, new.id}
    assert ids(mm.search("trip to Japan", namespace="u", min_importance=0.5)) == {old.id}
    recent = (NOW - timedelta(days=30), None)
    assert ids(mm.search("trip to Japan", namespace="u", time_range=recent)) == {new.id}


def test_update_reembeds_reextracts_and_updates_payload(mm: MemoryManager) -> None:
    item = mm.add("Carol lives in Lisbon.", "semantic", importance=0.5, namespace="u")
    mm.update(item.id, namespace="u", content="Carol moved to Tokyo last spring.")
    [hit] = mm.search("Which Japanese city?", ["semantic"], top_k=1, namespace="u")
    assert hit.id == item.id and "Tokyo" in hit.item.content
    names = {e.name for e in mm.stores.graph.find_entities("u", ["Tokyo", "Lisbon"])}
    assert names == {"Tokyo"}
    assert mm.search("Carol", namespace="u", min_importance=0.9) == []
    mm.update(item.id, namespace="u", importance=0.95)
    assert [h.id for h in mm.search("Carol", namespace="u", min_importance=0.9)] == [item.id]


def test_remove_and_scoped_clear(mm: MemoryManager) -> None:
    a = mm.add("alpha memory about sailing", namespace="a")
    b = mm.add("bravo memory about sailing", namespace="b")
    mm.add("Dave likes Prague.", "semantic", namespace="b")
    mm.add("working note about sailing", "working", namespace="a")
    assert mm.remove(a.id, namespace="b") is False  # wrong namespace: nothing happens
    assert mm.remove(a.id, namespace="a") is True
    with pytest.raises(NotFoundError):
        mm.get(a.id, namespace="a")
    with pytest.raises(InvalidInputError, match="confirm"):
        mm.clear("b")
    before_a = mm.stats("a")
    assert mm.clear("b", confirm=True)["records"] == 2
    assert mm.stats("b")["total"] == 0 and mm.stats("b")["graph"]["entities"] == 0
    assert mm.stats("a") == before_a
    for ns in ("a", "b"):
        with pytest.raises(NotFoundError):
            mm.get(b.id, namespace=ns)


def test_forget_soft_restore_and_hard(mm: MemoryManager, clock: Clock) -> None:
    low = mm.add("minor detail about the office plants", importance=0.05, namespace="u")
    keep = mm.add("important: the server password rotates monthly", importance=0.9,
                  namespace="u")
    dry = mm.forget("importance", namespace="u", threshold=0.1, dry_run=True)
    assert dry.ids == (low.id,) and mm.get(low.id, namespace="u").status == MemoryStatus.ACTIVE
    rep = mm.forget("importance", namespace="u", threshold=0.1)
    assert rep.ids == (low.id,)
    assert all(h.id != low.id for h in mm.search("office plants", namespace="u"))
    assert mm.forget("importance", namespace="u", threshold=0.1).count == 0  # idempotent
    assert mm.restore([low.id], namespace="u") == 1
    assert mm.search("office plants", top_k=1, namespace="u")[0].id == low.id
    hard = mm.forget("importance", namespace="u", threshold=0.1, hard=True)
    assert hard.ids == (low.id,)
    with pytest.raises(NotFoundError):
        mm.get(low.id, namespace="u")
    assert mm.stats("u")["vectors"] == 1 and mm.get(keep.id, namespace="u")
    with pytest.raises(InvalidInputError):
        mm.forget("random", namespace="u")


def test_forget_by_time_and_capacity(mm: MemoryManager) -> None:
    old = mm.add("an old event", namespace="u", event_time=NOW - timedelta(days=90))
    mm.add("a recent event", namespace="u", event_time=NOW - timedelta(days=1))
    assert mm.forget("time", namespace="u", max_age_days=30, dry_run=True).ids == (old.id,)
    low = mm.add("a low-value recent event", importance=0.1, namespace="u",
                 event_time=NOW - timedelta(days=1))
    rep = mm.forget("capacity", namespace="u", max_items=2, dry_run=True)
    # priority = importance x recency: the 90-day-old 0.5 one (0.5*0.125) is lowest
    assert rep.ids == (old.id,)
    rep = mm.forget("capacity", namespace="u", max_items=1, dry_run=True)
    assert set(rep.ids) == {old.id, low.id}


def test_consolidate_working_to_episodic_to_semantic(mm: MemoryManager) -> None:
    w1 = mm.add("User prefers answers in Chinese.", "working", importance=0.9, namespace="u")
    mm.add("temporary scratch note", "working", importance=0.2, namespace="u")
    dry = mm.consolidate("working", "episodic", namespace="u", dry_run=True)
    assert dry.count == 1 and mm.stats("u")["by_type"]["working"] == 2
    rep = mm.consolidate("working", "episodic", namespace="u", importance_threshold=0.7)
    assert rep.removed_sources == (w1.id,) and len(rep.promoted) == 1
    stats = mm.stats("u")["by_type"]
    assert stats["working"] == 1 and stats["episodic"] == 1
    assert mm.consolidate("working", "episodic", namespace="u").count == 0  # idempotent
    # a near-duplicate episodic memory merges with the promoted one
    mm.add("The user prefers answers in Chinese.", "episodic", importance=1.0, namespace="u")
    rep = mm.consolidate("episodic", "semantic", namespace="u", importance_threshold=0.7)
    [target] = rep.merged
    assert len(rep.merged[target]) == 2
    sem = mm.get(target, namespace="u")
    assert sem.memory_type == MemoryType.SEMANTIC and sem.importance == 1.0
    assert set(sem.metadata["merged_from"]) == set(rep.merged[target])
    assert mm.stats("u")["by_type"]["episodic"] == 0
    again = mm.consolidate("episodic", "semantic", namespace="u")
    assert again.count == 0 and mm.stats("u")["by_type"]["semantic"] == 1
    with pytest.raises(InvalidInputError):
        mm.consolidate("semantic", "working", namespace="u")


def test_restart_persistence(tmp_path: Path, embedder) -> None:
    data = tmp_path / "data"
    m = make(data, embedder)
    e = m.add("Erin adopted a cat named Miso.", "semantic", importance=0.7, namespace="p")
    m.add("我们昨天在上海开了产品评审会。", "episodic", namespace="p")
    m.add("scratch", "working", namespace="p")
    before = m.stats("p")
    m.close()
    m2 = make(data, embedder)
    after = m2.stats("p")
    assert after["by_type"] == {**before["by_type"], "working": 0}
    assert after["graph"] == before["graph"] and after["vectors"] == before["vectors"]
    assert m2.search("Erin's pet", top_k=1, namespace="p")[0].id == e.id
    assert "上海" in m2.search("产品评审会在哪里开的", top_k=1, namespace="p")[0].item.content
    m2.close()


def test_export_import_round_trip(tmp_path: Path, embedder, mm: MemoryManager) -> None:
    mm.add("Frank runs marathons.", "semantic", importance=0.8, namespace="x",
           metadata={"tags": ["sport"]})
    mm.add("用户喜欢安静的咖啡馆。", "episodic", namespace="x", session_id="s1")
    mm.add("current task: book flights", "working", namespace="x")
    path = tmp_path / "x.jsonl"
    assert mm.export_jsonl(path, namespace="x") == 3
    other = make(tmp_path / "other", embedder)
    assert other.import_jsonl(path) == {"imported": 3, "skipped": 0, "duplicates": 0}
    assert other.import_jsonl(path) == {"imported": 0, "skipped": 3, "duplicates": 0}
    mine = sorted(json.loads(line)["id"] for line in path.read_text().splitlines())
    other.export_jsonl(tmp_path / "y.jsonl", namespace="x")
    theirs = [json.loads(line) for line in (tmp_path / "y.jsonl").read_text().splitlines()]
    assert sorted(t["id"] for t in theirs) == mine
    original = {json.loads(line)["id"]: json.loads(line) for line in path.read_text().splitlines()}
    for row in theirs:
        assert row == original[row["id"]]
    assert other.search("咖啡馆", top_k=1, namespace="x")[0].item.session_id == "s1"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text() + '{"id": "1", "content": ""}\n')
    with pytest.raises(InvalidInputError, match="bad.jsonl:4"):
        other.import_jsonl(bad, namespace="fresh")
    assert other.stats("fresh")["total"] == 0
    # A copy into another namespace of the same store gets ids of its own, and a
    # second import of the same file is still a no-op.
    assert mm.import_jsonl(path, namespace="copy") == {"imported": 3, "skipped": 0, "duplicates": 0}
    assert mm.import_jsonl(path, namespace="copy") == {"imported": 0, "skipped": 3, "duplicates": 0}
    copies = {i.id for i in mm.stores.records.memories.list_items("copy")} | {
        i.id for i in mm.working.list("copy")}
    assert len(copies) == 3 and not copies & set(mine)
    assert mm.stats("x")["total"] == 3
    assert mm.search("marathons", top_k=1, namespace="copy")[0].item.content == (
        "Frank runs marathons.")
    other.close()


def test_namespaces_never_see_each_other(mm: MemoryManager) -> None:
    mm.add("Grace's favourite colour is teal.", "semantic", namespace="alice")
    mm.add("Grace's favourite colour is orange.", "semantic", namespace="bob")
    mm.add("alice scratch", "working", namespace="alice")
    for ns, other in (("alice", "orange"), ("bob", "teal")):
        hits = mm.search("Grace favourite colour", namespace=ns)
        assert hits and all(other not in h.item.content for h in hits)
    assert mm.stats("bob")["by_type"]["working"] == 0
    assert mm.stats("alice")["graph"]["entities"] == mm.stats("bob")["graph"]["entities"]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"content": ""}, EmptyContentError),
        ({"content": "   \n"}, EmptyContentError),
        ({"content": "x", "importance": 1.5}, InvalidImportanceError),
        ({"content": "x", "importance": float("nan")}, InvalidImportanceError),
        ({"content": "x", "memory_type": "procedural"}, InvalidInputError),
        ({"content": 42}, InvalidInputError),
        ({"content": "x", "metadata": ["not", "a", "dict"]}, InvalidInputError),
        ({"content": "x", "event_time": datetime(2024, 1, 1)}, InvalidInputError),
        ({"content": "x", "namespace": ""}, InvalidInputError),
    ],
)
def test_bad_input_writes_nothing(mm: MemoryManager, kwargs: dict, error: type) -> None:
    mm.add("existing", "semantic", namespace="default")
    before = mm.stats("default")
    with pytest.raises(error):
        mm.add(**kwargs)
    with pytest.raises(error):
        mm.add_many([{"content": "fine"}, kwargs])
    assert mm.stats("default") == before


def test_auto_classification_and_estimated_importance(mm: MemoryManager) -> None:
    fact = mm.add("Hana prefers window seats on flights.", namespace="u", auto_classify=True)
    assert fact.memory_type == MemoryType.SEMANTIC
    event = mm.add("昨天我们去了西湖散步。", namespace="u", auto_classify=True)
    assert event.memory_type == MemoryType.EPISODIC
    plain = mm.add("Hana prefers window seats on flights.", namespace="u")
    assert plain.memory_type == MemoryType.EPISODIC  # explicit default without auto
    urgent = mm.add("重要：必须在周五前提交报告！", namespace="u")
    calm = mm.add("周五有一份报告。", namespace="u")
    assert 0 <= calm.importance < urgent.importance <= 1


def test_timeline_sessions_and_episode_fields(mm: MemoryManager) -> None:
    from hello_memory.memory.episodic import episode_metadata

    days = [5, 1, 3]
    items = [mm.add(f"standup number {d}", "episodic", namespace="t", session_id=f"s{d % 2}",
                    event_time=NOW - timedelta(days=d),
                    metadata=episode_metadata(None, participants=["Ann", "Ben"],
                                              outcome="ok", tags=["daily"]))
             for d in days]
    order = [i.content for i in mm.episodic.timeline("t")]
    assert order == ["standup number 5", "standup number 3", "standup number 1"]
    newest = mm.episodic.timeline("t", limit=2, newest_first=True)
    assert [i.content for i in newest] == ["standup number 1", "standup number 3"]
    assert [i.content for i in mm.episodic.timeline("t", limit=1, offset=1)] == [
        "standup number 3"]
    s1 = mm.episodic.session_episodes("t", "s1")
    assert {i.id for i in s1} == {i.id for i in items if i.session_id == "s1"}
    assert s1[0].metadata["participants"] == ["Ann", "Ben"]
    with pytest.raises(InvalidInputError):
        episode_metadata(None, mood="great")


def test_search_never_writes_to_the_graph(mm: MemoryManager) -> None:
    mm.add("Ivan maintains the Lima data centre.", "semantic", namespace="g")
    before = mm.stats("g")["graph"]
    for q in ("Who runs the data centre in Lima?", "Judy and Karl in Oslo", "奥斯陆的小王"):
        mm.search(q, namespace="g")
    assert mm.stats("g")["graph"] == before


def test_chinese_semantic_memory_uses_the_graph(mm: MemoryManager) -> None:
    item = mm.add("用户的蓝牙耳机左耳有杂音，订单号984233。", "semantic", namespace="zh")
    mm.add("用户喜欢在周末去西湖边跑步。", "semantic", namespace="zh")
    [hit, *_] = mm.search("订单984233的耳机怎么了", ["semantic"], namespace="zh")
    assert hit.id == item.id and hit.breakdown.graph > 0


def test_search_filters_mapping(mm: MemoryManager) -> None:
    a = mm.add("Lena booked a table at the harbour restaurant.", namespace="f", session_id="s1",
               user_id="lena")
    mm.add("Lena booked a table at the harbour restaurant again.", namespace="f",
           session_id="s2", user_id="lena")
    hits = mm.search("restaurant booking", namespace="f", filters={"session_id": "s1"})
    assert [h.id for h in hits] == [a.id]
    assert mm.search("restaurant booking", namespace="f", filters={"user_id": "max"}) == []
    with pytest.raises(InvalidInputError, match="unknown search filter"):
        mm.search("restaurant", namespace="f", filters={"colour": "red"})
