"""The record store's repositories, one aggregate each (stores/records/): documents
and chunks, the outbox, the audit log, and the one transaction a memory write spans
across them (ARCHITECTURE decision 1). The memory repository's reads and writes are
tested in test_record_store.py, the chunk outbox in tests/rag/. Every test runs on
SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from sqlalchemy import text

from hello_memory.errors import (
    InvalidInputError,
    NamespaceRequiredError,
    NotFoundError,
    RecordStoreError,
)
from hello_memory.stores.records import ChunkRecord, DocumentRecord, ItemFilter, RecordStore
from hello_memory.stores.records.models import OutboxRow
from hello_memory.types import MemoryItem, MemoryType

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def store(records_url: str) -> Iterator[RecordStore]:
    s = RecordStore(records_url)
    s.open()
    yield s
    s.close()


def _doc(n: int, ns: str = "kb", path: str | None = None) -> DocumentRecord:
    return DocumentRecord(id=f"00000000-0000-4000-8000-{n:012d}", namespace=ns,
                          source_path=path or f"/docs/{n}.md", content_hash="h" * 64,
                          ingested_at=T0)


def _chunks(doc: DocumentRecord, *texts: str, first: int = 0) -> list[ChunkRecord]:
    return [ChunkRecord(id=f"00000000-0000-4000-9{doc.id[-3:]}-{first + k:012d}",
                        document_id=doc.id, namespace=doc.namespace, ordinal=k, content=t,
                        content_hash=str(k) * 64, heading_path="H", start=0, end=len(t),
                        token_count=len(t.split()))
            for k, t in enumerate(texts)]


def test_documents_and_chunks(store: RecordStore) -> None:
    docs = store.documents
    a, b = _doc(1), _doc(2)
    ca, cb = _chunks(a, "alpha one", "alpha two"), _chunks(b, "beta")
    docs.replace_document(a, ca)
    docs.replace_document(b, cb)
    # by id, in the order asked, each with its document's path; unknown ids left out
    got = docs.get_chunks("kb", [cb[0].id, "missing", ca[1].id])
    assert [(c.content, c.source_path) for c in got] == [("beta", b.source_path),
                                                         ("alpha two", a.source_path)]
    assert docs.get_chunks("other", [ca[0].id]) == [] and docs.get_chunks("kb", []) == []
    assert [c.ordinal for c in docs.document_chunks("kb", a.id)] == [0, 1]
    assert docs.document_stats("kb") == {"documents": 2, "chunks": 3, "tokens": 5}
    assert docs.all_chunk_ids("kb") == {c.id for c in ca + cb}
    # a new version replaces every chunk and says which went
    seqs, old = docs.replace_document(a, _chunks(a, "alpha again", first=7))
    assert sorted(old) == sorted(c.id for c in ca) and len(seqs) == 3
    assert [c.content for c in docs.document_chunks("kb", a.id)] == ["alpha again"]
    with pytest.raises(InvalidInputError, match="already document"):
        docs.replace_document(_doc(3, path=a.source_path), [])
    assert docs.delete_documents("kb", [a.id, b.id]) == (2, 2)
    assert docs.list_documents("kb") == [] and docs.all_chunk_ids("kb") == set()


def test_outbox_reads_in_write_order_and_marks(store: RecordStore) -> None:
    items = [MemoryItem(namespace="ns1", content=f"memory {n}", event_time=T0)
             for n in range(3)]
    rows = store.memories.add_items(items)
    assert [(r.op, r.kind, r.memory_id) for r in rows] == [("add", "memory", i.id) for i in items]
    seqs = [r.seq for r in rows]
    assert [e.memory_id for e in store.outbox.pending_outbox()] == [i.id for i in items]
    assert [e.seq for e in store.outbox.pending_outbox(after=seqs[0])] == seqs[1:]
    assert [e.seq for e in store.outbox.pending_outbox(limit=1)] == seqs[:1]
    assert store.memories.gauges()["memories"] == {(MemoryType.EPISODIC.value, "active"): 3}
    store.outbox.mark_applied(seqs[:2])
    store.outbox.mark_applied([])
    assert [e.seq for e in store.outbox.pending_outbox()] == seqs[2:]


def test_audit_is_per_namespace_newest_first(store: RecordStore) -> None:
    for n in range(3):
        store.audit.add("ns1", "forget", {"n": n})
    store.audit.add("ns2", "consolidate", {})
    assert [r["details"]["n"] for r in store.audit.list("ns1")] == [2, 1, 0]
    assert [r["details"]["n"] for r in store.audit.list("ns1", limit=2)] == [2, 1]
    assert [r["action"] for r in store.audit.list("ns2")] == ["consolidate"]
    with pytest.raises(NamespaceRequiredError):
        store.audit.add("", "forget", {})
    with pytest.raises(NamespaceRequiredError):
        store.audit.list("")


def test_a_memory_write_and_its_outbox_rows_commit_together(store: RecordStore) -> None:
    """The memory repository writes its rows, mentioned times and totals, then the
    outbox repository its rows, in ONE transaction: when the outbox cannot be written
    (its table moved away out of band) nothing of the write stays."""
    kept = MemoryItem(namespace="ns1", content="Kept from yesterday on.", event_time=T0)
    store.memories.add_items([kept])
    before = (store.memories.namespace_totals("ns1"), store.outbox.pending_outbox())
    table = OutboxRow.__tablename__
    with store.engine.begin() as conn:
        conn.execute(text(f"ALTER TABLE {table} RENAME TO {table}_away"))
    new = MemoryItem(namespace="ns1", content="Written yesterday, lost today.", event_time=T0)
    try:
        with pytest.raises(RecordStoreError):
            store.memories.add_items([new])
        with pytest.raises(RecordStoreError):
            store.memories.update_item("ns1", kept.id, content="A much longer text than before.")
        with pytest.raises(RecordStoreError):
            store.memories.delete_items("ns1", [kept.id])
    finally:
        with store.engine.begin() as conn:
            conn.execute(text(f"ALTER TABLE {table}_away RENAME TO {table}"))
    assert [i.id for i in store.memories.list_items("ns1", ItemFilter(status=None))] == [kept.id]
    assert store.memories.get_item("ns1", kept.id).content == kept.content
    assert store.memories.with_mentioned_times("ns1", [kept.id, new.id]) == {kept.id}
    assert (store.memories.namespace_totals("ns1"), store.outbox.pending_outbox()) == before


def test_an_update_racing_a_delete_is_not_found_and_writes_nothing(store: RecordStore) -> None:
    # Another writer deletes the row after this update read it and before its UPDATE
    # runs (seen under 8 concurrent HTTP clients, tests/reliability/test_drift.py): the
    # update matches no row. The caller gets NotFoundError (REST 404), not a
    # RecordStoreError (500), and the update leaves nothing behind.
    from sqlalchemy import event

    item = MemoryItem(content="Alice lives in Lisbon", memory_type=MemoryType.EPISODIC,
                      namespace="race", event_time=T0)
    store.memories.add_items([item])
    armed = [True]

    def delete_first(conn: object, cursor: object, statement: str, *_: object) -> None:
        if armed and statement.lstrip().upper().startswith("UPDATE HM_MEMORY_ITEMS"):
            armed.clear()
            store.memories.delete_items("race", [item.id])  # its own connection

    event.listen(store.engine, "before_cursor_execute", delete_first)
    try:
        with pytest.raises(NotFoundError, match="deleted while it was being updated"):
            store.memories.update_item("race", item.id, importance=0.9)
    finally:
        event.remove(store.engine, "before_cursor_execute", delete_first)
    assert not armed  # the race really ran
    assert store.memories.get_items("race", [item.id]) == []
    assert store.memories.namespace_totals("race") == (0, 0)
