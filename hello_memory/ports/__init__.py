"""Narrow ports: what the services call on each kind of backend, as typing Protocols.

One module per port. A port lists only the operations code outside the backend calls
today (issue 31, item 1), so a new backend knows what it must provide and a service
knows what it may rely on. The backends are not changed to inherit from a port: they
satisfy it structurally (``tests/unit/test_ports.py`` checks each one).

- :mod:`hello_memory.ports.records`: the record repositories and the store that hands
  them out (SQLite / PostgreSQL through SQLAlchemy).
- :mod:`hello_memory.ports.vector`: the vector index, its own filter type and the
  value types it speaks (``CollectionSpec``, ``PayloadIndex``).
- :mod:`hello_memory.ports.graph`: the entity graph.
- :mod:`hello_memory.ports.embedder`: the text embedder.
- :mod:`hello_memory.ports.extractor`: the entity extractor.
- :mod:`hello_memory.ports.llm`: the optional chat model.

This package sits just above the core (types, errors, config) in the import contracts
of ``pyproject.toml``; the few value types it still names from a backend package are
listed there (and in docs/ARCHITECTURE.md, "Known debts").
"""

from __future__ import annotations

from hello_memory.ports.embedder import EmbedderPort
from hello_memory.ports.extractor import EntityExtractorPort, ExtractionResult
from hello_memory.ports.graph import GraphPort
from hello_memory.ports.llm import ChatMessage, LLMPort, UsageCounters
from hello_memory.ports.records import (
    AuditPort,
    DocumentRecordsPort,
    MemoryRecordsPort,
    OutboxPort,
    RecordsPort,
)
from hello_memory.ports.vector import (
    Between,
    CollectionSpec,
    PayloadIndex,
    VectorFilter,
    VectorIndexPort,
)

__all__ = [
    "AuditPort",
    "Between",
    "ChatMessage",
    "CollectionSpec",
    "DocumentRecordsPort",
    "EmbedderPort",
    "EntityExtractorPort",
    "ExtractionResult",
    "GraphPort",
    "LLMPort",
    "MemoryRecordsPort",
    "OutboxPort",
    "PayloadIndex",
    "RecordsPort",
    "UsageCounters",
    "VectorFilter",
    "VectorIndexPort",
]
