"""Fixtures for the interface tests: real managers on embedded stores in tmp dirs,
one MiniLM embedder shared by the session (loading it is the slow part)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import Settings, load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.text.entities import RuleExtractor


@pytest.fixture(scope="session")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    return load_settings(environ={}, data_dir=data_dir, **overrides)


def make_manager(settings: Settings, embedder: Any) -> MemoryManager:
    # lifecycle from the settings, as MemoryManager.open builds it (README "Lifecycle
    # defaults"): the server's scheduler reads its thresholds from the manager
    return MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor(),
                         default_namespace=settings.default_namespace,
                         lifecycle=settings.jobs)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


@pytest.fixture
def manager(settings: Settings, embedder: Any) -> Iterator[MemoryManager]:
    mm = make_manager(settings, embedder)
    yield mm
    mm.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
