"""Retrieval on top of the memory types: the BM25 lexical view and the progressive
loader (index -> timeline -> full memory under a token budget).

Imported lazily (PEP 562): the progressive loader pulls in the memory manager."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "BM25_VECTOR": "hello_memory.retrieval.lexical",
    "LexicalEncoder": "hello_memory.retrieval.lexical",
    "ContextPlan": "hello_memory.retrieval.progressive",
    "IndexLayer": "hello_memory.retrieval.progressive",
    "ProgressiveLoader": "hello_memory.retrieval.progressive",
    "TimelineLayer": "hello_memory.retrieval.progressive",
    "TokenMetrics": "hello_memory.retrieval.progressive",
    "optimize_context": "hello_memory.retrieval.progressive",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hello_memory.retrieval' has no attribute {name!r}")
    return getattr(import_module(module), name)
