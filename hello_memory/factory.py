"""Settings → built objects. The only place where provider names are looked up;
the core takes the objects these functions return (ARCHITECTURE decision 5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hello_memory.config import (
    EmbeddingSettings,
    Neo4jGraphSettings,
    Settings,
    SqliteGraphSettings,
)
from hello_memory.errors import ConfigError

if TYPE_CHECKING:
    from hello_memory.embedding.base import Embedder
    from hello_memory.stores.bundle import Extractor, Stores
    from hello_memory.stores.graph.base import GraphStore
    from hello_memory.stores.records import RecordStore
    from hello_memory.stores.vector.base import VectorStore

__all__ = ["build_embedder", "build_graph_store", "build_vector_store", "open_stores"]


def build_vector_store(settings: Settings) -> VectorStore:
    from hello_memory.stores.vector import QdrantVectorStore

    v = settings.vector
    return QdrantVectorStore(
        location=v.location, path=settings.qdrant_path(), url=v.url, api_key=v.api_key,
        timeout=v.timeout, collection_prefix=v.collection_prefix,
    )


def _sqlite_graph(cfg: SqliteGraphSettings, records: RecordStore) -> GraphStore:
    from hello_memory.stores.graph import SQLiteGraphStore

    return SQLiteGraphStore(records.engine)


def _neo4j_graph(cfg: Neo4jGraphSettings, records: RecordStore) -> GraphStore:
    from hello_memory.stores.graph import Neo4jGraphStore

    return Neo4jGraphStore(cfg.uri, user=cfg.user, password=cfg.password,
                           database=cfg.database, connection_timeout=cfg.connection_timeout)


# One registry per kind; its keys are the `provider` literals of the config models.
GRAPH_BACKENDS: dict[str, Callable[..., GraphStore]] = {
    "sqlite": _sqlite_graph,
    "neo4j": _neo4j_graph,
}


def build_graph_store(settings: Settings, records: RecordStore) -> GraphStore:
    """The SQLite backend shares the (open) record store's database."""
    factory = GRAPH_BACKENDS.get(settings.graph.provider)
    if factory is None:  # unreachable when settings validated; kept for direct callers
        raise ConfigError(f"unknown graph provider {settings.graph.provider!r}")
    return factory(settings.graph, records)


def build_embedder(cfg: EmbeddingSettings) -> Embedder:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(cfg.model, device=cfg.device, batch_size=cfg.batch_size,
                                       normalize=cfg.normalize)


def open_stores(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    extractor: Extractor | None = None,
) -> Stores:
    """Build and open every store named by ``settings``. Close with ``.close()``."""
    from hello_memory.stores.bundle import Stores
    from hello_memory.stores.records import RecordStore

    records = RecordStore(settings.records_url(), echo=settings.records.echo)
    records.open()
    try:
        stores = Stores(records, build_vector_store(settings), build_graph_store(settings, records),
                        embedder or build_embedder(settings.embedding), extractor=extractor)
        stores.open()
    except BaseException:
        records.close()
        raise
    return stores
