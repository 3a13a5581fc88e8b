"""Fixtures for the reliability suite: one real embedder per session, fresh managers."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def embedder() -> Any:
    """The real all-MiniLM-L6-v2 embedder, loaded once for the whole suite."""
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()
