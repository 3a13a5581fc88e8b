"""Threads on one manager lose nothing; a second process on the same embedded
directory gets a clear, immediate error (one writer process per directory)."""

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


def test_threads_adding_and_searching_lose_no_write(tmp_path: Path, embedder) -> None:
    mm = MemoryManager(open_stores(load_settings(environ={}, data_dir=tmp_path), embedder=embedder))
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
    assert mm.stores.records.pending_outbox() == []
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
