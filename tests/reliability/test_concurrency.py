"""Threads on one manager lose nothing (records in SQLite and in PostgreSQL); a second
process on the same embedded directory gets a clear, immediate error (one writer
process per directory); several managers over one PostgreSQL record database (the
scale-out of README "Servers") lose and duplicate nothing."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.bundle import MEMORY_COLLECTION

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def embedder():
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def test_threads_adding_and_searching_lose_no_write(tmp_path: Path, embedder,
                                                   records_url: str) -> None:
    settings = load_settings(environ={}, data_dir=tmp_path, records={"url": records_url})
    mm = MemoryManager(open_stores(settings, embedder=embedder))
    errors: list[BaseException] = []
    added: list[str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        try:
            for i in range(15):
                item = mm.add(f"thread {n} note {i} about topic {i % 4}",
                              "semantic" if i % 3 == 0 else "episodic", namespace="t")
                with lock:
                    added.append(item.id)
                mm.search(f"topic {i % 4}", namespace="t")
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(added) == 60
    st = mm.stats("t")
    assert st["by_type"]["episodic"] + st["by_type"]["semantic"] == 60
    assert mm.stores.vectors.count(MEMORY_COLLECTION, namespace="t") == 60
    assert mm.stores.records.outbox.pending_outbox() == []
    mm.close()


def test_second_process_on_same_directory_fails_clearly(tmp_path: Path, embedder) -> None:
    settings = load_settings(environ={}, data_dir=tmp_path)
    stores = open_stores(settings, embedder=embedder)
    code = (
        "import sys\n"
        "from hello_memory.config import load_settings\n"
        "from hello_memory.errors import BackendUnavailableError\n"
        "from hello_memory.stores.vector import QdrantVectorStore\n"
        f"s = load_settings(environ={{}}, data_dir={str(tmp_path)!r})\n"
        "v = QdrantVectorStore(path=s.qdrant_path())\n"
        "try:\n"
        "    v.open()\n"
        "except BackendUnavailableError as exc:\n"
        "    print('refused:', exc); sys.exit(3)\n"
        "print('opened'); sys.exit(0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    stores.close()
    assert out.returncode == 3, out.stdout + out.stderr
    assert "one process" in out.stdout.lower() or "locked" in out.stdout.lower()


@pytest.mark.postgres
def test_two_managers_on_one_postgresql_database_lose_and_duplicate_nothing(
        tmp_path: Path, embedder, postgres_url: str) -> None:
    """Two managers, each with its own engine (its own connection pool, as two API
    worker processes have), open one fresh PostgreSQL database at the same moment and
    write to one namespace from two threads each: adds, updates and hard forgets, the
    graph tables (in the same database) upserting the same entities from both sides.
    Every acknowledged write is there exactly once, the totals match the rows, and the
    outbox drains. Each manager's vectors are an embedded Qdrant of its own here: the
    shared Qdrant server of the real scale-out is not exercised by these tests."""
    from hello_memory.stores.records import ItemFilter
    from hello_memory.text.entities import RuleExtractor

    def manager(name: str) -> MemoryManager:
        settings = load_settings(environ={}, data_dir=tmp_path / name,
                                 records={"url": postgres_url})
        return MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor())

    managers: dict[str, MemoryManager] = {}
    errors: list[BaseException] = []
    kept: dict[str, str] = {}  # id -> content, of every acknowledged write not forgotten
    forgotten: set[str] = set()
    lock = threading.Lock()
    start = threading.Barrier(2)

    def open_one(name: str) -> None:
        try:
            start.wait()
            managers[name] = manager(name)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    openers = [threading.Thread(target=open_one, args=(n,)) for n in ("a", "b")]
    for t in openers:
        t.start()
    for t in openers:
        t.join()
    assert errors == []
    go = threading.Barrier(4)

    def worker(mm: MemoryManager, tag: str) -> None:
        try:
            go.wait()
            mine: list[str] = []
            for i in range(8):
                item = mm.add(f"Alice Meyer told Bob Jones about note {tag}-{i} in Berlin",
                              "semantic" if i % 2 else "episodic", 0.5 + i / 20, namespace="s")
                mine.append(item.id)
                with lock:
                    kept[item.id] = item.content
            edited = mm.update(mine[0], namespace="s", content=f"note {tag}-0, edited")
            gone = mm.stores.records.memories.get_item("s", mine[1])
            assert mm.remove(gone.id, namespace="s") is True
            with lock:
                kept[edited.id] = edited.content
                kept.pop(gone.id)
                forgotten.add(gone.id)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(mm, f"{name}{k}"))
               for name, mm in managers.items() for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        records = managers["a"].stores.records
        rows = records.memories.list_items("s", ItemFilter(status=None))
        assert len(rows) == len({r.id for r in rows}) == len(kept) == 4 * 7
        assert {r.id: r.content for r in rows} == kept
        assert not forgotten & {r.id for r in rows}
        assert records.memories.namespace_totals("s") == records.memories.recount_totals("s")["s"]
        for mm in managers.values():  # each applies what the other left pending
            mm.reconcile()
        assert records.outbox.pending_outbox() == []
        semantic = {r.id for r in rows if r.memory_type.value == "semantic"}
        graph = managers["b"].stores.graph
        assert graph.memory_ids("s") == semantic
        assert [e.name for e in graph.find_entities("s", ["alice meyer"])] == ["Alice Meyer"]
    finally:
        for mm in managers.values():
            mm.close()
