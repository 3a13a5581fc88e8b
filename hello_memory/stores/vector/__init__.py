"""Vector stores: the :class:`VectorStore` protocol (filters are a
:class:`~hello_memory.ports.vector.VectorFilter`) and its Qdrant implementations
(qdrant-client for ``:memory:``, local mode and servers; Qdrant Edge for embedded
directories) and pgvector (PostgreSQL, for several processes on one database). The
backends load lazily, so the Edge path never imports qdrant-client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hello_memory.stores.vector.base import (
    Between,
    CollectionSpec,
    Range,
    VectorFilter,
    VectorStore,
)

if TYPE_CHECKING:
    from hello_memory.stores.vector.edge import QdrantEdgeVectorStore
    from hello_memory.stores.vector.pgvector import PgVectorStore
    from hello_memory.stores.vector.qdrant import QdrantVectorStore

__all__ = ["Between", "CollectionSpec", "PgVectorStore", "QdrantEdgeVectorStore",
           "QdrantVectorStore", "Range", "VectorFilter", "VectorStore"]


def __getattr__(name: str) -> Any:
    if name == "QdrantEdgeVectorStore":
        from hello_memory.stores.vector.edge import QdrantEdgeVectorStore

        return QdrantEdgeVectorStore
    if name == "PgVectorStore":
        from hello_memory.stores.vector.pgvector import PgVectorStore

        return PgVectorStore
    if name == "QdrantVectorStore":
        from hello_memory.stores.vector.qdrant import QdrantVectorStore

        return QdrantVectorStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
