"""The write generation kept in the database (``hm_namespace_totals.generation``,
schema v9; docs/PERFORMANCE.md, "Search on PostgreSQL"): where other
processes write the records too (PostgreSQL; SQLite with the record cache off), every
write of a namespace, by any store on the database, moves it on, in the write's own
transaction, so a search may keep what it derives from the records (the namespace's
totals, its listing, the multilingual view's texts) while it holds.

Two ``RecordStore`` objects on one database stand for two processes: each has its own
engine and connection pool, and neither hears of the other's writes except through the
database.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from concurrently import run_beside  # tests/ is on sys.path
from sqlalchemy import event

from hello_memory.config import load_settings
from hello_memory.errors import InvalidInputError
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.graph import SQLiteGraphStore
from hello_memory.stores.records import ItemFilter, RecordStore
from hello_memory.text.entities import RuleExtractor
from hello_memory.types import Entity, MemoryItem, MemoryStatus, MemoryType

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


@pytest.fixture
def two_stores(records_url: str) -> Iterator[tuple[RecordStore, RecordStore]]:
    """Two stores on one database, neither keeping records in process."""
    a, b = RecordStore(records_url, item_cache=False), RecordStore(records_url, item_cache=False)
    a.open()
    b.open()
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def _item(n: int, ns: str = "n", **fields: Any) -> MemoryItem:
    return MemoryItem(content=f"note {n} about the garden", memory_type=MemoryType.EPISODIC,
                      namespace=ns, event_time=T0 + timedelta(minutes=n), **fields)


def test_every_write_of_another_store_moves_the_generation(
        two_stores: tuple[RecordStore, RecordStore]) -> None:
    a, b = two_stores
    seen = [a.memories.generation("n")]
    assert seen[0] == (0, -1)  # no memory written yet
    other = a.memories.generation("other")

    def moved() -> None:
        now = a.memories.generation("n")
        assert now not in seen, "a write left the generation where it was"
        seen.append(now)

    first, second = _item(1), _item(2)
    b.memories.add_items([first, second])
    moved()
    b.memories.update_item("n", first.id, importance=0.9)  # no change to the totals
    moved()
    b.memories.add_items([_item(3, status=MemoryStatus.FORGOTTEN)])  # not counted either
    moved()
    b.memories.delete_items("n", [second.id])
    moved()
    before = b.memories.namespace_totals("n")
    assert b.memories.recount_totals("n") == {"n": before}
    moved()
    b.purge_namespace("n")
    assert a.memories.generation("n") == (0, -1)  # empty again: no row
    seen.remove((0, -1))
    b.memories.add_items([_item(4)])
    moved()  # a row made anew starts where no value seen before was
    assert a.memories.generation("other") == other  # other namespaces untouched


def test_a_failed_write_leaves_the_generation(
        two_stores: tuple[RecordStore, RecordStore]) -> None:
    a, b = two_stores
    item = _item(1)
    b.memories.add_items([item])
    before = a.memories.generation("n")
    with pytest.raises(InvalidInputError, match="already exists"):  # rolled back
        b.memories.add_items([_item(2), MemoryItem(
            id=item.id, content="again", memory_type=MemoryType.EPISODIC, namespace="n")])
    assert a.memories.generation("n") == before


def test_a_v8_store_upgrades_with_a_row_for_every_namespace(tmp_path: Path) -> None:
    """Schema v9 on a v8 file: the column is added, and a namespace that held only
    forgotten memories (no totals row before) gets a row, so that "no row" keeps
    meaning "no memory" to MemoryRepository.generation."""
    url = f"sqlite:///{tmp_path / 'records.db'}"
    store = RecordStore(url, item_cache=False)
    store.open()
    store.memories.add_items([_item(1), _item(2, ns="quiet", status=MemoryStatus.FORGOTTEN)])
    store.close()
    with sqlite3.connect(tmp_path / "records.db") as conn:  # back to v8
        conn.execute("DELETE FROM hm_namespace_totals WHERE namespace = 'quiet'")
        conn.execute("ALTER TABLE hm_namespace_totals DROP COLUMN generation")
        conn.execute("UPDATE hm_schema_meta SET value = '8' WHERE key = 'schema_version'")
    upgraded = RecordStore(url, item_cache=False)
    upgraded.open()
    try:
        assert (tmp_path / "records.db.v8.bak").exists()
        assert upgraded.memories.generation("n") == (0, 0)
        assert upgraded.memories.generation("quiet") == (0, 0)  # a row, made here
        assert upgraded.memories.namespace_totals("quiet") == (0, 0)
        upgraded.memories.add_items([_item(3)])
        assert upgraded.memories.generation("n") == (0, 1)
    finally:
        upgraded.close()


def test_pinned_reads_once_per_thread(two_stores: tuple[RecordStore, RecordStore]) -> None:
    """One search reads the generation once (it asks at every value it keeps); a write
    committed meanwhile is seen by the next search; another thread reads its own."""
    a, b = two_stores
    b.memories.add_items([_item(1)])
    reads: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "hm_namespace_totals" in statement and "generation" in statement:
            reads.append(statement)

    event.listen(a.engine, "before_cursor_execute", count)
    try:
        with a.memories.pinned("n"):
            held = a.memories.generation("n")
            b.memories.add_items([_item(2)])
            assert [a.memories.generation("n") for _ in range(5)] == [held] * 5
            assert len(reads) == 1
            elsewhere: list[Any] = []
            t = threading.Thread(target=lambda: elsewhere.append(a.memories.generation("n")))
            t.start()
            t.join()
            assert elsewhere[0] != held  # that thread's search reads the write
            assert len(reads) == 2
        assert a.memories.generation("n") == elsewhere[0]
    finally:
        event.remove(a.engine, "before_cursor_execute", count)


def test_same_generation_same_records_under_concurrent_writes(
        two_stores: tuple[RecordStore, RecordStore]) -> None:
    """The invariant the search's kept values rest on, under load: while store B adds,
    edits and deletes from two threads, store A reads the generation, the namespace's
    totals and listing, and the generation again; whenever both readings agree, what it
    read equals what it read at every earlier time it saw that generation."""
    a, b = two_stores
    b.memories.add_items([_item(n) for n in range(5)])
    errors: list[BaseException] = []
    stop = threading.Event()

    def write(offset: int) -> None:
        try:
            for n in range(offset, offset + 40):
                item = _item(n)
                b.memories.add_items([item])
                if n % 3 == 0:
                    b.memories.update_item("n", item.id, importance=0.2)
                if n % 4 == 0:
                    b.memories.delete_items("n", [item.id])
                time.sleep(0.003)  # quiet moments, in which the reader compares
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    kept: dict[Any, Any] = {}
    checked = 0

    def read() -> None:
        nonlocal checked
        flt = ItemFilter(status=MemoryStatus.ACTIVE)
        while not stop.is_set():
            g1 = a.memories.generation("n")
            value = (a.memories.namespace_totals("n"),
                     tuple(a.memories.list_ids("n", flt, limit=500, order="-event_time")))
            if a.memories.generation("n") != g1:
                continue  # a write committed in between: nothing to compare
            assert kept.setdefault(g1, value) == value, "one generation, two contents"
            checked += 1

    writers = [threading.Thread(target=write, args=(k,)) for k in (100, 200)]
    reader = threading.Thread(target=read)
    reader.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    reader.join()
    assert errors == []
    assert checked > 0 and len(kept) > 2  # the reader saw the namespace change
    final = a.memories.generation("n")
    assert a.memories.namespace_totals("n") == b.memories.recount_totals("n")["n"]
    assert a.memories.generation("n") != final  # the repair moved it too


def _item_reads(store: RecordStore) -> tuple[list[str], Any]:
    """The SELECTs of memory records ``store`` sends, and the listener to remove."""
    reads: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().startswith("SELECT hm_memory_items.id"):
            reads.append(statement)

    event.listen(store.engine, "before_cursor_execute", count)
    return reads, count


def test_a_search_keeps_records_at_its_generation(
        two_stores: tuple[RecordStore, RecordStore]) -> None:
    """Where the record cache is off, a search's shared reads keep the records at the
    generation it pinned (``MemoryRepository.kept_records``): the next search at the
    same generation reads none again; another store's write is read at the next
    search; the records of the hits it returns are read again (``released``), with
    the access counts no write moves."""
    a, b = two_stores
    items = [_item(n) for n in range(4)]
    b.memories.add_items(items)
    ids = [i.id for i in items]
    reads, listener = _item_reads(a)
    try:
        with a.memories.pinned("n"):
            first = a.memories.get_items("n", ids, shared=True)
        assert len(reads) == 1
        with a.memories.pinned("n"):
            again = a.memories.get_items("n", ids[::-1], shared=True)
        assert len(reads) == 1  # kept: nothing read
        assert [i.id for i in again] == ids[::-1] and again[0] is first[-1]
        assert a.memories.get_items("n", ids, shared=True)[0] is not first[0]  # no pin
        b.memories.update_item("n", ids[0], importance=0.9)
        reads.clear()
        with a.memories.pinned("n"):
            now = a.memories.get_items("n", ids, shared=True)
            assert len(reads) == 1 and now[0].importance == 0.9
            b.memories.record_access("n", [ids[1]])
            b.memories.flush_access()  # no write: the generation stays
            kept = a.memories.get_items("n", ids[1:2], shared=True)[0]
            own = a.memories.released("n", [kept, now[0]])
        assert kept.access_count == 0  # kept as read
        assert own[0].access_count == 1 and own[0] is not kept  # read again
        assert own[1].importance == 0.9
        own[1].metadata["mine"] = True  # the caller's own: the kept one is untouched
        assert "mine" not in now[0].metadata
        assert len(a.memories.kept_records) == len(ids)
    finally:
        event.remove(a.engine, "before_cursor_execute", listener)
    a.close()
    assert len(a.memories.kept_records) == 0  # closing forgets them


def test_kept_records_are_the_records_of_their_generation_under_concurrent_writes(
        two_stores: tuple[RecordStore, RecordStore]) -> None:
    """The invariant of the kept records, under load: while store B edits, adds and
    deletes from two threads, two threads of store A read records shared under a pin
    and then the generation and the records unshared; whenever the generation read
    after equals the pinned one, the shared records equal the unshared ones."""
    a, b = two_stores
    base = [_item(n) for n in range(6)]
    b.memories.add_items(base)
    ids = [i.id for i in base]
    errors: list[BaseException] = []
    stop = threading.Event()
    compared = [0]

    def write(offset: int) -> None:
        try:
            for n in range(offset, offset + 30):
                b.memories.update_item("n", ids[n % len(ids)], importance=(n % 10) / 10)
                extra = _item(n)
                b.memories.add_items([extra])
                b.memories.delete_items("n", [extra.id])
                time.sleep(0.002)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    def fields(items: list[MemoryItem]) -> list[tuple[Any, ...]]:
        return [(i.id, i.content, i.importance, i.status) for i in items]

    def read() -> None:
        try:
            while not stop.is_set():
                with a.memories.pinned("n"):
                    held = a.memories.generation("n")
                    shared = a.memories.get_items("n", ids, shared=True)
                fresh = a.memories.get_items("n", ids)
                if a.memories.generation("n") != held:
                    continue  # a write came between: nothing to compare
                assert fields(shared) == fields(fresh), "a kept record of another generation"
                compared[0] += 1
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(k,)) for k in (100, 200)]
    run_beside(writers, readers, stop)
    assert errors == []
    assert compared[0] > 0


@pytest.mark.postgres
def test_the_sql_graph_keeps_its_lookups_at_the_shared_generation(postgres_url: str) -> None:
    """On PostgreSQL the SQL graph keeps ``find_entities``' rows at the records' write
    generation, which its own writes move too: a lookup kept by one process is read
    again once another process links the name, and a write of a memory record moves it
    as well."""
    stores = [RecordStore(postgres_url, item_cache=False) for _ in range(2)]
    graphs = []
    for records in stores:
        records.open()
        graph = SQLiteGraphStore(records.engine, shared_generation=records.memories.generation)
        graph.open()
        graphs.append(graph)
    try:
        a, b = graphs
        before = stores[0].memories.generation("n")
        assert a.find_entities("n", ["Tom Berg"]) == []  # kept at that generation
        b.add_mentions("n", "m1", [Entity("n", "Tom Berg", "person")])
        assert stores[0].memories.generation("n") != before
        assert [e.name for e in a.find_entities("n", ["Tom Berg"])] == ["Tom Berg"]
        b.remove_memory("n", "m1")
        assert a.find_entities("n", ["Tom Berg"]) == []
        b.add_mentions("n", "m2", [Entity("n", "Tom Berg", "person")])
        assert a.find_entities("n", ["Tom Berg"]) != []
        b.clear("n")
        assert a.find_entities("n", ["Tom Berg"]) == []
    finally:
        for graph in graphs:
            graph.close()
        for records in stores:
            records.close()


@pytest.mark.postgres
@pytest.mark.slow
def test_a_search_sees_what_another_process_wrote(tmp_path: Path, postgres_url: str) -> None:
    """Two managers on one PostgreSQL database (records and pgvector), as two server
    processes: manager A searches a small namespace (the multilingual view reads its
    listing, kept at the write generation), manager B writes, and A's next search reads
    the namespace again: the Chinese note B added answers A's English question, and a
    note B forgot is gone."""
    from hello_memory.embedding import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()

    def manager(name: str) -> MemoryManager:
        settings = load_settings(environ={}, data_dir=tmp_path / name,
                                 records={"url": postgres_url},
                                 vector={"provider": "pgvector"})
        return MemoryManager(open_stores(settings, embedder=embedder),
                             extractor=RuleExtractor())

    a, b = manager("a"), manager("b")
    try:
        for text in ("Lunch with Tom at the noodle bar on Friday",
                     "The dentist moved my appointment to 9 December",
                     "Bought new running shoes for the autumn race"):
            b.add(text, "episodic", 0.5, namespace="s")
        question = "What does my sister do for work?"
        before = a.search(question, top_k=5, namespace="s")
        assert all("法务" not in h.item.content for h in before)
        note = b.add("姐姐现在在一家基金会当法务顾问", "semantic", 0.7, namespace="s")
        after = a.search(question, top_k=5, namespace="s")
        assert note.id in [h.id for h in after]
        assert b.remove(note.id, namespace="s") is True
        assert note.id not in [h.id for h in a.search(question, top_k=5, namespace="s")]
    finally:
        a.close()
        b.close()
