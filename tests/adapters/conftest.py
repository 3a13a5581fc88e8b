"""Fixtures for the framework adapter tests (run in .venv-adapters by `make
test-adapters`; the main suite leaves this folder out): real managers on embedded
stores in tmp dirs, one MiniLM embedder for the session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from adapter_helpers import make_manager

from hello_memory.interfaces.aio import AsyncMemoryManager
from hello_memory.memory.manager import MemoryManager


@pytest.fixture(scope="session")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def manager(tmp_path: Path, embedder: Any) -> Iterator[MemoryManager]:
    mm = make_manager(tmp_path / "data", embedder)
    yield mm
    mm.close()


@pytest_asyncio.fixture
async def amanager(manager: MemoryManager) -> AsyncIterator[AsyncMemoryManager]:
    amm = AsyncMemoryManager(manager, max_workers=2)
    yield amm
    await amm.close()
