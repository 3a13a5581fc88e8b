"""Schema v6 (issue 16): the one outbox. A v5 database (``hm_outbox`` of memories with
``memory_id``, ``hm_rag_outbox`` of chunks) is upgraded in place on SQLite and on
PostgreSQL: the pending rows of both tables end up in ``hm_outbox`` keyed by kind
(memory, media, chunk) and item id, applied rows stay applied, and ``hm_rag_outbox``
is gone."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import create_engine, inspect, text

from hello_memory.stores.records import SCHEMA_VERSION, RecordStore
from hello_memory.types import MemoryItem, MemoryType, Modality

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)

# v6 back to v5, on either database
_TO_V5 = [
    "DROP INDEX ix_outbox_item",
    "ALTER TABLE hm_outbox DROP COLUMN kind",
    "ALTER TABLE hm_outbox RENAME COLUMN item_id TO memory_id",
    "CREATE TABLE hm_rag_outbox (seq INTEGER PRIMARY KEY, op VARCHAR(16), "
    "namespace VARCHAR(255), chunk_id VARCHAR(36), created_at TIMESTAMP WITH TIME ZONE, "
    "applied_at TIMESTAMP WITH TIME ZONE)",
    "UPDATE hm_schema_meta SET value = '5' WHERE key = 'schema_version'",
]
GONE = "99999999-9999-9999-9999-999999999999"


def _v5_database(url: str) -> tuple[MemoryItem, MemoryItem]:
    store = RecordStore(url)
    store.open()
    text_item = MemoryItem(content="Alice moved to Lisbon", namespace="n",
                           memory_type=MemoryType.SEMANTIC)
    media = MemoryItem(content="a photo of the harbour", namespace="n",
                       memory_type=MemoryType.PERCEPTUAL, modality=Modality.IMAGE)
    store.memories.add_items([text_item, media])
    store.close()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM hm_outbox"))
        for stmt in _TO_V5:
            conn.execute(text(stmt))
        rows = [("upsert", text_item.id, None), ("payload", media.id, None),
                ("delete", GONE, None), ("upsert", text_item.id, T0)]
        for op, mid, applied in rows:  # seqs from the table's own sequence
            conn.execute(text("INSERT INTO hm_outbox (op, namespace, memory_id, "
                              "created_at, applied_at) VALUES (:o, 'n', :m, :c, :a)"),
                         {"o": op, "m": mid, "c": T0, "a": applied})
        for seq, op, cid, applied in [(1, "upsert", "c-pending", None),
                                      (2, "delete", "c-applied", T0)]:
            conn.execute(text("INSERT INTO hm_rag_outbox (seq, op, namespace, chunk_id, "
                              "created_at, applied_at) VALUES (:s, :o, 'kb', :i, :c, :a)"),
                         {"s": seq, "o": op, "i": cid, "c": T0, "a": applied})
    engine.dispose()
    return text_item, media


def test_v5_outboxes_become_one_outbox_keyed_by_kind(records_url: str) -> None:
    text_item, media = _v5_database(records_url)
    store = RecordStore(records_url)  # migrates
    store.open()
    try:
        pending = {(e.kind, e.op, e.namespace, e.item_id)
                   for e in store.outbox.pending_outbox()}
        assert pending == {("memory", "upsert", "n", text_item.id),
                           ("media", "payload", "n", media.id),
                           # a delete of a memory already gone: its type is not known
                           ("memory", "delete", "n", GONE), ("media", "delete", "n", GONE),
                           ("chunk", "upsert", "kb", "c-pending")}
        assert [e.item_id for e in store.outbox.pending_outbox(kinds=["chunk"])] == [
            "c-pending"]
        tables = set(inspect(store.engine).get_table_names())
        assert "hm_rag_outbox" not in tables
        with store.engine.connect() as conn:
            version = conn.execute(text("SELECT value FROM hm_schema_meta WHERE "
                                        "key = 'schema_version'")).scalar()
            applied = conn.execute(text("SELECT count(*) FROM hm_outbox WHERE "
                                        "applied_at IS NOT NULL")).scalar()
        assert int(version) == SCHEMA_VERSION >= 6
        assert applied == 1  # history kept; the chunk outbox's applied rows are dropped
        # and new writes queue into the one outbox, with fresh seqs
        rows = store.memories.add_items([MemoryItem(content="Bob keeps bees", namespace="n")])
        assert [e.kind for e in store.outbox.entries([r.seq for r in rows])] == ["memory"]
    finally:
        store.close()
