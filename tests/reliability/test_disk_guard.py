"""One disk guard for every write route and job (issue 28, item 4; docs/RELIABILITY.md
"Disk space", hello_memory/stores/disk.py).

As in ``test_hostile_http.py``, a threshold above the disk's real free space stands in
for a full disk (nothing is filled). In-process, the floor is raised on open stores
(the disk filling while they run): every write path, and the record store itself when
a write goes around them (a new route that forgot the check), refuses with
``InsufficientStorageError`` and writes nothing; reads and deletes go on. Over HTTP, a
live ``serve`` answers 507 to the document routes (text, paths, upload), consolidation
and every writing job, writes nothing, and stays up.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from hello_memory.config import load_settings
from hello_memory.errors import InsufficientStorageError
from hello_memory.interfaces.jobs import run_job, run_optimize
from hello_memory.memory.manager import MemoryManager
from hello_memory.rag.pipeline import RAGPipeline
from hello_memory.stores.records import ItemFilter
from hello_memory.stores.records.documents import ChunkRecord, DocumentRecord
from hello_memory.stores.records.models import OutboxRow
from hello_memory.types import MemoryItem, MemoryType, Modality, utcnow
from hello_memory.validation import content_hash, validate_item

from .live_server import LiveServer

FULL = 1 << 60  # more free bytes than any disk has
NS = "disk"


def counts(mm: MemoryManager) -> dict[str, int]:
    """Records, documents, chunks and outbox rows (applied or not): what a write would
    change."""
    records = mm.stores.records
    docs = records.documents.document_stats(NS)
    with records.transaction() as s:
        outbox = int(s.scalar(select(func.count()).select_from(OutboxRow)) or 0)
    return {"memories": len(records.memories.list_items(NS, ItemFilter())),
            "documents": docs["documents"], "chunks": docs["chunks"], "outbox": outbox}


@pytest.fixture
def full(tmp_path: Path, embedder: Any) -> Iterator[tuple[MemoryManager, RAGPipeline]]:
    """A manager and a RAG pipeline with something stored, then the disk "fills"."""
    settings = load_settings(environ={}, data_dir=tmp_path / "data",
                             semantic={"extractor": "rules"})
    mm = MemoryManager.open(settings, embedder=embedder)
    rag = RAGPipeline.from_manager(mm)
    for text in ("Ada Lovelace wrote the first program in 1843.",
                 "Ada Lovelace published the first algorithm for a machine in 1843."):
        mm.add(text, "episodic", 0.9, namespace=NS)
    rag.add_text("# Guide\n\nVisitors park on level -2.", namespace=NS, source="guide")
    mm.stores.guard_disk(settings.data_dir, FULL)
    try:
        yield mm, rag
    finally:
        mm.close()


def test_every_write_path_is_refused_under_the_floor(full: tuple[MemoryManager, RAGPipeline],
                                                     tmp_path: Path) -> None:
    mm, rag = full
    before = counts(mm)
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nThe harbour office opens at nine.\n")
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"role": "user", "content": "hello", "timestamp": 1}) + "\n")
    from hello_memory.interfaces.chat_import import import_chats

    refused = {
        "add": lambda: mm.add("one more", "episodic", namespace=NS),
        "document text": lambda: rag.add_text("# New\n\ntext", namespace=NS, source="new"),
        "document paths": lambda: rag.ingest([note], namespace=NS),
        "chat import": lambda: import_chats(mm, chats, "jsonl", namespace=NS),
        "consolidate": lambda: mm.consolidate(namespace=NS, importance_threshold=0.0,
                                              min_access_count=0),
        "job consolidate": lambda: run_job(mm, "consolidate", namespace=NS),
        "job reindex": lambda: run_job(mm, "reindex", namespace=NS),
        "job reconcile": lambda: run_job(mm, "reconcile", namespace=NS),
        "optimize": lambda: run_optimize(mm),
        "optimize from Python": lambda: mm.optimize(),
    }
    for name, write in refused.items():
        with pytest.raises(InsufficientStorageError, match="storage.min_free_bytes"):
            write()
        assert counts(mm) == before, name
    # reads go on
    assert "Ada" in mm.search("who wrote the first program", namespace=NS)[0].item.content
    assert rag.search("where do visitors park", namespace=NS)


def test_the_record_store_refuses_index_work_a_route_forgot_to_check(
        full: tuple[MemoryManager, RAGPipeline]) -> None:
    """Writes that go around every check above, straight to the repositories (what a
    new route would do): memories, media and document chunks all queue index work, and
    the record store refuses it in the same transaction."""
    mm, rag = full
    before = counts(mm)
    records = mm.stores.records
    memory = validate_item(MemoryItem(content="written around the checks", namespace=NS,
                                      memory_type=MemoryType.EPISODIC))
    media = validate_item(MemoryItem(content="a photo of the harbour", namespace=NS,
                                     memory_type=MemoryType.PERCEPTUAL,
                                     modality=Modality.IMAGE,
                                     metadata={"source": "/nowhere/harbour.jpg"}))
    doc = DocumentRecord(id="4f9c1b7e-0000-4000-8000-000000000001", namespace=NS,
                         source_path="around", content_hash=content_hash("x"),
                         ingested_at=utcnow())
    chunk = ChunkRecord(id="4f9c1b7e-0000-4000-8000-000000000002", document_id=doc.id,
                        namespace=NS, ordinal=0, content="x", content_hash=content_hash("x"),
                        heading_path="", start=0, end=1, token_count=1)
    for name, write in {
        "memory record": lambda: records.memories.add_items([memory]),
        "media record": lambda: records.memories.add_items([media]),
        "document chunks": lambda: records.documents.replace_document(doc, [chunk]),
        "chunk index": lambda: rag.index.write(doc, [chunk], rag.index.embed([chunk])),
        "requeue": lambda: mm.stores.records.outbox.enqueue(
            "memory", "upsert", NS, [i.id for i in records.memories.list_items(
                NS, ItemFilter())]),
    }.items():
        with pytest.raises(InsufficientStorageError):
            write()
        assert counts(mm) == before, name


def test_deletes_go_on_and_writes_come_back_with_space(
        full: tuple[MemoryManager, RAGPipeline], tmp_path: Path) -> None:
    mm, rag = full
    ids = [i.id for i in mm.stores.records.memories.list_items(NS, ItemFilter())]
    assert mm.remove(ids[0], namespace=NS)  # how space is freed
    assert rag.delete_document("guide", namespace=NS) > 0
    assert counts(mm)["memories"] == 1
    mm.stores.guard_disk(tmp_path / "data", 0)  # space is back
    mm.add("after the disk was freed", "episodic", namespace=NS)
    rag.add_text("# Back\n\nwritable again", namespace=NS, source="back")
    assert counts(mm)["memories"] == 2 and counts(mm)["documents"] == 1


# --- over HTTP: a live serve ------------------------------------------------------------
@pytest.mark.slow
def test_every_write_route_is_507_and_the_server_stays_up(tmp_path: Path) -> None:
    readable = tmp_path / "readable"
    readable.mkdir()
    (readable / "note.md").write_text("# Note\n\nThe harbour office opens at nine.\n")
    srv = LiveServer(tmp_path / "data", env={
        "HELLO_MEMORY__API__READ_DIRS": json.dumps([str(readable)]),
        "HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules"})
    params = {"namespace": NS}
    try:
        srv.start()
        with srv.client() as c:  # something to protect
            for text in ("Ada Lovelace wrote the first program in 1843.",
                         "Ada Lovelace published the first algorithm in 1843."):
                assert c.post("/v1/memories", params=params, json={
                    "content": text, "importance": 0.9}).status_code == 201
        srv.start(HELLO_MEMORY__STORAGE__MIN_FREE_BYTES=str(FULL))  # the disk is "full"
        with srv.client() as c:
            before = srv.store_hash()
            routes = [
                ("POST", "/v1/documents/text", {"json": {"text": "# T\n\nnew text",
                                                         "source": "t"}}),
                ("POST", "/v1/documents/paths",
                 {"json": {"paths": [str(readable / "note.md")]}}),
                ("POST", "/v1/documents", {"files": [("files", ("n.md", b"# N\n\nx",
                                                                "text/markdown"))]}),
                ("POST", "/v1/memories", {"json": {"content": "one more"}}),
                ("POST", "/v1/consolidate", {"json": {"importance_threshold": 0,
                                                      "min_access_count": 0}}),
                ("POST", "/v1/jobs/consolidate", {"json": {"namespace": [NS]}}),
                ("POST", "/v1/jobs/reindex", {"json": {"namespace": [NS]}}),
                ("POST", "/v1/jobs/reconcile", {"json": {"namespace": [NS]}}),
                ("POST", "/v1/jobs/optimize", {}),
            ]
            for method, path, kwargs in routes:
                query = {} if path.startswith("/v1/jobs/") else params
                r = c.request(method, path, params=query, **kwargs)
                assert r.status_code == 507, (path, r.status_code, r.text)
                assert r.headers["content-type"].startswith("application/problem+json")
                assert r.json()["type"].endswith("insufficient-storage"), r.text
                assert srv.store_hash() == before, path
            # the server stays up, reads go on
            assert c.get("/healthz").json()["status"] == "ok"
            hits = c.post("/v1/search", params=params, json={"query": "Ada"}).json()["hits"]
            assert hits and "Ada" in hits[0]["content"]
        assert srv.alive()
    finally:
        srv.stop()
