"""Schema v3 (the chunk outbox, one kind of the one outbox since v6): created fresh and
upgraded from v2 with data kept."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from hello_memory.stores.records import SCHEMA_VERSION, RecordStore
from hello_memory.stores.records.documents import ChunkRecord, DocumentRecord

NOW = datetime(2024, 1, 1, tzinfo=timezone.utc)
V5_UNDO = """
DROP INDEX ix_items_ns_fact_key;
DROP INDEX IF EXISTS ix_items_ns_fact_valid_to;
ALTER TABLE hm_memory_items DROP COLUMN fact_key;
ALTER TABLE hm_memory_items DROP COLUMN valid_from;
ALTER TABLE hm_memory_items DROP COLUMN valid_to;
ALTER TABLE hm_memory_items DROP COLUMN superseded_by;
DROP TABLE IF EXISTS hm_memory_times;
"""
V4_UNDO = V5_UNDO + """
DROP INDEX ix_items_ns_topic; DROP INDEX ix_items_ns_type_importance;
ALTER TABLE hm_memory_items DROP COLUMN topic; ALTER TABLE hm_memory_items DROP COLUMN tokens;
DROP TABLE hm_namespace_totals;
"""


def _doc(ns: str = "kb") -> tuple[DocumentRecord, list[ChunkRecord]]:
    doc = DocumentRecord(id="11111111-1111-1111-1111-111111111111", namespace=ns,
                         source_path="/docs/a.md", content_hash="h" * 64, ingested_at=NOW)
    chunk = ChunkRecord(id="22222222-2222-2222-2222-222222222222", document_id=doc.id,
                        namespace=ns, ordinal=0, content="alpha", content_hash="c" * 64,
                        heading_path="A", start=0, end=5, token_count=1)
    return doc, [chunk]


def test_upgrade_from_v2_adds_the_chunk_outbox_and_keeps_documents(tmp_path: Path) -> None:
    db = tmp_path / "records.db"
    store = RecordStore(f"sqlite:///{db}")
    store.open()
    doc, chunks = _doc()
    store.documents.replace_document(doc, chunks)
    store.close()
    # Turn it back into a v2 database: no chunk outbox, version row 2 (and none of
    # v4's columns, indexes and totals table; v6's outbox columns are kept: its step
    # upgrades what it finds).
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE IF EXISTS hm_rag_outbox")
    conn.execute("DELETE FROM hm_outbox WHERE kind = 'chunk'")
    conn.executescript(V4_UNDO)
    conn.execute("UPDATE hm_schema_meta SET value='2' WHERE key='schema_version'")
    conn.commit()
    conn.close()

    store = RecordStore(f"sqlite:///{db}")
    store.open()
    try:
        assert SCHEMA_VERSION >= 3
        assert (tmp_path / "records.db.v2.bak").exists()
        assert [c.content for c in store.documents.document_chunks("kb", doc.id)] == ["alpha"]
        chunk_rows = store.outbox.pending_outbox(kinds=["chunk"])
        assert chunk_rows == []  # the chunk rows' outbox is there, and empty
        store.documents.replace_document(doc, [])
        assert [e.op for e in store.outbox.pending_outbox(kinds=["chunk"])] == ["delete"]
    finally:
        store.close()
    version = sqlite3.connect(db).execute(
        "SELECT value FROM hm_schema_meta WHERE key='schema_version'").fetchone()[0]
    assert int(version) == SCHEMA_VERSION


def test_replace_document_is_one_transaction_scoped_to_its_namespace(records_url: str) -> None:
    store = RecordStore(records_url)  # SQLite and PostgreSQL
    store.open()
    try:
        doc, chunks = _doc("kb")
        seqs, old = store.documents.replace_document(doc, chunks)
        assert len(seqs) == 1 and old == []
        assert store.documents.find_document("other", doc.id) is None
        by_path = store.documents.find_document("kb", "/docs/a.md")
        assert by_path == store.documents.find_document("kb", doc.id)
        # A chunk of another document in the batch: refused, nothing written.
        bad = ChunkRecord(**{**chunks[0].__dict__, "id": "33333333-3333-3333-3333-333333333333",
                             "document_id": "44444444-4444-4444-4444-444444444444"})
        try:
            store.documents.replace_document(doc, [bad])
        except ValueError:
            pass
        else:
            raise AssertionError("expected InvalidInputError")
        assert [c.id for c in store.documents.document_chunks("kb", doc.id)] == [chunks[0].id]
        assert store.documents.delete_documents("other", [doc.id]) == (0, 0)
        assert store.documents.delete_documents("kb", [doc.id]) == (1, 1)
        assert store.documents.document_stats("kb") == {"documents": 0, "chunks": 0, "tokens": 0}
    finally:
        store.close()
