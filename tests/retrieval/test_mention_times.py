"""Times from the text (issue 15): the time ranges a memory's text mentions are resolved
against its event time when it is written (hm_memory_times), kept in step with the
memory on update / delete / forget / restore / clear, found by a question about that
time through the symbolic view (en + zh), and kept by the v4 -> v5 upgrade."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager, date_in_text
from hello_memory.stores.records import RecordStore
from hello_memory.stores.records.migrations import MIGRATIONS
from hello_memory.stores.records.models import SCHEMA_VERSION
from hello_memory.text.entities import RuleExtractor
from hello_memory.validation import content_hash

pytestmark = pytest.mark.slow

UTC = timezone.utc
SAID = datetime(2026, 12, 19, 15, 30, tzinfo=UTC)  # when "yesterday" was said
ASKED = datetime(2027, 1, 10, 9, 0, tzinfo=UTC)
V1_SQL = Path(__file__).parent.parent / "data" / "records_schema_v1.sql"


@pytest.fixture(scope="module")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def make(data: Path, embedder: Any, **memory: Any) -> MemoryManager:
    settings = load_settings(environ={}, data_dir=data, memory=memory)
    m = settings.memory
    return MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor(),
                         times_from_text=m.times_from_text,
                         event_time_from_text=m.event_time_from_text,
                         clock=lambda: ASKED)


@pytest.fixture
def mm(tmp_path: Path, embedder: Any) -> Iterator[MemoryManager]:
    manager = make(tmp_path / "data", embedder)
    yield manager
    manager.close()


def spans(mm: MemoryManager, memory_id: str, ns: str) -> list[tuple[str, str, str]]:
    return [(r.start.date().isoformat(), r.end.date().isoformat(), r.text)
            for r in mm.mentioned_times(memory_id, namespace=ns)]


def rows(mm: MemoryManager, ns: str) -> int:
    with mm.stores.records.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM hm_memory_times WHERE namespace = :n"),
                                {"n": ns}).scalar_one())


def test_mentioned_times_are_resolved_against_the_event_time(mm: MemoryManager) -> None:
    a = mm.add("I signed the lease yesterday.", namespace="t", event_time=SAID)
    assert spans(mm, a.id, "t") == [("2026-12-18", "2026-12-19", "yesterday")]
    b = mm.add("The movers come on 2027-01-04 and the party is next week.",
               namespace="t", event_time=SAID)
    assert spans(mm, b.id, "t") == [("2026-12-21", "2026-12-28", "next week"),
                                    ("2027-01-04", "2027-01-05", "2027-01-04")]
    zh = mm.add("我昨天去了医院。", namespace="t", event_time=SAID)
    assert spans(mm, zh.id, "t") == [("2026-12-18", "2026-12-19", "昨天")]
    assert spans(mm, mm.add("No time at all here.", namespace="t").id, "t") == []
    assert b.event_time == SAID  # the event time stays the one given


def test_rows_follow_update_delete_forget_restore_and_clear(mm: MemoryManager) -> None:
    a = mm.add("We met the architect yesterday.", namespace="k", event_time=SAID)
    mm.update(a.id, namespace="k", content="We met the architect last Monday.")
    assert spans(mm, a.id, "k") == [("2026-12-07", "2026-12-08", "last Monday")]
    mm.stores.update("k", a.id, event_time=datetime(2026, 12, 2, tzinfo=UTC))
    assert spans(mm, a.id, "k") == [("2026-11-23", "2026-11-24", "last Monday")]
    mm.update(a.id, namespace="k", importance=0.9)  # no text change: rows kept
    assert len(spans(mm, a.id, "k")) == 1
    mm.forget_ids([a.id], namespace="k")  # soft: the memory, and what it says, stay
    assert rows(mm, "k") == 1
    mm.restore([a.id], namespace="k")
    assert rows(mm, "k") == 1
    assert mm.remove(a.id, namespace="k")
    assert rows(mm, "k") == 0
    mm.add("Dinner with Sam tomorrow.", namespace="k", event_time=SAID)
    mm.add("Dinner with Sam tomorrow.", namespace="other", event_time=SAID)
    mm.clear("k", confirm=True)
    assert rows(mm, "k") == 0 and rows(mm, "other") == 1
    mm.forget("importance", threshold=1.0, namespace="other", hard=True)
    assert rows(mm, "other") == 0


def test_switched_off_nothing_is_stored(tmp_path: Path, embedder: Any) -> None:
    with make(tmp_path / "off", embedder, times_from_text=False) as mm:
        a = mm.add("I signed the lease yesterday.", namespace="t", event_time=SAID)
        assert spans(mm, a.id, "t") == []


def _found_by_symbolic(mm: MemoryManager, query: str, ns: str, memory_id: str) -> bool:
    hits = mm.search(query, top_k=5, namespace=ns, reference_time=ASKED)
    return any(h.id == memory_id and "symbolic" in h.views for h in hits)


def test_a_question_about_the_date_finds_what_was_said_about_it(mm: MemoryManager) -> None:
    ns = "q"
    lease = mm.add("I signed the lease on the new flat yesterday.", namespace=ns,
                   event_time=SAID)
    dated = mm.add("The contract for the flat is signed on 2026-12-18.", namespace=ns,
                   event_time=datetime(2026, 12, 1, tzinfo=UTC))
    zh = mm.add("我昨天签了新公寓的租约。", namespace=ns, event_time=SAID)
    other = mm.add("I signed up for a pottery class.", namespace=ns,
                   event_time=datetime(2026, 12, 18, 20, 0, tzinfo=UTC))
    for q in ("What did I sign on 2026-12-18?", "What happened on December 18, 2026?"):
        for m in (lease, dated, other):  # other: by its event time, as before
            assert _found_by_symbolic(mm, q, ns, m.id), (q, m.content)
    assert _found_by_symbolic(mm, "2026年12月18日我签了什么？", ns, zh.id)
    # the rows the view reads: what was said about that day, whenever it was said
    day = (datetime(2026, 12, 18, tzinfo=UTC), datetime(2026, 12, 19, tzinfo=UTC))
    assert set(mm.stores.records.memories.mentioning(ns, *day)) == {lease.id, dated.id, zh.id}
    mm.forget_ids([dated.id], namespace=ns)  # forgotten: out of search, rows kept
    assert set(mm.stores.records.memories.mentioning(ns, *day)) == {lease.id, zh.id}
    assert mm.stores.records.memories.mentioning(ns, datetime(2026, 12, 20, tzinfo=UTC),
                                                 datetime(2026, 12, 21, tzinfo=UTC)) == []


def test_when_questions_prefer_memories_that_say_when(mm: MemoryManager) -> None:
    ns = "w"
    said = mm.add("Caroline: I went to the LGBTQ support group yesterday.", namespace=ns,
                  event_time=SAID)
    mm.add("Caroline: The LGBTQ support group was so powerful.", namespace=ns,
           event_time=SAID)
    top = mm.search("When did Caroline go to the LGBTQ support group?", top_k=2,
                    namespace=ns, reference_time=ASKED)
    assert top[0].id == said.id


def test_event_time_from_text(tmp_path: Path, embedder: Any) -> None:
    assert date_in_text("We moved in on 2026-12-18.", SAID) == datetime(2026, 12, 18, tzinfo=UTC)
    assert date_in_text("搬家是2026年12月18日。", SAID) == datetime(2026, 12, 18, tzinfo=UTC)
    assert date_in_text("We moved in yesterday.", SAID) is None  # no written date
    assert date_in_text("From 2026-12-18 or 2026-12-20.", SAID) is None  # two dates
    with make(tmp_path / "on", embedder, event_time_from_text=True) as mm:
        a = mm.add("We moved in on 2026-12-18.", namespace="e")
        assert a.event_time == datetime(2026, 12, 18, tzinfo=UTC)
        b = mm.add("We unpacked on 2026-12-19.", namespace="e", event_time=SAID)
        assert b.event_time == SAID  # a given event time always wins
        assert mm.add("Nothing dated.", namespace="e").event_time.time() != datetime.min.time()
    with make(tmp_path / "off", embedder) as mm:  # the default: off
        assert mm.add("We moved in on 2026-12-18.", namespace="e").event_time != datetime(
            2026, 12, 18, tzinfo=UTC)


def test_upgrade_from_v4_keeps_data_and_fills_times(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'records.db'}"
    engine = create_engine(url)
    with engine.begin() as conn:
        for stmt in V1_SQL.read_text().split(";\n"):  # frozen v1 DDL and version row
            if stmt.strip():
                conn.exec_driver_sql(stmt)
        for n in (1, 2, 3):
            MIGRATIONS[n](conn)
        conn.execute(text("UPDATE hm_schema_meta SET value='4' WHERE key='schema_version'"))
        for rid, content in (("11111111-1111-4111-8111-111111111111",
                              "Lunch with  Ana yesterday."),
                             ("22222222-2222-4222-8222-222222222222", "我上周去了上海。"),
                             ("33333333-3333-4333-8333-333333333333", "No time here.")):
            conn.execute(text(
                "INSERT INTO hm_memory_items (id, namespace, memory_type, modality, content, "
                "content_hash, event_time, recorded_time, importance, access_count, status, "
                "metadata, tokens) VALUES (:id, 'old', 'episodic', 'text', :c, 'x', "
                "'2023-05-10 12:00:00', '2023-05-10 12:00:00', 0.5, 0, 'active', '{}', 3)"),
                {"id": rid, "c": content})
    engine.dispose()
    store = RecordStore(url)
    store.open()
    try:
        assert (tmp_path / "records.db.v4.bak").exists()
        items = {i.id[:1]: i for i in store.memories.list_items("old")}
        assert items["1"].content == "Lunch with  Ana yesterday."  # data kept as it was
        assert items["1"].content_hash == content_hash("Lunch with Ana yesterday.")
        got = store.memories.mentioned_times("old", items["1"].id)
        assert [(r.start.date().isoformat(), r.text) for r in got] == [("2023-05-09",
                                                                        "yesterday")]
        got = store.memories.mentioned_times("old", items["2"].id)
        assert [(r.start.date().isoformat(), r.text) for r in got] == [("2023-05-01", "上周")]
        assert store.memories.mentioned_times("old", items["3"].id) == []
        same = store.memories.find_by_hash("old", [content_hash("No time here.")])
        assert same[0].id == items["3"].id
    finally:
        store.close()
    with create_engine(url).connect() as conn:
        assert conn.execute(text("SELECT value FROM hm_schema_meta")).scalar_one() == str(
            SCHEMA_VERSION)
