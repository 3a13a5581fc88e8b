"""hello-memory: a multi-store cognitive memory layer for LLM agents.

Records live in SQLite (any SQLAlchemy URL), vectors in Qdrant (embedded or server),
entities and relations in a graph (SQLite tables or Neo4j over Bolt). Importing this
package reads no settings and opens nothing; heavy libraries load on first use.

>>> from hello_memory import load_settings, open_stores          # doctest: +SKIP
>>> stores = open_stores(load_settings(data_dir="/tmp/hm"))      # doctest: +SKIP
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from hello_memory import _moved, errors
from hello_memory._version import __version__ as __version__
from hello_memory.config import Settings, load_settings
from hello_memory.errors import HelloMemoryError
from hello_memory.types import (
    Entity,
    GraphHit,
    MemoryItem,
    MemoryStatus,
    MemoryType,
    Modality,
    Relation,
)

# the interfaces moved under hello_memory/interfaces/; their former import paths give the
# same modules (hello_memory/_moved.py)
_moved.install()

# name -> module holding it; imported on first attribute access (PEP 562) so that
# `import hello_memory` stays light (no torch, no qdrant-client, no SQLAlchemy engine).
_LAZY = {
    "ProgressiveLoader": "hello_memory.retrieval.progressive",
    "TokenMetrics": "hello_memory.retrieval.progressive",
    "HybridRetriever": "hello_memory.retrieval.hybrid",
    "TaskAwareRetriever": "hello_memory.retrieval.task_aware",
    "OpenAICompatClient": "hello_memory.llm",
    "LLMClient": "hello_memory.llm",
    "find_time_ranges": "hello_memory.text.timeparse",
    "MemoryManager": "hello_memory.memory.manager",
    "WorkingMemory": "hello_memory.memory.working",
    "EpisodicMemory": "hello_memory.memory.episodic",
    "SemanticMemory": "hello_memory.memory.semantic",
    "SearchHit": "hello_memory.memory.scoring",
    "ScoreBreakdown": "hello_memory.memory.scoring",
    "Stores": "hello_memory.stores.bundle",
    "open_stores": "hello_memory.factory",
    "RecordStore": "hello_memory.stores.records",
    "QdrantVectorStore": "hello_memory.stores.vector",
    "SQLiteGraphStore": "hello_memory.stores.graph",
    "Neo4jGraphStore": "hello_memory.stores.graph",
    "SentenceTransformerEmbedder": "hello_memory.embedding",
    "RAGPipeline": "hello_memory.rag.pipeline",
    "RAGTool": "hello_memory.interfaces.tools.rag_tool",
    "MemoryTool": "hello_memory.interfaces.tools",
    "create_app": "hello_memory.interfaces.rest",
    "JobRun": "hello_memory.interfaces.jobs",
    "run_job": "hello_memory.interfaces.jobs",
    "Client": "hello_memory.interfaces.client",
    "AsyncClient": "hello_memory.interfaces.client",
}

__all__ = [
    "Entity",
    "GraphHit",
    "HelloMemoryError",
    "MemoryItem",
    "MemoryStatus",
    "MemoryType",
    "Modality",
    "Relation",
    "Settings",
    "__version__",
    "errors",
    "load_settings",
    # lazy (see _LAZY)
    "LLMClient",
    "OpenAICompatClient",
    "ProgressiveLoader",
    "TokenMetrics",
    "HybridRetriever",
    "TaskAwareRetriever",
    "find_time_ranges",
    "EpisodicMemory",
    "MemoryManager",
    "ScoreBreakdown",
    "SearchHit",
    "SemanticMemory",
    "WorkingMemory",
    "Neo4jGraphStore",
    "QdrantVectorStore",
    "RecordStore",
    "SQLiteGraphStore",
    "SentenceTransformerEmbedder",
    "RAGPipeline",
    "RAGTool",
    "Stores",
    "open_stores",
    "MemoryTool",
    "create_app",
    "JobRun",
    "run_job",
    "Client",
    "AsyncClient",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hello_memory' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from hello_memory.embedding import SentenceTransformerEmbedder
    from hello_memory.factory import open_stores
    from hello_memory.interfaces.client import AsyncClient, Client
    from hello_memory.interfaces.jobs import JobRun, run_job
    from hello_memory.interfaces.rest import create_app
    from hello_memory.interfaces.tools import MemoryTool
    from hello_memory.interfaces.tools.rag_tool import RAGTool
    from hello_memory.llm import LLMClient, OpenAICompatClient
    from hello_memory.memory.episodic import EpisodicMemory
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.memory.scoring import ScoreBreakdown, SearchHit
    from hello_memory.memory.semantic import SemanticMemory
    from hello_memory.memory.working import WorkingMemory
    from hello_memory.rag.pipeline import RAGPipeline
    from hello_memory.retrieval.hybrid import HybridRetriever
    from hello_memory.retrieval.progressive import ProgressiveLoader, TokenMetrics
    from hello_memory.retrieval.task_aware import TaskAwareRetriever
    from hello_memory.stores.bundle import Stores
    from hello_memory.stores.graph import Neo4jGraphStore, SQLiteGraphStore
    from hello_memory.stores.records import RecordStore
    from hello_memory.stores.vector import QdrantVectorStore
    from hello_memory.text.timeparse import find_time_ranges
