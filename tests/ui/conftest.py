"""Fixtures for the dashboard tests: one seeded manager on embedded stores, one live
uvicorn server on loopback (module scope) and one headless Debian Chromium driven by
Playwright (no browser download: ``executable_path=/usr/bin/chromium``)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import Settings, load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.text.entities import RuleExtractor

CHROMIUM = Path(os.environ.get("HELLO_MEMORY_CHROMIUM", "/usr/bin/chromium"))
# The flags this machine's closed network needs (no background fetches, no QUIC).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
KEYS = {"key-alice": ["alice"], "key-admin": ["*"]}
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts" / "ui"


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)  # type: ignore[misc]


@dataclass
class Seeded:
    settings: Settings
    mm: MemoryManager
    ids: dict[str, str]
    document_id: str


def seed(mm: MemoryManager, settings: Settings) -> Seeded:
    ids: dict[str, str] = {}

    def add(name: str, content: str, kind: str, when: datetime, **extra: Any) -> None:
        ids[name] = mm.add(content, kind, namespace=extra.pop("namespace", "alice"),
                           event_time=when, **extra).id

    add("berlin", "Alice moved to Berlin in May 2024 and works at Acme Robotics.",
        "semantic", utc(2024, 5, 6, 9), importance=0.8)
    add("manager", "Alice's manager at Acme Robotics is Priya Natarajan.", "semantic",
        utc(2024, 6, 3, 10))
    add("tea", "Alice prefers green tea over coffee.", "semantic", utc(2024, 6, 20, 8))
    add("sister", "Alice's sister Emma Stone lives in Lyon.", "semantic", utc(2024, 7, 1, 12))
    add("lisbon", "Alice booked a flight to Lisbon for the Acme Robotics offsite.", "episodic",
        utc(2024, 9, 12, 15), session_id="trip-planning")
    add("hotel", "Alice asked for a quiet hotel room near the Lisbon venue.", "episodic",
        utc(2024, 9, 12, 15, 5), session_id="trip-planning")
    add("badge", "Alice lost her office badge and got a new one from reception.",
        "episodic", utc(2024, 10, 2, 11), session_id="office")
    add("now", "Alice is comparing train times to the airport right now.", "working",
        utc(2024, 10, 3, 7))
    add("bob", "Bob keeps a secret recipe for plum cake.", "semantic", utc(2024, 5, 1),
        namespace="bob")
    from hello_memory.interfaces.tools.rag_access import build_rag

    rag = build_rag(mm, settings)
    doc = rag.add_text("# Handbook\n\n## Leave\n\nEvery employee has twenty-five days of "
                       "annual leave.\n\n## Travel\n\nBook flights through the travel "
                       "portal at least two weeks ahead.\n", namespace="alice",
                       source="handbook.md")
    return Seeded(settings, mm, ids, str(doc))


@pytest.fixture(scope="session")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Seeded]:
    data = tmp_path_factory.mktemp("ui") / "data"
    settings = load_settings(environ={}, data_dir=data, api={"api_keys": KEYS})
    mm = MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor(),
                       default_namespace=settings.default_namespace)
    try:
        yield seed(mm, settings)
    finally:
        mm.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(seeded: Seeded) -> Iterator[str]:
    """``http://127.0.0.1:PORT``: the real app (REST + /ui + /docs) under uvicorn."""
    import uvicorn

    from hello_memory.interfaces.rest import create_app

    port = free_port()
    app = create_app(seeded.settings, manager=seeded.mm)
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                        log_level="warning", lifespan="on"))
    thread = threading.Thread(target=srv.run, name="ui-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("the test server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(15)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: the dashboard tests drive Debian's Chromium "
                    "(scripts/system-deps.sh installs it; `make test` runs that)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is missing: pip install -e '.[dev]'")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                      args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
