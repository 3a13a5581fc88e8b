"""REST adds go through the server's one writer (api.write_batching, issue 27): many
clients adding at once each get their own memory back (201, the same JSON as before)
and every memory is stored once; with the setting off, each request stores itself.
Real stores, the real app; nothing here asserts a timing."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hello_memory.interfaces.rest import create_app
from hello_memory.memory.manager import MemoryManager
from interfaces.conftest import make_manager, make_settings

pytestmark = pytest.mark.slow

KEY = "writer-key"
NS = "team"


def _add_concurrently(client: TestClient, texts: list[str]) -> list[Any]:
    out: list[Any] = [None] * len(texts)

    def add(n: int) -> None:
        out[n] = client.post("/v1/memories", params={"namespace": NS},
                             headers={"Authorization": f"Bearer {KEY}"},
                             json={"content": texts[n], "memory_type": "episodic"})

    threads = [threading.Thread(target=add, args=(n,)) for n in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


@pytest.mark.parametrize("batching", [True, False])
def test_concurrent_rest_adds_each_get_their_memory(tmp_path: Path, embedder: Any,
                                                   batching: bool) -> None:
    settings = make_settings(tmp_path, api={"api_keys": {KEY: [NS]},
                                            "write_batching": batching})
    mm: MemoryManager = make_manager(settings, embedder)
    texts = [f"Crate {n} of apples went to the school kitchen on Monday." for n in range(16)]
    try:
        app = create_app(settings, manager=mm)
        with TestClient(app) as client:
            writer = app.state.writer
            assert (writer is not None) == batching
            answers = _add_concurrently(client, texts)
            assert [a.status_code for a in answers] == [201] * len(texts)
            assert [a.json()["content"] for a in answers] == texts
            ids = [a.json()["id"] for a in answers]
            assert len(set(ids)) == len(texts)
            if writer is not None:
                assert writer.calls_served == len(texts)  # every add went through it
                assert 1 <= writer.writes <= len(texts)
        for memory_id, text in zip(ids, texts, strict=True):
            assert mm.get(memory_id, namespace=NS).content == text
        assert app.state.writer is None  # closed with the app
        assert mm.stats(NS)["total"] == len(texts)
    finally:
        mm.close()


def test_adds_waiting_for_the_writer_hold_no_operation_slot(tmp_path: Path,
                                                            embedder: Any) -> None:
    """With two operation slots (``max_workers=2``), eight adds arrive while the
    writer is busy: all seven others reach its queue and are stored in ONE merged
    write, and a search is answered meanwhile (an add waiting for the writer runs in
    the facade's waiting pool, aio.AsyncMemoryManager.run_waiting)."""
    settings = make_settings(tmp_path, api={"api_keys": {KEY: [NS]}})
    mm: MemoryManager = make_manager(settings, embedder)
    texts = [f"Box {n} of pears went to the harbour market on Friday." for n in range(8)]
    gate, entered = threading.Event(), threading.Event()

    class Gated:  # the real manager, behind a gate that holds the writer's first write
        def add_embedded(self, entries: Any, **kwargs: Any) -> Any:
            entered.set()
            gate.wait(60)
            return mm.add_embedded(entries, **kwargs)

    try:
        app = create_app(settings, manager=mm, max_workers=2)
        with TestClient(app) as client:
            writer = app.state.writer
            writer.manager = Gated()
            answers: list[Any] = []
            first = threading.Thread(target=lambda: answers.extend(
                _add_concurrently(client, texts[:1])))
            first.start()
            assert entered.wait(60)  # the writer holds the first add's write
            rest = threading.Thread(target=lambda: answers.extend(
                _add_concurrently(client, texts[1:])))
            rest.start()
            deadline = time.monotonic() + 60
            while writer.queued < len(texts) - 1 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert writer.queued == len(texts) - 1
            found = client.post("/v1/search", params={"namespace": NS},
                                headers={"Authorization": f"Bearer {KEY}"},
                                json={"query": "pears", "top_k": 3})
            assert found.status_code == 200 and not gate.is_set()
            gate.set()
            first.join(120)
            rest.join(120)
            assert sorted(a.status_code for a in answers) == [201] * len(texts)
            assert writer.calls_served == len(texts) and writer.writes == 2
        assert mm.stats(NS)["total"] == len(texts)
    finally:
        gate.set()
        mm.close()
