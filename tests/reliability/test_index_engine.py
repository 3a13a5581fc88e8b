"""The one index-maintenance engine (issue 16), for each kind of indexed thing: memory
(the memories collection and the graph), media (perceptual memory's collections) and
chunk (RAG document chunks).

* A crash between the commit and the apply (the records and their outbox rows
  committed, nothing applied: what a SIGKILL there leaves) leaves pending rows that
  the next open replays.
* A failing row is isolated: the vector store refuses one item's vector (a vector of
  the wrong size, a real backend refusal), the others of the same apply still land,
  the failing one stays pending and is reported, and a later replay (which embeds
  from the record) applies it.
* Converging, not replaying: an old row applied after the record changed or went
  writes the record's current state.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hello_memory.memory.manager import MemoryManager
from hello_memory.memory.perceptual import COLLECTIONS
from hello_memory.rag.indexing import CHUNK_COLLECTION, embedding_text
from hello_memory.rag.pipeline import RAGPipeline
from hello_memory.stores.bundle import MEMORY_COLLECTION
from hello_memory.stores.records.documents import ChunkRecord, DocumentRecord
from hello_memory.types import MemoryItem, MemoryType, Modality

from .support import make_manager

pytestmark = pytest.mark.slow

NOW = datetime(2025, 3, 1, tzinfo=timezone.utc)
TEXT = COLLECTIONS[Modality.TEXT]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "d"


def _open(data: Path, embedder: Any) -> MemoryManager:
    # perceptual memory on: its text modality runs on the text embedder in the main venv
    return make_manager(data, embedder, perceptual={"enabled": True})


@pytest.fixture
def mm(data: Path, embedder: Any) -> Iterator[MemoryManager]:
    m = _open(data, embedder)
    yield m
    m.close()


def _memory(content: str, ns: str = "e", **kw: Any) -> MemoryItem:
    return MemoryItem(content=content, namespace=ns, memory_type=kw.pop("memory_type",
                                                                        MemoryType.SEMANTIC),
                      **kw)


def _media(content: str, ns: str = "e") -> MemoryItem:
    return MemoryItem(content=content, namespace=ns, memory_type=MemoryType.PERCEPTUAL,
                      modality=Modality.TEXT)


def _document(ns: str, texts: list[str]) -> tuple[DocumentRecord, list[ChunkRecord]]:
    doc = DocumentRecord(id=str(uuid.uuid4()), namespace=ns, source_path=f"/kb/{uuid.uuid4()}.md",
                         content_hash="h" * 64, ingested_at=NOW)
    chunks = [ChunkRecord(id=str(uuid.uuid4()), document_id=doc.id, namespace=ns, ordinal=k,
                          content=t, content_hash=f"{k:064d}", heading_path="", start=0,
                          end=len(t), token_count=len(t.split()), source_path=doc.source_path)
              for k, t in enumerate(texts)]
    return doc, chunks


def _pending(mm: MemoryManager, kind: str) -> list[str]:
    return [e.item_id for e in mm.stores.records.outbox.pending_outbox(kinds=[kind])]


# --- a crash between the commit and the apply -------------------------------------------
def test_memory_rows_left_by_a_crash_are_replayed_at_open(data: Path, embedder: Any) -> None:
    mm = _open(data, embedder)
    [item] = [_memory("Alice moved to Lisbon with Bob")]
    mm.stores.records.memories.add_items([item])  # committed; the kill lands here
    assert _pending(mm, "memory") == [item.id]
    mm.close()
    mm = _open(data, embedder)
    try:
        assert _pending(mm, "memory") == []
        assert mm.stores.vectors.ids(MEMORY_COLLECTION, namespace="e") == {item.id}
        assert mm.stores.graph.memory_ids("e") == {item.id}
    finally:
        mm.close()


def test_media_rows_left_by_a_crash_are_replayed_at_open(data: Path, embedder: Any) -> None:
    mm = _open(data, embedder)
    item = _media("a photo of the harbour at dawn")
    mm.stores.records.memories.add_items([item])
    assert _pending(mm, "media") == [item.id]
    mm.close()
    mm = _open(data, embedder)
    try:
        assert _pending(mm, "media") == []
        assert mm.stores.vectors.ids(TEXT, namespace="e") == {item.id}
        assert mm.stores.vectors.ids(MEMORY_COLLECTION, namespace="e") == set()
        [hit] = mm.perceptual.retrieve("e", "harbour at dawn", top_k=1)
        assert hit.item.id == item.id
    finally:
        mm.close()


def test_chunk_rows_left_by_a_crash_are_replayed_at_open(data: Path, embedder: Any) -> None:
    mm = _open(data, embedder)
    doc, chunks = _document("kb", ["the boiler is serviced in May", "the roof was fixed"])
    mm.stores.records.documents.replace_document(doc, chunks)
    assert sorted(_pending(mm, "chunk")) == sorted(c.id for c in chunks)
    mm.close()
    mm = _open(data, embedder)
    try:
        RAGPipeline.from_manager(mm)  # the chunk kind's indexer: registered, replayed
        assert _pending(mm, "chunk") == []
        assert mm.stores.vectors.ids(CHUNK_COLLECTION, namespace="kb") == {c.id for c in chunks}
        assert mm.reconcile(dry_run=True).changed == 0
    finally:
        mm.close()


# --- a failing row is isolated ------------------------------------------------------------
def _bad(mm: MemoryManager) -> np.ndarray:
    """A vector the vector store refuses (the wrong size for the collection)."""
    return np.zeros(mm.stores.embedder.dimension + 3, dtype=np.float32)


def test_a_failing_memory_row_is_isolated(mm: MemoryManager) -> None:
    items = [_memory(c) for c in ("Alice met Bob in Paris", "Carol keeps bees in Oslo",
                                  "Dave sails on Lake Geneva")]
    good = mm.stores.embedder.embed([i.content for i in items])
    seqs = [r.seq for r in mm.stores.records.memories.add_items(items)]
    prepared = {i.id: (i.content, v) for i, v in zip(items, good, strict=True)}
    prepared[items[1].id] = (items[1].content, _bad(mm))
    result = mm.stores.engine.apply(seqs, prepared)
    assert set(result.failed) == {items[1].id} and result.applied == 2
    assert mm.stores.vectors.ids(MEMORY_COLLECTION, namespace="e") == {items[0].id, items[2].id}
    assert _pending(mm, "memory") == [items[1].id]
    report = mm.reconcile(dry_run=True)
    assert [f["memory_id"] for f in report.index_failures] == [items[1].id]
    assert report.outbox_replayed == 1
    mm.reconcile()  # the backlog replay embeds from the record: it applies now
    assert _pending(mm, "memory") == []
    assert mm.stores.vectors.ids(MEMORY_COLLECTION, namespace="e") == {i.id for i in items}
    assert mm.reconcile(dry_run=True).changed == 0


def test_a_failing_media_row_is_isolated(mm: MemoryManager) -> None:
    items = [_media(c) for c in ("a red kite over the dunes", "rain on a tin roof")]
    good = mm.stores.embedder.embed([i.content for i in items])
    seqs = [r.seq for r in mm.stores.records.memories.add_items(items)]
    result = mm.stores.engine.apply(seqs, {items[0].id: (items[0].content, _bad(mm)),
                                           items[1].id: (items[1].content, good[1])})
    assert set(result.failed) == {items[0].id}
    assert mm.stores.vectors.ids(TEXT, namespace="e") == {items[1].id}
    assert _pending(mm, "media") == [items[0].id]
    assert [f["kind"] for f in mm.reconcile(dry_run=True).index_failures] == ["media"]
    assert mm.stores.apply_outbox() == 1
    assert mm.stores.vectors.ids(TEXT, namespace="e") == {i.id for i in items}


def test_a_failing_chunk_row_is_isolated(mm: MemoryManager) -> None:
    rag = RAGPipeline.from_manager(mm)
    doc, chunks = _document("kb", ["the boiler is serviced in May", "the roof was fixed",
                                   "the garden tap leaks"])
    seqs, _ = mm.stores.records.documents.replace_document(doc, chunks)
    vectors = rag.index.embed(chunks)
    prepared = {c.id: (embedding_text(c), v) for c, v in zip(chunks, vectors, strict=True)}
    prepared[chunks[2].id] = (embedding_text(chunks[2]), _bad(mm))
    result = mm.stores.engine.apply(seqs, prepared)
    assert set(result.failed) == {chunks[2].id}
    assert mm.stores.vectors.ids(CHUNK_COLLECTION, namespace="kb") == {chunks[0].id,
                                                                     chunks[1].id}
    assert _pending(mm, "chunk") == [chunks[2].id]
    assert mm.stores.apply_outbox() == 1
    assert mm.stores.vectors.ids(CHUNK_COLLECTION, namespace="kb") == {c.id for c in chunks}


# --- converging, not replaying -------------------------------------------------------------
def test_an_old_row_applied_late_writes_the_current_state(mm: MemoryManager) -> None:
    """The add's row is applied only after an update and then a delete committed (what
    a thread that lost the race does): it must not bring back the old vector."""
    [kept, gone] = [_memory("Erin plays the cello"), _memory("Frank runs in Berlin")]
    seqs = [r.seq for r in mm.stores.records.memories.add_items([kept, gone])]
    mm.stores.records.memories.update_queued("e", kept.id, content="Erin plays the violin",
                                             importance=0.9)
    mm.stores.records.memories.delete_queued("e", [gone.id])
    mm.stores.engine.apply(seqs[:2])  # the two add rows only, with the records moved on
    assert mm.stores.vectors.ids(MEMORY_COLLECTION, namespace="e") == {kept.id}
    [point] = mm.stores.vectors.retrieve(MEMORY_COLLECTION, [kept.id], namespace="e")
    assert point.payload["importance"] == pytest.approx(0.9)
    assert mm.stores.graph.memory_ids("e") == {kept.id}
    mm.stores.apply_outbox()
    hits = mm.search("who plays the violin", namespace="e", top_k=1)
    assert [h.id for h in hits] == [kept.id]
    assert mm.reconcile(dry_run=True).changed == 0


def test_a_type_change_re_derives_the_graph_links(mm: MemoryManager) -> None:
    """Only semantic memories feed the graph: a semantic memory made episodic loses its
    links (the row is an "upsert", not a payload rewrite), and made semantic again
    gets them back."""
    item = mm.add("Grace met Heidi in Prague", "semantic", namespace="e")
    assert mm.stores.graph.memory_ids("e") == {item.id}
    mm.stores.update("e", item.id, memory_type=MemoryType.EPISODIC)
    assert mm.stores.graph.memory_ids("e") == set()
    mm.stores.update_many("e", [item.id], memory_type=MemoryType.SEMANTIC, importance=0.8)
    assert mm.stores.graph.memory_ids("e") == {item.id}
    assert mm.stores.records.outbox.pending_outbox() == []
    assert mm.reconcile(dry_run=True).changed == 0
