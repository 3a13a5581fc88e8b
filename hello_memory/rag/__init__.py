"""Retrieval-augmented generation over documents: load (MarkItDown), chunk
(heading-aware, token-bounded), index (records + Qdrant dense + BM25), search
(RRF over query variants: MQE, HyDE), answer with citations.

Imported lazily (PEP 562), so ``import hello_memory.rag`` stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_LAZY = {
    "RAGPipeline": "hello_memory.rag.pipeline",
    "RAGTool": "hello_memory.interfaces.tools.rag_tool",
    "IngestReport": "hello_memory.rag.types",
    "RAGHit": "hello_memory.rag.types",
    "Answer": "hello_memory.rag.types",
    "Citation": "hello_memory.rag.types",
    "MarkdownChunker": "hello_memory.rag.chunker",
    "Chunk": "hello_memory.rag.chunker",
    "Reranker": "hello_memory.rag.search",
    "CrossEncoderReranker": "hello_memory.rag.search",
    "DocumentError": "hello_memory.rag.errors",
    "UnsupportedDocumentError": "hello_memory.rag.errors",
    "DocumentReadError": "hello_memory.rag.errors",
    "EmptyDocumentError": "hello_memory.rag.errors",
}

__all__ = [
    "Answer",
    "Chunk",
    "Citation",
    "CrossEncoderReranker",
    "DocumentError",
    "DocumentReadError",
    "EmptyDocumentError",
    "IngestReport",
    "MarkdownChunker",
    "RAGHit",
    "RAGPipeline",
    "RAGTool",
    "Reranker",
    "UnsupportedDocumentError",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hello_memory.rag' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from hello_memory.interfaces.tools.rag_tool import RAGTool
    from hello_memory.rag.chunker import Chunk, MarkdownChunker
    from hello_memory.rag.errors import (
        DocumentError,
        DocumentReadError,
        EmptyDocumentError,
        UnsupportedDocumentError,
    )
    from hello_memory.rag.pipeline import RAGPipeline
    from hello_memory.rag.search import CrossEncoderReranker, Reranker
    from hello_memory.rag.types import Answer, Citation, IngestReport, RAGHit
