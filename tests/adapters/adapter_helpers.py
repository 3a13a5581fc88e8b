"""Helpers the adapter tests share (a module of its own: `conftest` is not importable
by name from more than one folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.text.entities import RuleExtractor


def make_manager(data_dir: Path, embedder: Any) -> MemoryManager:
    """A real manager on embedded stores in ``data_dir``, with a shared embedder."""
    settings = load_settings(environ={}, data_dir=data_dir)
    return MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor(),
                         default_namespace=settings.default_namespace)
