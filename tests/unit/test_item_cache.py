"""The search's record cache (issue 27, item 2; stores/records/item_cache.py): on where
this process holds the records (SQLite), off where others may write (PostgreSQL);
every add, update, delete, merge and namespace purge is seen by the next read, also
when it commits on another thread while reads run (the stress test below), and a read
never leaves an older record cached than a write that came before it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from concurrently import run_beside  # tests/ is on sys.path

from hello_memory.stores.records import RecordStore, WriteConflictError
from hello_memory.stores.records.item_cache import ItemCache
from hello_memory.types import MemoryItem


@pytest.fixture
def store(tmp_path: Path):
    s = RecordStore(f"sqlite:///{tmp_path / 'records.db'}")
    s.open()
    s.memories.access_log.interval = 3600
    yield s
    s.close()


def _item(content: str, ns: str = "ns1") -> MemoryItem:
    return MemoryItem(content=content, namespace=ns)


def test_on_for_sqlite_off_where_other_processes_write(records_url: str) -> None:
    s = RecordStore(records_url)
    s.open()
    try:
        sqlite = records_url.startswith("sqlite")
        assert (s.item_cache is not None) is sqlite
        # the write generation: the record cache's own count (epochs from 1), else the
        # database's, which every process's writes move (epoch 0; test_write_generation)
        generation = s.memories.generation("ns1")
        assert generation is not None and (generation[0] == 0) is not sqlite
        a = _item("a")
        s.memories.add_items([a])
        assert s.memories.get_items("ns1", [a.id], shared=True)[0].content == "a"
    finally:
        s.close()
    assert s.item_cache is None
    forced = RecordStore(records_url, item_cache=False)
    forced.open()
    try:
        assert forced.item_cache is None
    finally:
        forced.close()


def test_a_shared_read_comes_from_the_cache_and_every_write_is_seen(store: RecordStore
                                                                    ) -> None:
    a, b, other = _item("a"), _item("b"), _item("o", ns="ns2")
    store.memories.add_items([a, b])
    store.memories.add_items([other])
    generation = store.memories.generation("ns1")
    first = store.memories.get_items("ns1", [a.id, b.id, other.id], shared=True)
    assert [i.content for i in first] == ["a", "b"]  # another namespace's id: left out
    again = store.memories.get_items("ns1", [b.id, a.id], shared=True)
    assert again[1] is first[0]  # the same record object: no query
    assert store.memories.get_items("ns1", [a.id])[0] is not first[0]  # unshared: fresh
    store.memories.update_item("ns1", a.id, content="a2")
    assert store.memories.get_items("ns1", [a.id], shared=True)[0].content == "a2"
    assert store.memories.generation("ns1") != generation
    store.memories.delete_items("ns1", [b.id])
    assert store.memories.get_items("ns1", [a.id, b.id], shared=True)[0].id == a.id
    assert len(store.memories.get_items("ns1", [a.id, b.id], shared=True)) == 1
    c = _item("c")
    before = store.memories.generation("ns1")
    store.memories.add_items([c])  # an add moves the namespace's generation (listings)
    assert store.memories.generation("ns1") != before
    store.purge_namespace("ns1")
    assert store.memories.get_items("ns1", [a.id, c.id], shared=True) == []
    assert store.memories.get_items("ns2", [other.id], shared=True)[0].content == "o"


def test_a_merge_and_a_lost_compare_and_swap_are_seen(store: RecordStore) -> None:
    a, b = _item("alpha"), _item("beta")
    store.memories.add_items([a, b])
    read = {i.id: i for i in store.memories.get_items("ns1", [a.id, b.id], shared=True)}
    store.memories.merge_queued("ns1", target=(a.id, read[a.id].version,
                                               {"content": "alpha and beta"}),
                                remove={b.id: read[b.id].version})
    got = store.memories.get_items("ns1", [a.id, b.id], shared=True)
    assert [i.content for i in got] == ["alpha and beta"]
    with pytest.raises(WriteConflictError):  # an old version: nothing written, still seen
        store.memories.update_queued("ns1", a.id, expect_version=read[a.id].version,
                                     content="stale")
    assert store.memories.get_items("ns1", [a.id], shared=True)[0].content == "alpha and beta"


def test_flushed_accesses_are_in_the_cached_records(store: RecordStore) -> None:
    a = _item("a")
    store.memories.add_items([a])
    cached = store.memories.get_items("ns1", [a.id], shared=True)[0]
    store.memories.record_access("ns1", [a.id])
    assert store.memories.get_items("ns1", [a.id], shared=True)[0].access_count == 1
    assert cached.access_count == 0  # a shared record is never changed in place
    store.memories.flush_access()
    assert store.memories.get_items("ns1", [a.id], shared=True)[0].access_count == 1
    assert store.memories.get_items("ns1", [a.id])[0].access_count == 1


def test_a_fill_read_before_a_write_is_refused() -> None:
    cache = ItemCache(capacity=2)
    old = _item("old")
    found, generation = cache.lookup([old.id])
    assert found == {}
    cache.invalidate("ns1", [old.id])  # a write committed after the read, before the fill
    assert cache.fill([old], generation) is False and cache.cached(old.id) is None
    found, generation = cache.lookup([old.id])
    assert cache.fill([old], generation) is True and cache.cached(old.id) is old
    cache.fill([_item("x"), _item("y")], cache.lookup([])[1])
    assert len(cache) == 2 and cache.cached(old.id) is None  # bounded: oldest out
    epoch = cache.namespace_generation("ns1")
    cache.clear()
    assert cache.namespace_generation("ns1") != epoch


def test_shared_reads_never_go_back_past_an_acknowledged_write(store: RecordStore) -> None:
    """Stress: writers rewrite records (and add and delete others) on threads while
    readers read them shared. A read begun after an update returned sees that update
    or a later one; a record deleted before a read began is never returned; and once
    the writers stop, every record reads as last written."""
    items = [_item("v0") for _ in range(4)]
    store.memories.add_items(items)
    ids = [i.id for i in items]
    acked = dict.fromkeys(ids, 0)  # id -> the last version whose update returned
    gone: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[str] = []

    def writer(mine: list[str]) -> None:
        for version in range(1, 60):
            for memory_id in mine:
                store.memories.update_item("ns1", memory_id, content=f"v{version}")
                with lock:
                    acked[memory_id] = version
            extra = _item("short-lived")
            store.memories.add_items([extra])
            store.memories.get_items("ns1", [extra.id], shared=True)  # cached, then gone
            store.memories.delete_items("ns1", [extra.id])
            with lock:
                gone.add(extra.id)

    def reader() -> None:
        while not stop.is_set():
            with lock:
                floor = dict(acked)
                dead = set(gone)
            got = store.memories.get_items("ns1", ids + sorted(dead), shared=True)
            for item in got:
                if item.id in dead:
                    errors.append(f"deleted {item.id} returned")
                elif int(item.content[1:]) < floor[item.id]:
                    errors.append(f"{item.content} after v{floor[item.id]} was acknowledged")

    writers = [threading.Thread(target=writer, args=(ids[:2],)),
               threading.Thread(target=writer, args=(ids[2:],))]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    run_beside(writers, readers, stop)
    assert not errors, errors[:5]
    assert [i.content for i in store.memories.get_items("ns1", ids, shared=True)] == [
        "v59"] * 4


def test_a_fact_chain_read_shared_matches_the_full_read_and_comes_from_the_cache(
        store: RecordStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """``same_fact(..., shared=True)`` (the supersede rules' chain reads, issue 27):
    the ids from the index, the records from the cache, in the order and with the
    window of the plain read; a record forgotten since is left out at once, and the
    chain's other records stay cached."""
    from datetime import datetime, timedelta, timezone

    from hello_memory.text.facts import fact_key
    from hello_memory.types import MemoryStatus

    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    chain = [MemoryItem(content=f"I live in {city}", namespace="ns1",
                        event_time=t0 + timedelta(days=n))
             for n, city in enumerate(["Oslo", "Bergen", "Tromso", "Oslo", "Bodo"])]
    store.memories.add_items([*chain, _item("I like tea")])
    key = fact_key(chain[0].content)
    assert key is not None
    middle = t0 + timedelta(days=2)

    def ids(items: list[MemoryItem]) -> list[str]:
        return [i.id for i in items]

    whole = store.memories.same_fact("ns1", key)
    window = store.memories.same_fact("ns1", key, around=middle, after=1)
    assert ids(whole) == ids(chain) and len(window) < len(whole)
    assert ids(store.memories.same_fact("ns1", key, shared=True)) == ids(whole)
    assert ids(store.memories.same_fact("ns1", key, around=middle, after=1,
                                        shared=True)) == ids(window)
    # read again: not one record is converted from a row, they are all cached
    read: list[list[str]] = []
    fetch = store.memories._fetch_rows
    monkeypatch.setattr(store.memories, "_fetch_rows",
                        lambda wanted: read.append(list(wanted)) or fetch(wanted))
    assert ids(store.memories.same_fact("ns1", key, shared=True)) == ids(whole)
    assert read == []
    store.memories.update_item("ns1", chain[1].id, status=MemoryStatus.FORGOTTEN)
    shared = store.memories.same_fact("ns1", key, shared=True)
    assert read == []  # the index left it out; the others stayed cached
    assert ids(shared) == ids(store.memories.same_fact("ns1", key)) == [
        i.id for i in chain if i.id != chain[1].id]


def test_a_shared_fact_chain_leaves_out_a_record_forgotten_between_its_two_reads(
        store: RecordStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared chain read takes the ids from the index, then the records: a memory
    forgotten in between (another thread's write, made here at that very point) is
    not handed to the supersede rules as a member of the chain."""
    from hello_memory.text.facts import fact_key
    from hello_memory.types import MemoryStatus

    chain = [_item(f"I live in {city}") for city in ("Oslo", "Bergen", "Tromso")]
    store.memories.add_items(chain)
    key = fact_key(chain[0].content)
    assert key is not None
    store.memories.get_items("ns1", [i.id for i in chain], shared=True)  # all cached
    get_items = store.memories.get_items

    def forget_first(namespace: str, ids: list[str], *, shared: bool = False
                     ) -> list[MemoryItem]:
        if chain[1].id in ids:  # the index listed it: forget it before the records
            store.memories.update_item("ns1", chain[1].id, status=MemoryStatus.FORGOTTEN)
        return get_items(namespace, ids, shared=shared)

    monkeypatch.setattr(store.memories, "get_items", forget_first)
    assert [i.id for i in store.memories.same_fact("ns1", key, shared=True)] == [
        chain[0].id, chain[2].id]


def test_copy_item_is_a_copy_and_owns_its_metadata_when_asked() -> None:
    """``copy_item`` (types.py): what ``copy.copy`` made of a cached record, faster; with
    ``own_metadata`` the caller's changes to any level of the metadata stay its own."""
    import copy

    from hello_memory.types import copy_item

    class Marker:  # not a JSON value: deep-copied
        def __init__(self) -> None:
            self.seen: list[str] = []

    item = MemoryItem(content="Anna works at Merrow", namespace="ns1",
                      metadata={"speaker": "Anna", "tags": ["work", {"since": 2021}],
                                "marker": Marker()})
    shallow = copy_item(item)
    assert shallow == copy.copy(item) and shallow is not item
    assert shallow.__dict__ == item.__dict__ and shallow.metadata is item.metadata
    shallow.access_count += 2
    assert item.access_count == 0
    own = copy_item(item, own_metadata=True)
    assert own.metadata["marker"] is not item.metadata["marker"]
    assert {**own.__dict__, "metadata": None} == {**item.__dict__, "metadata": None}
    assert {k: v for k, v in own.metadata.items() if k != "marker"} == \
        {"speaker": "Anna", "tags": ["work", {"since": 2021}]}
    own.metadata["tags"][1]["since"] = 1999
    own.metadata["tags"].append("moved")
    own.metadata["marker"].seen.append("changed")
    assert item.metadata["tags"] == ["work", {"since": 2021}]
    assert item.metadata["marker"].seen == []
