"""Vector stores: the :class:`VectorStore` protocol and its Qdrant implementation."""

from hello_memory.stores.vector.base import CollectionSpec, Range, VectorStore
from hello_memory.stores.vector.qdrant import QdrantVectorStore

__all__ = ["CollectionSpec", "QdrantVectorStore", "Range", "VectorStore"]
