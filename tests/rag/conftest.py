"""Fixtures of the RAG tests: the real embedder (once per session), pipelines over
embedded stores in tmp_path, and the scripted LLM endpoint."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from llm.scripted_server import ScriptedLLMServer

from hello_memory.config import RagSettings, load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.rag import RAGPipeline


@pytest.fixture(scope="session")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def open_manager(embedder: Any) -> Iterator[Callable[[Path], MemoryManager]]:
    """Opens managers over ``data_dir`` with the shared embedder; closes them all."""
    opened: list[MemoryManager] = []

    def make(data_dir: Path) -> MemoryManager:
        settings = load_settings(environ={}, data_dir=data_dir)
        mm = MemoryManager(open_stores(settings, embedder=embedder))
        opened.append(mm)
        return mm

    yield make
    for mm in opened:
        mm.close()


@pytest.fixture
def manager(open_manager: Callable[[Path], MemoryManager], tmp_path: Path) -> MemoryManager:
    return open_manager(tmp_path / "data")


@pytest.fixture
def rag(manager: MemoryManager) -> RAGPipeline:
    return RAGPipeline.from_manager(manager, settings=RagSettings(chunk_size=120,
                                                                  chunk_overlap=20))


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server
        assert server.unscripted == 0, "the pipeline sent a request nothing was scripted for"
