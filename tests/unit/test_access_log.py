"""Search hits' access counts, off the request path (issue 27, item 2;
stores/records/access.py): ``record_access`` only queues, a background thread or
``flush_access`` writes one transaction, closing the store flushes, and every read of
the repository counts what still waits, exactly (never twice, never lost), also while
flushes commit under concurrent searches. On SQLite and on PostgreSQL. Nothing here
asserts a timing."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from typing import Any

import pytest
from concurrently import run_beside  # tests/ is on sys.path
from sqlalchemy import create_engine, text

from hello_memory.stores.records import RecordStore
from hello_memory.stores.records.access import AccessLog
from hello_memory.types import MemoryItem


@pytest.fixture
def store(records_url: str):
    s = RecordStore(records_url)
    s.open()
    s.memories.access_log.interval = 3600  # flushed by the tests only, unless they say
    yield s
    s.close()


def _item(content: str, ns: str = "ns1") -> MemoryItem:
    return MemoryItem(content=content, namespace=ns)


def _stored(url: str, memory_id: str) -> tuple[int, Any]:
    """What the database itself holds, read on a connection of its own."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            row = conn.execute(text("SELECT access_count, last_access FROM hm_memory_items "
                                    "WHERE id = :id"), {"id": memory_id}).one()
            return int(row[0]), row[1]
    finally:
        engine.dispose()


def test_accesses_wait_in_memory_count_on_reads_and_land_in_one_flush(
        store: RecordStore, records_url: str) -> None:
    a, b = _item("a"), _item("b")
    store.memories.add_items([a, b])
    for _ in range(3):
        store.memories.record_access("ns1", [a.id, b.id, a.id])  # a hit once per search
    assert _stored(records_url, a.id)[0] == 0  # nothing written on the request path
    got = {i.id: i for i in store.memories.get_items("ns1", [a.id, b.id])}
    assert got[a.id].access_count == 3 and got[b.id].access_count == 3
    assert got[a.id].last_access is not None
    shared = store.memories.get_items("ns1", [a.id], shared=True)[0]
    assert shared.access_count == 3
    assert [i.access_count for i in store.memories.list_items("ns1")] == [3, 3]
    assert store.memories.flush_access() == 2
    assert _stored(records_url, a.id)[0] == 3 and _stored(records_url, a.id)[1] is not None
    assert store.memories.flush_access() == 0
    # read again after the flush: the stored count, not stored + waiting
    assert store.memories.get_item("ns1", a.id).access_count == 3
    assert store.memories.get_items("ns1", [a.id], shared=True)[0].access_count == 3


def test_an_id_of_another_namespace_is_left_alone(store: RecordStore, records_url: str
                                                  ) -> None:
    a = _item("a")
    store.memories.add_items([a])
    store.memories.record_access("ns2", [a.id, "no-such-id"])
    assert store.memories.get_item("ns1", a.id).access_count == 0
    store.memories.flush_access()
    assert _stored(records_url, a.id)[0] == 0


def test_closing_the_store_writes_what_waits(records_url: str) -> None:
    s = RecordStore(records_url)
    s.open()
    a = _item("a")
    s.memories.add_items([a])
    s.memories.record_access("ns1", [a.id])
    s.memories.record_access("ns1", [a.id])
    s.close()
    assert _stored(records_url, a.id)[0] == 2
    s.open()  # open again: a new search is recorded and flushed as before
    try:
        s.memories.record_access("ns1", [a.id])
        assert s.memories.get_item("ns1", a.id).access_count == 3
    finally:
        s.close()
    assert _stored(records_url, a.id)[0] == 3


def test_the_writer_thread_flushes_without_being_asked(store: RecordStore,
                                                       records_url: str) -> None:
    a = _item("a")
    store.memories.add_items([a])
    store.memories.access_log.interval = 0.01
    store.memories.record_access("ns1", [a.id])
    deadline = time.monotonic() + 60
    while store.memories.access_log.pending() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _stored(records_url, a.id)[0] == 1


def test_an_update_setting_the_count_comes_after_the_accesses_before_it(
        store: RecordStore, records_url: str) -> None:
    a = _item("a")
    store.memories.add_items([a])
    store.memories.record_access("ns1", [a.id])
    store.memories.record_access("ns1", [a.id])
    assert store.memories.update_item("ns1", a.id, access_count=10).access_count == 10
    assert store.memories.get_item("ns1", a.id).access_count == 10
    store.memories.record_access("ns1", [a.id])
    # an update of another field returns the count with the waiting access
    assert store.memories.update_item("ns1", a.id, importance=0.9).access_count == 11
    store.memories.flush_access()
    assert _stored(records_url, a.id)[0] == 11


def test_a_deleted_memory_takes_its_waiting_accesses_with_it(store: RecordStore) -> None:
    a = _item("a")
    store.memories.add_items([a])
    store.memories.record_access("ns1", [a.id])
    assert store.memories.delete_items("ns1", [a.id]) == 1
    assert store.memories.access_log.pending() == 0
    again = _item("a again")
    again.id = a.id  # an id used again (an import after a delete) starts from its own count
    store.memories.add_items([again])
    assert store.memories.get_item("ns1", a.id).access_count == 0
    store.memories.record_access("ns1", [a.id])
    store.purge_namespace("ns1")
    assert store.memories.access_log.pending() == 0


def test_a_failed_flush_keeps_the_accesses_for_the_next() -> None:
    calls: list[dict[Any, Any]] = []

    def write(pending: Any, committing: Any) -> None:
        calls.append(dict(pending))
        if len(calls) == 1:
            raise RuntimeError("database away")
        committing()

    log = AccessLog(write, interval=3600)
    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    log.record("ns", ["x"], when)
    with pytest.raises(RuntimeError):
        log.flush()
    assert log.pending() == 1
    log.record("ns", ["x"], when)
    assert log.flush() == 1 and calls[-1][("ns", "x")][0] == 2
    assert log.pending() == 0
    log.close()


def test_reads_count_every_access_once_while_searches_and_flushes_race(
        store: RecordStore, records_url: str) -> None:
    """The stress test of the seqlock (access.py): recorders, a flusher and readers on
    threads. Every read lies between the accesses recorded before it began and those
    begun before it ended (a flushed access counted twice, or neither stored nor
    waiting, would fall outside), and after the last flush the database holds them all."""
    items = [_item(f"m{n}") for n in range(5)]
    store.memories.add_items(items)
    ids = [i.id for i in items]
    lock = threading.Lock()
    begun = done = 0
    stop = threading.Event()
    errors: list[str] = []

    def recorder() -> None:
        nonlocal begun, done
        for _ in range(500):
            with lock:
                begun += 1
            store.memories.record_access("ns1", ids)
            with lock:
                done += 1

    def flusher() -> None:
        while not stop.is_set():
            store.memories.flush_access()

    def reader(shared: bool) -> None:
        while not stop.is_set():
            with lock:
                low = done
            got = store.memories.get_items("ns1", ids, shared=shared)
            with lock:
                high = begun
            for item in got:
                if not low <= item.access_count <= high:
                    errors.append(f"{item.access_count} outside [{low}, {high}]")

    threads = [threading.Thread(target=recorder) for _ in range(3)]
    side = [threading.Thread(target=flusher), threading.Thread(target=reader, args=(False,)),
            threading.Thread(target=reader, args=(True,))]
    run_beside(threads, side, stop)
    assert not errors, errors[:5]
    store.memories.flush_access()
    assert all(_stored(records_url, i)[0] == 1500 for i in ids)
    assert [i.access_count for i in store.memories.get_items("ns1", ids)] == [1500] * 5
    assert [i.access_count for i in store.memories.get_items("ns1", ids, shared=True)
            ] == [1500] * 5
