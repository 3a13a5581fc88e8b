"""Retrieval on top of the memory types: the hybrid retriever (plan, semantic / lexical /
symbolic / graph views, weighted reciprocal-rank fusion, reflection), task-aware
retrieval, the BM25 lexical view and the progressive loader (index -> timeline -> full
memory under a token budget).

Imported lazily (PEP 562): each name's module loads on first use."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "BM25_VECTOR": "hello_memory.text.bm25",
    "HybridRetriever": "hello_memory.retrieval.hybrid",
    "QueryAnalysis": "hello_memory.retrieval.planning",
    "RECIPES": "hello_memory.retrieval.recipes",
    "SearchRecipe": "hello_memory.retrieval.recipes",
    "QueryPlanner": "hello_memory.retrieval.planning",
    "RetrievalPlan": "hello_memory.retrieval.hybrid",
    "SearchParts": "hello_memory.retrieval.parts",
    "TASK_SIGNALS": "hello_memory.retrieval.task_aware",
    "TASK_STRATEGIES": "hello_memory.retrieval.task_aware",
    "TaskAwareRetriever": "hello_memory.retrieval.task_aware",
    "ViewHit": "hello_memory.memory.scoring",
    "analyze_query": "hello_memory.retrieval.planning",
    "decompose": "hello_memory.retrieval.planning",
    "detect_task_type": "hello_memory.retrieval.task_aware",
    "explain": "hello_memory.retrieval.fusion",
    "weighted_rrf": "hello_memory.retrieval.fusion",
    "LexicalEncoder": "hello_memory.text.bm25",
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
