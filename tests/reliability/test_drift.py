"""Indexes that never drift (issue 16): after 8 HTTP clients add, batch-add, update,
delete and forget across 4 namespaces at once, a dry-run ``reconcile`` of every
namespace finds nothing to change (no orphan vector or graph link, no stale payload,
no missing vector or link, no pending outbox row), with no crash and with the server
SIGKILLed mid-load a few times and restarted (replay at open only, no reconcile). The
first also runs on records plus vectors in PostgreSQL (pgvector, issue 30); the SIGKILL
case on pgvector is test_fleet.py's, with three servers on one database."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from hello_memory.config import load_settings
from hello_memory.interfaces.rest import create_app
from hello_memory.memory.manager import MemoryManager

from .fork_server import ForkServer
from .live_server import free_port
from .load import drift, run_load
from .support import make_manager

pytestmark = [pytest.mark.slow]

NAMESPACES = ["drift-a", "drift-b", "drift-c", "drift-d"]


@pytest.fixture(params=["embedded", pytest.param("pgvector", marks=pytest.mark.postgres)])
def stack(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Settings of the stores: embedded defaults, or PostgreSQL records + pgvector."""
    if request.param == "embedded":
        return {}
    return {"records": {"url": request.getfixturevalue("postgres_url")},
            "vector": {"provider": "pgvector"}}


@pytest.fixture
def served(tmp_path: Path, embedder: Any, stack: dict[str, Any]
           ) -> Iterator[tuple[str, MemoryManager]]:
    """The FastAPI app under a real uvicorn server on a free port, in a thread."""
    data = tmp_path / "d"
    settings = load_settings(environ={}, data_dir=data, api={"auth_disabled": True}, **stack)
    mm = make_manager(data, embedder, api={"auth_disabled": True}, **stack)
    config = uvicorn.Config(create_app(settings, manager=mm), host="127.0.0.1",
                            port=free_port(), log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{config.port}", mm
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        mm.close()


def test_concurrent_load_leaves_no_drift(served: tuple[str, MemoryManager]) -> None:
    base, mm = served
    result = run_load(base, NAMESPACES, clients=8, ops=25, seed=1)
    assert result.errors == []
    assert sum(result.counts.values()) > 100, result.counts
    assert drift(mm, NAMESPACES) == {}


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    srv = ForkServer()
    yield srv
    srv.close()


def _serve(forks: ForkServer, data: Path, log: Path, stack: dict[str, Any]
           ) -> tuple[int, str]:
    """A REST server forked with the model loaded (crash_worker.py, op "serve"),
    opening the stores in ``data``; returns its pid and base URL once it answers."""
    port = free_port()
    pid = forks.start({"op": "serve", "dir": str(data), "port": port, "log": str(log),
                       "settings": stack})
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return pid, base
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, Path(f"{log}.stderr").read_text()[-3000:]
        time.sleep(0.05)


def test_sigkill_mid_load_then_replay_at_open_leaves_no_drift(
        tmp_path: Path, embedder: Any, forks: ForkServer) -> None:
    stack: dict[str, Any] = {}  # embedded; pgvector under SIGKILL: test_fleet.py
    data = tmp_path / "d"
    make_manager(data, embedder, **stack).close()  # the schema, before the first fork opens it
    kills = 3
    for round_ in range(kills):
        # each start replays what the last kill left pending (open only, no reconcile)
        pid, base = _serve(forks, data, tmp_path / f"serve-{round_}.jsonl", stack)
        timer = threading.Timer(1.0 + 0.7 * round_, os.kill, args=(pid, signal.SIGKILL))
        timer.start()
        # more operations than any server answers before the timer: the kill lands
        # mid-load however fast the machine (each client stops at its first refusal)
        result = run_load(base, NAMESPACES, clients=8, ops=400, seed=round_,
                          tolerate_transport=True)
        timer.join()
        status = forks.reap()
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        assert result.errors == [], result.errors
        assert result.counts.get("transport"), "the kill did not land mid-load"
    pid, base = _serve(forks, data, tmp_path / "serve-last.jsonl", stack)
    result = run_load(base, NAMESPACES, clients=8, ops=5, seed=99)
    os.kill(pid, signal.SIGTERM)  # a graceful stop after the last replay and load
    forks.reap()
    assert result.errors == []
    mm = make_manager(data, embedder, **stack)
    try:
        assert drift(mm, NAMESPACES) == {}
    finally:
        mm.close()
