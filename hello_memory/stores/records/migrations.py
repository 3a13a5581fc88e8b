"""Schema versions of the record store and the steps between them.

Each step is additive (new columns, tables, indexes, backfills) and runs in its own
transaction; the version row is bumped in the same transaction, so a crash leaves the
database at a whole version. Before migrating an SQLite file a copy is kept beside it
(``records.db.v<N>.bak``); a PostgreSQL database is not copied (back it up with
``pg_dump`` before upgrading hello-memory). A database newer than this code is refused,
never touched.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    DateTime,
    Engine,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)

from hello_memory.errors import SchemaVersionError
from hello_memory.stores.records.models import (
    SCHEMA_VERSION,
    TOPIC_CHARS,
    Base,
    MemoryRow,
    MemoryTimeRow,
    NamespaceTotalsRow,
    OutboxRow,
    SchemaMeta,
)
from hello_memory.types import MemoryItem
from hello_memory.validation import content_hash

log = logging.getLogger(__name__)

VERSION_KEY = "schema_version"


def _v1_to_v2(conn: Connection) -> None:
    """v2 adds ``hm_memory_items.content_hash`` (dedup, change detection), backfilled."""
    conn.execute(text("ALTER TABLE hm_memory_items ADD COLUMN content_hash VARCHAR(64)"))
    conn.execute(
        text("CREATE INDEX ix_items_ns_hash ON hm_memory_items (namespace, content_hash)")
    )
    rows = conn.execute(select(MemoryRow.id, MemoryRow.content)).all()
    for row_id, content in rows:
        conn.execute(update(MemoryRow).where(MemoryRow.id == row_id)
                     .values(content_hash=content_hash(content)))


# The chunk outbox of schema v3 to v5, as it was (v6 moved its rows into hm_outbox).
_LEGACY = MetaData()
_RAG_OUTBOX_V3 = Table(
    "hm_rag_outbox", _LEGACY,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("op", String(16)), Column("namespace", String(255)), Column("chunk_id", String(36)),
    Column("created_at", DateTime(timezone=True)), Column("applied_at", DateTime(timezone=True)),
    Index("ix_rag_outbox_pending", "applied_at", "seq"))


def _v2_to_v3(conn: Connection) -> None:
    """v3 adds ``hm_rag_outbox``: pending index work of document chunks (RAG)."""
    _RAG_OUTBOX_V3.create(conn, checkfirst=True)


def _v3_to_v4(conn: Connection) -> None:
    """v4 keeps per-call reads bounded: ``hm_memory_items.topic`` (the loader's topic
    key) and ``.tokens`` (the content's token count), both backfilled, with the indexes
    that serve a topic's newest memories and a type's most important ones; and
    ``hm_namespace_totals`` (active memories and tokens per namespace), filled from
    the rows."""
    # Imported here: the store module imports this one.
    from hello_memory.stores.records.memories import count_tokens, topic_for

    conn.execute(text(f"ALTER TABLE hm_memory_items ADD COLUMN topic VARCHAR({TOPIC_CHARS})"))
    conn.execute(text("ALTER TABLE hm_memory_items ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0"))
    items = Base.metadata.tables[MemoryRow.__tablename__]
    rows = conn.execute(select(items.c.id, items.c.content, items.c.session_id,
                               items.c.metadata)).all()
    backfill = [{"_id": rid, "_topic": topic_for(meta, session, rid)[:TOPIC_CHARS],
                 "_tokens": count_tokens(content)} for rid, content, session, meta in rows]
    if backfill:  # one executemany, not one statement per row
        conn.execute(update(items).where(items.c.id == bindparam("_id"))
                     .values(topic=bindparam("_topic"), tokens=bindparam("_tokens")), backfill)
    for index in items.indexes:
        if index.name in ("ix_items_ns_topic", "ix_items_ns_type_importance"):
            index.create(conn)
    totals = Base.metadata.tables[NamespaceTotalsRow.__tablename__]
    totals.create(conn)
    conn.execute(insert(totals).from_select(
        ["namespace", "items", "tokens"],
        select(items.c.namespace, func.count(), func.coalesce(func.sum(items.c.tokens), 0))
        .where(items.c.status == "active").group_by(items.c.namespace)))


def _v5_validity(conn: Connection) -> None:
    """Validity of a memory (issue 15, facts that update): ``valid_from`` (backfilled
    from the event time), ``valid_to`` and ``superseded_by`` (NULL: still true),
    ``fact_key`` (backfilled by the rules of hello_memory/text/facts.py), and the
    index the same-fact lookup reads."""
    from hello_memory.text.facts import fact_key

    items = Base.metadata.tables[MemoryRow.__tablename__]
    for name in ("valid_from", "valid_to", "superseded_by", "fact_key"):
        ddl = items.c[name].type.compile(dialect=conn.dialect)
        conn.execute(text(f"ALTER TABLE hm_memory_items ADD COLUMN {name} {ddl}"))
    conn.execute(update(items).values(valid_from=items.c.event_time))
    rows = conn.execute(select(items.c.id, items.c.content, items.c.metadata,
                               items.c.user_id))
    keys = [{"_id": rid, "_key": key} for rid, content, meta, user in rows
            if (key := fact_key(content, meta if isinstance(meta, dict) else None,
                                user)) is not None]
    if keys:  # one executemany over the rows that state a fact
        conn.execute(update(items).where(items.c.id == bindparam("_id"))
                     .values(fact_key=bindparam("_key")), keys)
    for index in items.indexes:
        if index.name == "ix_items_ns_fact_key":
            index.create(conn)


def _v5_mention_times(conn: Connection) -> None:
    """Times from the text (issue 15): ``hm_memory_times``, the time ranges each
    memory's content mentions resolved against its event time, filled from the rows;
    and ``content_hash`` recomputed, now of the whitespace-normalised NFC text
    (validation.content_hash), the key of the idempotent add."""
    # Imported here: the store module imports this one.
    from hello_memory.stores.records.memories import mention_time_rows

    items = Base.metadata.tables[MemoryRow.__tablename__]
    times = Base.metadata.tables[MemoryTimeRow.__tablename__]
    times.create(conn)
    rows = conn.execute(select(items.c.id, items.c.namespace, items.c.content,
                               items.c.event_time)).all()
    hashes, mentions = [], []
    for rid, ns, content, event_time in rows:
        hashes.append({"_id": rid, "_hash": content_hash(content)})
        mentions += mention_time_rows(MemoryItem(id=rid, namespace=ns, content=content,
                                          event_time=event_time))
    if hashes:  # executemany, not one statement per row
        conn.execute(update(items).where(items.c.id == bindparam("_id"))
                     .values(content_hash=bindparam("_hash")), hashes)
    if mentions:
        conn.execute(insert(times), mentions)


def _v4_to_v5(conn: Connection) -> None:
    """v5 (issue 15): each part of the step is its own function, all in this one
    transaction."""
    _v5_validity(conn)
    _v5_mention_times(conn)


def _v5_to_v6(conn: Connection) -> None:
    """v6 (issue 16): ONE outbox keyed by the kind of indexed thing. ``hm_outbox`` gets
    ``kind`` and its ``memory_id`` becomes ``item_id``; the rows of perceptual memories
    become "media" rows (and a pending delete of a memory already gone is queued for
    both kinds: its type is no longer known); the pending rows of ``hm_rag_outbox``
    move in as "chunk" rows and that table is dropped. Each part checks what is there
    (a database rebuilt half-way by hand is upgraded too)."""
    insp = inspect(conn)
    columns = {c["name"] for c in insp.get_columns("hm_outbox")}
    if "kind" not in columns:
        conn.execute(text("ALTER TABLE hm_outbox ADD COLUMN kind VARCHAR(16) "
                          "NOT NULL DEFAULT 'memory'"))
    if "memory_id" in columns:
        conn.execute(text("ALTER TABLE hm_outbox RENAME COLUMN memory_id TO item_id"))
    conn.execute(text(
        "UPDATE hm_outbox SET kind = 'media' WHERE item_id IN "
        "(SELECT id FROM hm_memory_items WHERE memory_type = 'perceptual')"))
    conn.execute(text(
        "INSERT INTO hm_outbox (kind, op, namespace, item_id, created_at) "
        "SELECT 'media', op, namespace, item_id, created_at FROM hm_outbox "
        "WHERE applied_at IS NULL AND kind = 'memory' AND op = 'delete' AND item_id NOT IN "
        "(SELECT id FROM hm_memory_items)"))
    if "hm_rag_outbox" in insp.get_table_names():
        conn.execute(text(
            "INSERT INTO hm_outbox (kind, op, namespace, item_id, created_at) "
            "SELECT 'chunk', op, namespace, chunk_id, created_at FROM hm_rag_outbox "
            "WHERE applied_at IS NULL ORDER BY seq"))
        conn.execute(text("DROP TABLE hm_rag_outbox"))
    if "ix_outbox_item" not in {i["name"] for i in insp.get_indexes("hm_outbox")}:
        for index in OutboxRow.__table__.indexes:  # type: ignore[attr-defined]
            if index.name == "ix_outbox_item":
                index.create(conn)


def _v6_to_v7(conn: Connection) -> None:
    """v7 (issue 28, concurrency): ``hm_memory_items.version`` (1 for every row, then
    bumped by each update: the compare-and-swap of consolidate / forget / restore) and
    ``dedup_key`` with its unique index per namespace (the idempotent add under
    concurrency). Existing rows hold no key (NULL), so memories already stored twice
    (before issue 15, or with ``on_duplicate="store"``) never make the index fail;
    the add still finds them by ``content_hash``. Each part checks what is there."""
    insp = inspect(conn)
    columns = {c["name"] for c in insp.get_columns("hm_memory_items")}
    if "version" not in columns:
        conn.execute(text("ALTER TABLE hm_memory_items ADD COLUMN version INTEGER "
                          "NOT NULL DEFAULT 1"))
    if "dedup_key" not in columns:
        conn.execute(text("ALTER TABLE hm_memory_items ADD COLUMN dedup_key VARCHAR(64)"))
    if "ux_items_ns_dedup_key" not in {i["name"] for i in insp.get_indexes("hm_memory_items")}:
        for index in MemoryRow.__table__.indexes:  # type: ignore[attr-defined]
            if index.name == "ux_items_ns_dedup_key":
                index.create(conn)


def _v7_to_v8(conn: Connection) -> None:
    """v8 (issue 27, the million-memory ingest): the fact-chain indexes the supersede
    rules read an add's window through (models.py): ``ix_items_ns_fact_key`` gains
    status, start and recorded time, and ``ix_items_ns_fact_valid_to`` is new. A start
    is never NULL (every write since v5 stores the event time there); rows that hold
    none get it here, since the window reads ``valid_from`` alone."""
    items = Base.metadata.tables[MemoryRow.__tablename__]
    conn.execute(update(items).where(items.c.valid_from.is_(None))
                 .values(valid_from=items.c.event_time))
    present = {i["name"] for i in inspect(conn).get_indexes("hm_memory_items")}
    if "ix_items_ns_fact_key" in present:
        conn.execute(text("DROP INDEX ix_items_ns_fact_key"))
    for index in items.indexes:
        if index.name in ("ix_items_ns_fact_key", "ix_items_ns_fact_valid_to"):
            index.create(conn, checkfirst=True)


def _v8_to_v9(conn: Connection) -> None:
    """v9 (issue 27, the search's kept values on PostgreSQL): each namespace's write
    generation, ``hm_namespace_totals.generation`` (models.NamespaceTotalsRow). A
    process of an older version would write without moving it, so it cannot open a v9
    database (a newer schema is refused)."""
    present = {c["name"] for c in inspect(conn).get_columns("hm_namespace_totals")}
    if "generation" not in present:  # v3 -> v4 made the table from today's model
        conn.execute(text("ALTER TABLE hm_namespace_totals "
                          "ADD COLUMN generation BIGINT NOT NULL DEFAULT 0"))
    # A namespace holding only inactive memories had no row: every namespace holding a
    # memory gets one, so that no row means no memory (MemoryRepository.generation).
    conn.execute(text(
        "INSERT INTO hm_namespace_totals (namespace, items, tokens, generation) "
        "SELECT DISTINCT namespace, 0, 0, 0 FROM hm_memory_items m WHERE NOT EXISTS "
        "(SELECT 1 FROM hm_namespace_totals t WHERE t.namespace = m.namespace)"))


# MIGRATIONS[n] upgrades a database at version n to n + 1.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3,
                                                       3: _v3_to_v4, 4: _v4_to_v5,
                                                       5: _v5_to_v6, 6: _v6_to_v7,
                                                       7: _v7_to_v8, 8: _v8_to_v9}


def read_version(conn: Connection) -> int | None:
    tables = set(inspect(conn).get_table_names())
    if SchemaMeta.__tablename__ not in tables:
        if MemoryRow.__tablename__ in tables:
            raise SchemaVersionError(
                "the database holds hello-memory tables but no schema version row; "
                "refusing to guess how to upgrade it"
            )
        return None
    value = conn.execute(select(SchemaMeta.value).where(SchemaMeta.key == VERSION_KEY)).scalar()
    if value is None:
        raise SchemaVersionError("hm_schema_meta has no schema_version row")
    return int(value)


def _backup_sqlite(engine: Engine, version: int) -> Path | None:
    db = engine.url.database
    if engine.url.get_backend_name() != "sqlite" or not db or db == ":memory:":
        return None
    src = Path(db)
    dst = src.with_name(f"{src.name}.v{version}.bak")
    with engine.connect() as conn:  # fold the WAL into the main file before copying
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy2(src, dst)
    return dst


# The key of the PostgreSQL advisory lock that migrate() holds ("hm_migra").
_MIGRATE_LOCK = 0x686D5F6D69677261


def migrate(engine: Engine) -> int:
    """Create the schema on an empty database or upgrade an older one; returns the
    version now in force. On PostgreSQL it all runs under an advisory lock: processes
    that open one database at the same time (several API workers: docs/SERVERS.md,
    "PostgreSQL", and docs/DEPLOY.md) take turns, and the later ones find the schema
    made."""
    if engine.dialect.name != "postgresql":
        return _migrate(engine)
    with engine.connect() as lock:
        lock.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _MIGRATE_LOCK})
        try:
            return _migrate(engine)
        finally:
            lock.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _MIGRATE_LOCK})


def _widen_integers(conn: Connection) -> None:
    """PostgreSQL: the columns the models declare BIGINT (models.BigInt) that are
    INTEGER in a database made before they were, with the sequences behind them."""
    insp = inspect(conn)
    present = set(insp.get_table_names())
    for table in Base.metadata.sorted_tables:
        if table.name not in present:
            continue
        have = {c["name"]: c["type"] for c in insp.get_columns(table.name)}
        for col in table.columns:
            if (col.name not in have or isinstance(have[col.name], BigInteger)
                    or not isinstance(col.type.dialect_impl(conn.dialect), BigInteger)):
                continue
            conn.execute(text(f"ALTER TABLE {table.name} ALTER COLUMN {col.name} TYPE BIGINT"))
            seq = conn.execute(text("SELECT pg_get_serial_sequence(:t, :c)"),
                               {"t": table.name, "c": col.name}).scalar()
            if seq:
                conn.execute(text(f"ALTER SEQUENCE {seq} AS BIGINT"))


def _migrate(engine: Engine) -> int:
    with engine.begin() as conn:
        version = read_version(conn)
        if version is None:
            Base.metadata.create_all(conn)
            conn.execute(
                insert(SchemaMeta).values(key=VERSION_KEY, value=str(SCHEMA_VERSION))
            )
            return SCHEMA_VERSION
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the record store is at schema version {version}, newer than the {SCHEMA_VERSION} "
            "this hello-memory understands; upgrade hello-memory"
        )
    upgraded = version < SCHEMA_VERSION
    if upgraded:
        backup = _backup_sqlite(engine, version)
        log.info("upgrading record store schema %d -> %d (backup: %s)",
                 version, SCHEMA_VERSION, backup)
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise SchemaVersionError(f"no migration from schema version {version}")
        with engine.begin() as conn:
            step(conn)
            version += 1
            conn.execute(
                update(SchemaMeta).where(SchemaMeta.key == VERSION_KEY).values(value=str(version))
            )
    # Tables added in later versions that a step did not create (idempotent).
    with engine.begin() as conn:
        Base.metadata.create_all(conn)
        if upgraded and conn.dialect.name == "postgresql":
            _widen_integers(conn)
    return version
