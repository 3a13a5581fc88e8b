"""Record store: schema creation, reopen, upgrade, atomic batches, filters, isolation.

Every test that takes ``records_url`` (or ``store``) runs on SQLite and on a real
PostgreSQL server (tests/postgres_server.py); the SQLite-only ones check SQLite's
own mechanisms (WAL, the backup file beside the database, its query planner)."""

from __future__ import annotations

import hashlib
import socket
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, event, inspect, text

from hello_memory.errors import (
    BackendUnavailableError,
    EmptyContentError,
    InvalidImportanceError,
    InvalidInputError,
    NamespaceRequiredError,
    NotFoundError,
    SchemaVersionError,
)
from hello_memory.stores.records import SCHEMA_VERSION, ItemFilter, RecordStore
from hello_memory.stores.records.memories import count_tokens
from hello_memory.stores.records.migrations import MIGRATIONS
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType
from hello_memory.validation import content_hash

V1_SQL = Path(__file__).parent.parent / "data" / "records_schema_v1.sql"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "sub" / "records.db"


@pytest.fixture
def store(records_url: str):
    s = RecordStore(records_url)
    s.open()
    yield s
    s.close()


@pytest.fixture
def sqlite_store(db_path: Path):
    s = RecordStore(f"sqlite:///{db_path}")
    s.open()
    yield s
    s.close()


def _engine(url: str) -> Engine:
    return create_engine(url)


def _version(url: str) -> int:
    engine = _engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(
                "SELECT value FROM hm_schema_meta WHERE key='schema_version'")).scalar_one())
    finally:
        engine.dispose()


def _contents(url: str) -> dict[str, list[str]]:
    """Every table's rows (as sorted reprs): a database's whole content."""
    engine = _engine(url)
    try:
        with engine.connect() as conn:
            tables = inspect(conn).get_table_names()
            return {t: sorted(repr(tuple(r)) for r in conn.execute(text(f'SELECT * FROM "{t}"')))
                    for t in tables}
    finally:
        engine.dispose()


def item(content: str = "hello", ns: str = "ns1", **kw) -> MemoryItem:
    return MemoryItem(content=content, namespace=ns, **kw)


def test_open_creates_schema(store: RecordStore) -> None:
    assert _version(store.url) == SCHEMA_VERSION
    with store.engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
    for t in ("hm_memory_items", "hm_entities", "hm_relations", "hm_entity_mentions",
              "hm_relation_mentions", "hm_documents", "hm_chunks", "hm_outbox", "hm_audit_log",
              "hm_namespace_totals", "hm_schema_meta"):
        assert t in tables
    assert "hm_rag_outbox" not in tables  # schema v6: one outbox for every kind


def test_sqlite_open_uses_wal_and_foreign_keys(sqlite_store: RecordStore, db_path: Path) -> None:
    assert db_path.exists()
    with sqlite_store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_items_survive_reopen(records_url: str) -> None:
    s = RecordStore(records_url)
    s.open()
    it = item("I moved to Berlin in May", importance=0.8, session_id="s1",
              metadata={"tags": ["move"], "emoji": "🦊"}, event_time=T0)
    s.memories.add_items([it])
    s.close()
    s2 = RecordStore(records_url)
    s2.open()
    got = s2.memories.get_item("ns1", it.id)
    s2.close()
    assert got.content == it.content
    assert got.importance == 0.8
    assert got.metadata == {"tags": ["move"], "emoji": "🦊"}
    assert got.event_time == T0 and got.event_time.tzinfo is not None
    assert got.content_hash == content_hash(it.content)


# The frozen v1 DDL is SQLite's; on PostgreSQL, SQLAlchemy made the same tables with
# aware timestamps and SERIAL keys (where SQLite's INTEGER PRIMARY KEY is its rowid).
_V1_POSTGRESQL = (("DATETIME", "TIMESTAMP WITH TIME ZONE"),
                  ("\tid INTEGER NOT NULL", "\tid SERIAL NOT NULL"),
                  ("\tseq INTEGER NOT NULL", "\tseq SERIAL NOT NULL"))


def _stamp(engine: Engine) -> str:
    """2023-01-01 UTC as an old version wrote it (SQLite: naive text, meaning UTC)."""
    return "2023-01-01 00:00:00+00" if engine.dialect.name == "postgresql" else (
        "2023-01-01 00:00:00")


def _make_v1(url: str) -> list[tuple[str, str]]:
    """A schema-v1 database at ``url`` with two memories in namespace "old"."""
    sql = V1_SQL.read_text()
    engine = _engine(url)
    if engine.dialect.name == "postgresql":
        for old, new in _V1_POSTGRESQL:
            sql = sql.replace(old, new)
    rows = [("11111111-1111-4111-8111-111111111111", "first memory"),
            ("22222222-2222-4222-8222-222222222222", "第二条记忆")]
    try:
        with engine.begin() as conn:
            for statement in sql.split(";\n"):
                if statement.strip():
                    conn.exec_driver_sql(statement)
            for rid, content in rows:
                conn.execute(text(
                    "INSERT INTO hm_memory_items (id, namespace, memory_type, modality, content, "
                    "event_time, recorded_time, importance, access_count, status, metadata) "
                    "VALUES (:id, 'old', 'episodic', 'text', :c, :t, :t, 0.7, 3, 'active', "
                    "'{\"k\": 1}')"), {"id": rid, "c": content, "t": _stamp(engine)})
    finally:
        engine.dispose()
    return rows


def test_upgrade_from_v1_keeps_data_and_backfills(records_url: str, tmp_path: Path) -> None:
    """From the oldest schema through every step to the current one, data kept."""
    rows = _make_v1(records_url)
    s = RecordStore(records_url)
    s.open()
    items = s.memories.get_items("old", [r[0] for r in rows])
    s.close()
    assert [i.content for i in items] == [r[1] for r in rows]
    assert all(i.content_hash == content_hash(i.content) for i in items)
    assert items[0].access_count == 3 and items[0].metadata == {"k": 1}
    assert items[0].event_time == datetime(2023, 1, 1, tzinfo=timezone.utc)
    if records_url.startswith("sqlite"):
        assert (tmp_path / "records.db.v1.bak").exists()
    assert _version(records_url) == SCHEMA_VERSION
    # A second open is a no-op upgrade.
    s = RecordStore(records_url)
    s.open()
    assert s.memories.count_items("old") == 2
    s.memories.add_items([item("written after the upgrade", ns="old")])  # every column accepts
    assert s.memories.count_items("old") == 3 and s.memories.namespace_totals("old")[0] == 3
    s.close()
    assert _version(records_url) == SCHEMA_VERSION


def _schema(url: str) -> dict[str, object]:
    """Columns (name, type, nullable) and index names of every table at ``url``."""
    engine = _engine(url)
    try:
        with engine.connect() as conn:
            insp = inspect(conn)
            return {t: (sorted((c["name"], str(c["type"]), c["nullable"])
                               for c in insp.get_columns(t)),
                        sorted(str(i["name"]) for i in insp.get_indexes(t)))
                    for t in insp.get_table_names()}
    finally:
        engine.dispose()


def test_upgraded_schema_matches_a_fresh_one(records_url: str, tmp_path: Path,
                                            request: pytest.FixtureRequest) -> None:
    """Every migration step together builds the tables, columns and indexes a new
    database gets from the models (the ALTER TABLE steps spell types per dialect)."""
    _make_v1(records_url)
    upgraded = RecordStore(records_url)
    upgraded.open()
    upgraded.close()
    if records_url.startswith("sqlite"):
        fresh_url = f"sqlite:///{tmp_path / 'fresh.db'}"
    else:
        server = request.getfixturevalue("postgres_server")
        fresh_url = server.create_schema()
        request.addfinalizer(lambda: server.drop_schema(fresh_url))
    fresh = RecordStore(fresh_url)
    fresh.open()
    fresh.close()
    assert _schema(records_url) == _schema(fresh_url)


def test_newer_schema_is_refused_untouched(records_url: str, tmp_path: Path) -> None:
    s = RecordStore(records_url)
    s.open()
    s.memories.add_items([item()])
    s.close()
    engine = _engine(records_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE hm_schema_meta SET value='99' WHERE key='schema_version'"))
    engine.dispose()
    db_file = tmp_path / "records.db"
    before = (_contents(records_url),
              hashlib.sha256(db_file.read_bytes()).hexdigest() if db_file.exists() else None)
    with pytest.raises(SchemaVersionError, match="99"):
        RecordStore(records_url).open()
    assert (_contents(records_url),
            hashlib.sha256(db_file.read_bytes()).hexdigest() if db_file.exists() else None
            ) == before


def test_tables_without_version_row_are_refused(records_url: str) -> None:
    _make_v1(records_url)
    engine = _engine(records_url)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE hm_schema_meta"))
    engine.dispose()
    with pytest.raises(SchemaVersionError):
        RecordStore(records_url).open()


def test_batch_is_atomic_on_bad_item(store: RecordStore) -> None:
    good = item("fine")
    with pytest.raises(InvalidImportanceError):
        store.memories.add_items([good, item("bad", importance=1.5)])
    with pytest.raises(EmptyContentError):
        store.memories.add_items([good, item("   ")])
    with pytest.raises(InvalidImportanceError):
        store.memories.add_items([good, item("nan", importance=float("nan"))])
    with pytest.raises(InvalidInputError, match="naive"):
        store.memories.add_items([good, item("naive", event_time=datetime(2024, 1, 1))])
    assert store.memories.count_items("ns1") == 0
    assert store.outbox.pending_outbox() == []


def test_duplicate_id_rejected_and_nothing_written(store: RecordStore) -> None:
    first = item("one")
    store.memories.add_items([first])
    with pytest.raises(InvalidInputError, match="already exists"):
        store.memories.add_items([item("two"), item("three", id=first.id)])
    assert store.memories.count_items("ns1") == 1
    assert len(store.outbox.pending_outbox()) == 1


def test_filters(store: RecordStore) -> None:
    store.memories.add_items([
        item("a", event_time=T0, session_id="s1", user_id="u1", importance=0.9),
        item("b", event_time=T0 + timedelta(days=3), session_id="s2", user_id="u1",
             importance=0.2, memory_type=MemoryType.SEMANTIC),
        item("c", event_time=T0 + timedelta(days=10), session_id="s1", user_id="u2",
             importance=0.5, status=MemoryStatus.FORGOTTEN),
    ])
    def contents(flt: ItemFilter) -> list[str]:
        return [i.content for i in store.memories.list_items("ns1", flt)]
    assert contents(ItemFilter()) == ["a", "b"]  # forgotten excluded by default
    assert contents(ItemFilter(status=None)) == ["a", "b", "c"]
    assert contents(ItemFilter(session_id="s1")) == ["a"]
    assert contents(ItemFilter(user_id="u1", min_importance=0.5)) == ["a"]
    assert contents(ItemFilter(since=T0 + timedelta(days=1), status=None)) == ["b", "c"]
    assert contents(ItemFilter(until=T0 + timedelta(days=1))) == ["a"]
    assert contents(ItemFilter(memory_types=(MemoryType.SEMANTIC,))) == ["b"]
    assert store.memories.count_items("ns1", ItemFilter(status=None)) == 3


def test_session_orders(store: RecordStore) -> None:
    late = item("late", event_time=T0 + timedelta(hours=2), session_id="s1")
    early = item("early", event_time=T0, session_id="s1")
    gone = item("gone", event_time=T0 + timedelta(hours=1), session_id="s1",
                status=MemoryStatus.FORGOTTEN)
    other = item("other", event_time=T0, session_id="s2")
    elsewhere = item("elsewhere", ns="ns2", event_time=T0, session_id="s1")
    store.memories.add_items([late, early, gone, other, elsewhere])
    orders = store.memories.session_orders("ns1", ["s1", "s2", "s1", "empty"])
    # event-time order, active only, this namespace only, every asked session present
    assert orders == {"s1": (early.id, late.id), "s2": (other.id,), "empty": ()}
    assert store.memories.session_orders("ns1", []) == {}
    # a tie on event time falls back to the recorded time
    tie = item("tie", event_time=T0, session_id="s2",
               recorded_time=other.recorded_time + timedelta(seconds=1))
    store.memories.add_items([tie])
    assert store.memories.session_orders("ns1", ["s2"])["s2"] == (other.id, tie.id)
    with pytest.raises(NamespaceRequiredError):
        store.memories.session_orders(" ", ["s1"])


def test_namespace_isolation(store: RecordStore) -> None:
    a, b = item("mine", ns="alice"), item("theirs", ns="bob")
    store.memories.add_items([a, b])
    alone = store.memories.get_item("alice", a.id)
    assert store.memories.get_items("alice", [a.id, b.id]) == [alone]
    with pytest.raises(NotFoundError):
        store.memories.get_item("alice", b.id)
    assert store.memories.delete_items("alice", [b.id]) == 0
    with pytest.raises(NotFoundError):
        store.memories.update_item("alice", b.id, importance=0.1)
    assert store.memories.get_item("bob", b.id).importance == 0.5
    for bad in ("", "   ", None):
        with pytest.raises(NamespaceRequiredError):
            store.memories.count_items(bad)  # type: ignore[arg-type]
    assert store.memories.namespaces() == ["alice", "bob"]


def test_update_and_delete_queue_outbox(store: RecordStore) -> None:
    it = item("old text")
    [row] = store.memories.add_items([it])
    store.outbox.mark_applied([row.seq])
    assert store.outbox.pending_outbox() == []
    new = store.memories.update_item("ns1", it.id, content="new text", importance=0.9)
    assert new.content_hash == content_hash("new text")
    assert store.memories.get_item("ns1", it.id).content == "new text"
    with pytest.raises(InvalidInputError, match="id"):
        store.memories.update_item("ns1", it.id, id="x")
    with pytest.raises(InvalidImportanceError):
        store.memories.update_item("ns1", it.id, importance=-1)
    assert store.memories.get_item("ns1", it.id).importance == 0.9
    assert store.memories.delete_items("ns1", [it.id, "no-such-id"]) == 1
    assert [(e.op, e.memory_id) for e in store.outbox.pending_outbox()] == [
        ("upsert", it.id), ("delete", it.id)]


def test_record_access_and_audit(store: RecordStore) -> None:
    it = item("x")
    store.memories.add_items([it])
    store.memories.record_access("ns1", [it.id])
    store.memories.record_access("ns1", [it.id])
    got = store.memories.get_item("ns1", it.id)
    assert got.access_count == 2 and got.last_access is not None
    store.audit.add("ns1", "forget", {"forgot": 3})
    assert store.audit.list("ns1")[0]["details"] == {"forgot": 3}
    assert store.audit.list("ns2") == []


def test_any_sqlalchemy_url_and_unopenable_paths(tmp_path: Path) -> None:
    mem = RecordStore("sqlite://")
    mem.open()
    mem.memories.add_items([item("in memory")])
    assert mem.memories.count_items("ns1") == 1
    mem.close()
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(BackendUnavailableError):
        RecordStore(f"sqlite:///{blocker}/records.db").open()
    with pytest.raises(BackendUnavailableError):
        RecordStore("nosuchdialect://x").open()


def test_unreachable_postgresql_is_backend_unavailable() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendUnavailableError, match="cannot reach"):
        RecordStore(f"postgresql+psycopg://hm@127.0.0.1:{port}/nowhere?connect_timeout=3").open()


# --- schema v4: stored topics and token counts, namespace totals, bounded reads -----
def _active_totals(store: RecordStore, ns: str) -> tuple[int, int]:
    """The totals recomputed from the rows, independently of the store's bookkeeping."""
    items = store.memories.list_items(ns)
    return len(items), sum(count_tokens(i.content) for i in items)


def test_upgrade_from_v3_fills_topics_tokens_and_totals(records_url: str, tmp_path: Path
                                                        ) -> None:
    _make_v1(records_url)  # two episodic rows in namespace "old"
    engine = _engine(records_url)
    with engine.begin() as conn:
        MIGRATIONS[1](conn)
        MIGRATIONS[2](conn)
        conn.execute(text("UPDATE hm_schema_meta SET value='3' WHERE key='schema_version'"))
        for rid, content, session, meta, status in (
                ("33333333-3333-4333-8333-333333333333", "a topic of its own", None,
                 '{"topic": "  trip\\n planning "}', "active"),
                ("44444444-4444-4444-8444-444444444444", "in a session", "s9", "{}", "active"),
                ("55555555-5555-4555-8555-555555555555", "forgotten one", "s9", "{}",
                 "forgotten")):
            conn.execute(text(
                "INSERT INTO hm_memory_items (id, namespace, session_id, memory_type, modality, "
                "content, event_time, recorded_time, importance, access_count, status, "
                "metadata) VALUES (:id, 'v3', :s, 'semantic', 'text', :c, "
                ":t, :t, 0.5, 0, :st, :m)"),
                {"id": rid, "s": session, "c": content, "m": meta, "st": status,
                 "t": _stamp(engine)})
    s = RecordStore(records_url)
    s.open()
    try:
        if records_url.startswith("sqlite"):
            assert (tmp_path / "records.db.v3.bak").exists()
        with engine.connect() as conn:
            rows = dict(conn.execute(text("SELECT id, topic FROM hm_memory_items")).all())
        assert rows["33333333-3333-4333-8333-333333333333"] == "trip planning"
        assert rows["44444444-4444-4444-8444-444444444444"] == "s9"
        assert rows["11111111-1111-4111-8111-111111111111"] == (
            "11111111-1111-4111-8111-111111111111")  # no topic, no session: its own id
        for ns in ("old", "v3"):
            assert s.memories.namespace_totals(ns) == _active_totals(s, ns)
        assert s.memories.namespace_totals("v3")[0] == 2  # the forgotten row is not counted
        recent = s.memories.recent_by_topic("v3", ["s9"], 5)["s9"]
        assert [i.content for i in recent] == ["in a session"]
        indexes = {i["name"] for i in inspect(engine).get_indexes("hm_memory_items")}
        assert {"ix_items_ns_topic", "ix_items_ns_type_importance"} <= indexes
    finally:
        s.close()
        engine.dispose()
    assert _version(records_url) == SCHEMA_VERSION  # upgraded on through every later step


def test_totals_follow_every_write(store: RecordStore) -> None:
    a = item("first memory with several words", importance=0.7)
    b = item("second", session_id="s1")
    gone = item("stored forgotten", status=MemoryStatus.FORGOTTEN)
    other = item("another namespace entirely", ns="ns2")
    store.memories.add_items([a, b, gone, other])
    longer = "now a much longer text than it was before, with more tokens"
    checks = [lambda: store.memories.update_item("ns1", a.id, content=longer),
              lambda: store.memories.update_item("ns1", b.id, status=MemoryStatus.FORGOTTEN),
              lambda: store.memories.update_item("ns1", b.id, content="edited while forgotten"),
              lambda: store.memories.update_item("ns1", b.id, status=MemoryStatus.ACTIVE),
              lambda: store.memories.update_item("ns1", gone.id, importance=0.2),
              lambda: store.memories.delete_items("ns1", [gone.id]),
              lambda: store.memories.delete_items("ns1", [a.id, "no-such-id"])]
    assert store.memories.namespace_totals("ns1") == _active_totals(store, "ns1") == (
        2, count_tokens(a.content) + count_tokens(b.content))
    for change in checks:
        change()
        assert store.memories.namespace_totals("ns1") == _active_totals(store, "ns1")
        assert store.memories.namespace_totals("ns2") == _active_totals(store, "ns2") == (
            1, count_tokens(other.content))
    # A failed write changes nothing, the totals included.
    with pytest.raises(InvalidInputError):
        store.memories.add_items([item("new one"), item("dup", id=b.id)])
    assert store.memories.namespace_totals("ns1") == _active_totals(store, "ns1")
    assert store.memories.delete_items("ns1", [b.id]) == 1
    assert store.memories.namespace_totals("ns1") == (0, 0)
    assert store.memories.namespace_totals("nobody") == (0, 0)
    with store.engine.begin() as conn:  # edited out of band ...
        conn.execute(text("UPDATE hm_namespace_totals SET tokens = 999"))
    repaired = store.memories.recount_totals()  # ... repaired
    assert repaired == {"ns2": (1, count_tokens(other.content))}
    assert store.memories.namespace_totals("ns1") == (0, 0)


def test_topics_and_importance_orders(store: RecordStore) -> None:
    old = item("old", session_id="s1", event_time=T0)
    new = item("new", session_id="s1", event_time=T0 + timedelta(days=1))
    tagged = item("tagged", session_id="s1", metadata={"topic": "t"},
                  event_time=T0 + timedelta(hours=1))
    long_key = "x" * 300
    longer = item("long", metadata={"topic": long_key}, event_time=T0)
    twin = item("twin", metadata={"topic": long_key + "y"}, event_time=T0)  # same prefix
    forgotten = item("forgotten", session_id="s1", status=MemoryStatus.FORGOTTEN,
                     event_time=T0 + timedelta(days=2))
    store.memories.add_items([old, new, tagged, longer, twin, forgotten])
    got = store.memories.recent_by_topic("ns1", ["s1", "t", long_key, "none"], 5)
    assert {k: [i.content for i in v] for k, v in got.items()} == {
        "s1": ["new", "old"], "t": ["tagged"], long_key: ["long"], "none": []}
    assert [i.content for i in store.memories.recent_by_topic("ns1", ["s1"], 1)["s1"]] == ["new"]
    store.memories.update_item("ns1", old.id, metadata={"topic": "t"})  # a new topic on update
    recent = store.memories.recent_by_topic("ns1", ["t"], 5)["t"]
    assert [i.content for i in recent] == ["tagged", "old"]
    facts = [item(f"fact {n}", memory_type=MemoryType.SEMANTIC, importance=imp,
                  event_time=T0 + timedelta(days=n))
             for n, imp in enumerate((0.9, 0.3, 0.9, 0.6))]
    store.memories.add_items(facts)
    top = store.memories.list_items("ns1", ItemFilter(memory_types=(MemoryType.SEMANTIC,)),
                                    order="-importance", limit=3)
    assert [i.content for i in top] == ["fact 2", "fact 0", "fact 3"]
    newest = store.memories.list_items("ns1", order="-event_time", limit=2)
    assert [i.content for i in newest] == ["fact 3", "fact 2"]
    with pytest.raises(InvalidInputError):
        store.memories.list_items("ns1", order="size")  # type: ignore[arg-type]


def test_per_call_reads_run_on_indexes(sqlite_store: RecordStore) -> None:
    """The loader's per-call reads are index searches with LIMIT: no scan of the
    namespace's rows and no sort of them (SQLite's query plan)."""
    store = sqlite_store
    store.memories.add_items([item(f"memory {n}", session_id=f"s{n % 7}", importance=(n % 10) / 10,
                                   memory_type=(MemoryType.SEMANTIC, MemoryType.EPISODIC)[n % 2],
                                   event_time=T0 + timedelta(minutes=n)) for n in range(300)])
    seen: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, context: Any,
                executemany: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "hm_memory_items" in statement:
            seen.append((statement, params))

    event.listen(store.engine, "before_cursor_execute", capture)
    try:
        store.memories.recent_by_topic("ns1", ["s3", "s4"], 3)
        facts = ItemFilter(memory_types=(MemoryType.SEMANTIC,), min_importance=0.6)
        store.memories.list_items("ns1", facts, order="-importance", limit=3)
        store.memories.namespace_totals("ns1")
    finally:
        event.remove(store.engine, "before_cursor_execute", capture)
    # The topics' ids (one compound statement), their rows by key, the list; the totals
    # never touch the rows.
    assert len(seen) == 3
    plans = []
    with store.engine.connect() as conn:
        for statement, params in seen:
            plans.append(" | ".join(str(r[-1]) for r in conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + statement, params)))
    for plan in plans:
        assert "SEARCH hm_memory_items USING" in plan, plan
        assert "SCAN hm_memory_items" not in plan and "TEMP B-TREE" not in plan, plan
    assert "ix_items_ns_topic" in plans[0] and "ix_items_ns_type_importance" in plans[2]


# --- what differs between the databases: one behaviour on each ----------------------
def _is_sqlite(store: RecordStore) -> bool:
    return store.engine.dialect.name == "sqlite"


@pytest.mark.parametrize("when", [
    datetime(1, 1, 1, tzinfo=timezone.utc),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc),
    datetime(2024, 2, 29, 23, 30, 0, 123456, tzinfo=timezone(timedelta(hours=-8))),
], ids=["year-1", "year-9999", "offset"])
def test_aware_times_come_back_as_the_same_instant_in_utc(store: RecordStore,
                                                          when: datetime) -> None:
    """Whatever the server's time zone (the test server's is America/Los_Angeles)."""
    it = item("at an unusual time", event_time=when, last_access=when)
    store.memories.add_items([it])
    got = store.memories.get_item("ns1", it.id)
    assert got.event_time == when and got.last_access == when
    assert got.event_time.utcoffset() == timedelta(0)
    found = store.memories.list_items("ns1", ItemFilter(since=when, until=when))
    assert [i.id for i in found] == [it.id]


def test_counters_and_sequence_keys_pass_32_bits(store: RecordStore) -> None:
    it = item("counted")
    store.memories.add_items([it])
    store.memories.update_item("ns1", it.id, access_count=2**40)
    store.memories.record_access("ns1", [it.id])
    assert store.memories.get_item("ns1", it.id).access_count == 2**40 + 1
    big = 2**31 + 5  # a long-lived store writes that many outbox and audit rows
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE hm_namespace_totals SET tokens = :t"), {"t": 2**31 - 1})
        for table, key in (("hm_outbox", "seq"), ("hm_audit_log", "id")):
            if _is_sqlite(store):  # the next rowid follows the largest
                conn.execute(text("UPDATE hm_outbox SET seq = seq + :k"), {"k": big})
                conn.execute(text("INSERT INTO hm_audit_log (id, at, namespace, action, "
                                  "details) VALUES (:k, :t, 'ns1', 'x', '{}')"),
                             {"k": big, "t": T0.isoformat()})
                break
            else:
                conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', '{key}'), "
                                  ":k)"), {"k": big})
    added = item("after many writes")
    [row] = store.memories.add_items([added])
    assert row.seq > big
    assert store.memories.namespace_totals("ns1") == (2, 2**31 - 1 + count_tokens(added.content))
    store.audit.add("ns1", "forget", {"n": 1})
    assert store.audit.list("ns1", limit=1)[0]["details"] == {"n": 1}


@pytest.mark.parametrize("bad", [
    {"content": "a NUL \x00 inside"},
    {"ns": "n" * 300},
    {"content": "too big a counter", "access_count": 2**64},
], ids=["nul-in-text", "namespace-past-its-column", "counter-past-64-bits"])
def test_a_value_the_database_cannot_hold_is_a_typed_error(store: RecordStore,
                                                            bad: dict[str, Any]) -> None:
    """SQLite keeps NUL characters and strings longer than a VARCHAR column; PostgreSQL
    refuses both. Where the database refuses a value, the error is InvalidInputError
    (a 400 from the REST API, not a 500) and nothing is written."""
    it = item(**bad)
    try:
        store.memories.add_items([it])
    except InvalidInputError as exc:
        assert "cannot hold" in str(exc)
        assert not (_is_sqlite(store) and "access_count" not in bad)
        assert store.memories.count_items(it.namespace, ItemFilter(status=None)) == 0
        assert store.outbox.pending_outbox() == []
        assert store.memories.namespace_totals(it.namespace) == (0, 0)
    else:
        assert _is_sqlite(store) and "access_count" not in bad
        assert store.memories.get_item(it.namespace, it.id).content == it.content


def test_namespaces_and_ids_compare_exactly(store: RecordStore) -> None:
    """No case folding or accent folding anywhere (PostgreSQL's and SQLite's ``=``)."""
    lower, upper, accent = item("lower", ns="team"), item("upper", ns="Team"), item(
        "accent", ns="téam")
    store.memories.add_items([lower, upper, accent])
    for it in (lower, upper, accent):
        assert [i.content for i in store.memories.list_items(it.namespace)] == [it.content]
    assert store.memories.get_items("team", [lower.id.upper(), lower.id]) == [
        store.memories.get_item("team", lower.id)]
    assert store.memories.namespaces() == sorted(["team", "Team", "téam"])


def test_documents_list_in_code_point_order(store: RecordStore) -> None:
    """The same order on every database, whatever its collation (ignoring punctuation,
    as en_US.UTF-8 does, would put "a-b.md" after "ab.md")."""
    from hello_memory.stores.records.documents import DocumentRecord

    paths = ["/d/ab.md", "/d/a-b.md", "/d/B.md", "/d/a b.md", "/d/a_b.md"]
    for n, path in enumerate(paths):
        store.documents.replace_document(DocumentRecord(
            id=f"00000000-0000-4000-8000-{n:012d}", namespace="kb", source_path=path,
            content_hash="h" * 64, ingested_at=T0), [])
    assert [d.source_path for d in store.documents.list_documents("kb")] == sorted(paths)
