"""Settings → built objects. The only place where provider names are looked up;
the core takes the objects these functions return (ARCHITECTURE decision 5).

The parts builder, below the facade: ``MemoryManager.open`` (the composition root)
calls these and this module never imports the facade, so every import points down
the layers (docs/ARCHITECTURE.md, Layers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hello_memory.config import (
    EmbeddingSettings,
    Neo4jGraphSettings,
    SemanticSettings,
    Settings,
    SqliteGraphSettings,
)
from hello_memory.errors import BackendUnavailableError, ConfigError

if TYPE_CHECKING:
    from hello_memory.embedding.base import Embedder
    from hello_memory.memory.perceptual import PerceptualMemory
    from hello_memory.stores.bundle import Extractor, Stores
    from hello_memory.stores.graph.base import GraphStore
    from hello_memory.stores.records import RecordStore
    from hello_memory.stores.vector.base import VectorStore
    from hello_memory.text.entities import EntityExtractor

__all__ = [
    "GRAPH_BACKENDS", "RECORD_BACKENDS", "VECTOR_BACKENDS", "build_embedder",
    "build_extractor", "build_graph_store", "build_perceptual", "build_record_store",
    "build_server_embedder", "build_vector_store", "open_stores",
]


def build_vector_store(settings: Settings) -> VectorStore:
    """The backend ``vector.provider`` names, from VECTOR_BACKENDS."""
    factory = VECTOR_BACKENDS.get(settings.vector.provider)
    if factory is None:  # unreachable when settings validated; kept for direct callers
        raise ConfigError(f"unknown vector provider {settings.vector.provider!r}")
    return factory(settings)


def _qdrant_store(settings: Settings) -> VectorStore:
    """An embedded directory runs on Qdrant Edge unless ``vector.embedded`` is
    ``local``; ``:memory:`` and ``url=`` go through qdrant-client (one code path)."""
    v = settings.vector
    path = settings.qdrant_path()
    if path and not v.location and not v.url and v.embedded == "edge":
        from hello_memory.stores.vector.base import HnswParams
        from hello_memory.stores.vector.edge import QdrantEdgeVectorStore

        return QdrantEdgeVectorStore(path=path, collection_prefix=v.collection_prefix,
                                     hnsw=HnswParams(**v.hnsw.model_dump()))
    from hello_memory.stores.vector.qdrant import QdrantVectorStore

    return QdrantVectorStore(
        location=v.location, path=settings.qdrant_path(), url=v.url, api_key=v.api_key,
        timeout=v.timeout, collection_prefix=v.collection_prefix,
    )


def _pgvector_store(settings: Settings) -> VectorStore:
    """Vectors in PostgreSQL: ``vector.pgvector.url``, else the records database, which
    must then be PostgreSQL (docs/DEPLOY.md, "Deploy for a team")."""
    from hello_memory.stores.vector.pgvector import PgVectorParams, PgVectorStore

    cfg = settings.vector.pgvector
    url = cfg.url or settings.records.url
    if not url or not url.startswith("postgresql"):
        raise ConfigError("vector.provider: pgvector needs a PostgreSQL database: set "
                          "records.url (or vector.pgvector.url) to postgresql+psycopg://...")
    return PgVectorStore(url=url, collection_prefix=settings.vector.collection_prefix,
                         params=PgVectorParams(m=cfg.m, ef_construction=cfg.ef_construction,
                                               ef_search=cfg.ef_search,
                                               exact_threshold=cfg.exact_threshold),
                         pool_size=cfg.pool_size)


def _sql_records(settings: Settings) -> RecordStore:
    from hello_memory.stores.records import RecordStore

    # The request bounds (docs/RELIABILITY.md) go with the records: every part built
    # over these stores reads them as ``stores.limits`` (docs/ARCHITECTURE.md, "Where
    # settings reach the parts"), none from a module global.
    return RecordStore(settings.records_url(), echo=settings.records.echo,
                       limits=settings.limits,
                       mention_times=settings.memory.times_from_text)


def _sqlite_graph(cfg: SqliteGraphSettings, records: RecordStore) -> GraphStore:
    from hello_memory.stores.graph import SQLiteGraphStore

    # on a database other processes write too, find_entities keeps its rows at the
    # records' write generation, which the graph's writes move on too
    return SQLiteGraphStore(records.engine, shared_generation=records.memories.generation)


def _neo4j_graph(cfg: Neo4jGraphSettings, records: RecordStore) -> GraphStore:
    from hello_memory.stores.graph import Neo4jGraphStore

    return Neo4jGraphStore(cfg.uri, user=cfg.user, password=cfg.password,
                           database=cfg.database, connection_timeout=cfg.connection_timeout)


# One registry per kind of backend (issue 31): a new backend is one builder and one line
# here. The vector and graph keys are the `provider` literals of the config models; the
# records' are the SQLAlchemy dialect of `records.url` (one SQLAlchemy store serves both:
# the dialect differences stay inside stores/records/).
VECTOR_BACKENDS: dict[str, Callable[[Settings], VectorStore]] = {
    "qdrant": _qdrant_store,
    "pgvector": _pgvector_store,
}
GRAPH_BACKENDS: dict[str, Callable[..., GraphStore]] = {
    "sqlite": _sqlite_graph,
    "neo4j": _neo4j_graph,
}
RECORD_BACKENDS: dict[str, Callable[[Settings], RecordStore]] = {
    "sqlite": _sql_records,
    "postgresql": _sql_records,
}


def build_record_store(settings: Settings) -> RecordStore:
    """The record store of ``records.url`` (default: SQLite in the data directory), not
    yet opened, from RECORD_BACKENDS by the URL's dialect."""
    url = settings.records_url()
    dialect = url.split(":", 1)[0].split("+", 1)[0]
    factory = RECORD_BACKENDS.get(dialect)
    if factory is None:
        raise ConfigError(f"records.url: no records backend for {dialect!r} "
                          f"(known: {sorted(RECORD_BACKENDS)})")
    return factory(settings)


def build_graph_store(settings: Settings, records: RecordStore) -> GraphStore:
    """The SQLite backend shares the (open) record store's database."""
    factory = GRAPH_BACKENDS.get(settings.graph.provider)
    if factory is None:  # unreachable when settings validated; kept for direct callers
        raise ConfigError(f"unknown graph provider {settings.graph.provider!r}")
    return factory(settings.graph, records)


def build_embedder(cfg: EmbeddingSettings) -> Embedder:
    if cfg.provider != "sentence_transformers":  # a packaged engine (embedding.preset)
        from hello_memory.embedding.packaged import build_packaged_embedder

        return build_packaged_embedder(cfg.provider, batch_size=cfg.batch_size,
                                       threads=cfg.engine_threads)
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(cfg.model, device=cfg.device, batch_size=cfg.batch_size,
                                       normalize=cfg.normalize, query_threads=cfg.query_threads)


def build_server_embedder(settings: Settings) -> Embedder:
    """The embedder of ``hello-memory serve``: the configured one behind the coalescing
    worker (``embedding/batching.py``) when ``api.embed_batching`` is on, so concurrent
    requests share batched forward passes; the plain one otherwise. The caller closes
    it (``close()``) after the manager."""
    embedder = build_embedder(settings.embedding)
    api = settings.api
    if not api.embed_batching:
        return embedder
    from hello_memory.embedding.batching import CoalescingEmbedder

    return CoalescingEmbedder(embedder, window_ms=api.embed_batch_window_ms,
                              max_batch=settings.embedding.batch_size, threads=api.embed_threads)


def build_extractor(cfg: SemanticSettings, analysis_chars: int | None = None
                    ) -> EntityExtractor:
    """The entity extractor ``semantic.extractor`` names: ``rules``, ``spacy`` (the
    pipeline must load) or, by default, spaCy when a pipeline is installed, else rules;
    it reads the first ``analysis_chars`` characters of a text (``limits.analysis_chars``;
    None: that setting's default)."""
    from hello_memory.text.entities import (
        DEFAULT_ANALYSIS_CHARS,
        RuleExtractor,
        SpacyExtractor,
        default_extractor,
    )

    n = DEFAULT_ANALYSIS_CHARS if analysis_chars is None else analysis_chars
    if cfg.extractor == "rules":
        return RuleExtractor(n)
    if cfg.extractor == "spacy":
        return SpacyExtractor(cfg.spacy_model, require=True, max_chars=n)
    return default_extractor(spacy_model=cfg.spacy_model, max_chars=n)


def build_perceptual(settings: Settings, stores: Stores) -> PerceptualMemory:
    """Perceptual memory over the bundle's stores, with the encoders the settings
    configure (an encoder without weights fails on first use, naming its setting)."""
    try:
        from hello_memory.embedding.clap import ClapEncoder
        from hello_memory.embedding.clip import ClipEncoder
        from hello_memory.memory.perceptual import PerceptualMemory
    except ImportError as exc:
        raise ConfigError("perceptual.enabled needs the multimodal extra: "
                          f"pip install 'hello-memory[multimodal]' ({exc})") from exc
    p = settings.perceptual
    image = ClipEncoder(p.image.model, p.image.pretrained) if p.image.pretrained else None
    audio = (ClapEncoder(p.audio.model, checkpoint=p.audio.checkpoint,
                         tokenizer=p.audio.tokenizer, allow_pickle=p.audio.allow_pickle)
             if p.audio.checkpoint else None)
    return PerceptualMemory(stores.records, stores.vectors, text_embedder=stores.embedder,
                            image_encoder=image, audio_encoder=audio)


def open_stores(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    extractor: Extractor | None = None,
) -> Stores:
    """Build and open every store named by ``settings``. Close with ``.close()``."""
    from hello_memory.embedding.identity import check_embedder, record_embedder
    from hello_memory.stores.bundle import Stores
    from hello_memory.stores.lexical_version import check_lexical_version

    records = build_record_store(settings)
    records.open()
    try:
        text_embedder = embedder or build_embedder(settings.embedding)
        # Same-size models would mix silently: the data names its model (no model load).
        known = check_embedder(records, text_embedder)
        stores = Stores(records, build_vector_store(settings), build_graph_store(settings, records),
                        text_embedder, extractor=extractor)
        stores.guard_disk(settings.data_dir, settings.storage.min_free_bytes)
        if settings.perceptual.enabled:
            from hello_memory.types import MemoryType

            stores.register_indexer(MemoryType.PERCEPTUAL, build_perceptual(settings, stores))
        stores.open()
        # Keyword (BM25) vectors of an older analyzer: warn, reindex rebuilds them.
        check_lexical_version(records)
        if not known:  # only once the collections accepted this embedder's dimension
            try:
                record_embedder(records, text_embedder)
            except BaseException:
                stores.close()
                raise
    except BackendUnavailableError as exc:
        records.close()
        held = _held_message(settings, exc)
        if held is None:
            raise
        raise BackendUnavailableError(held) from exc
    except BaseException:
        records.close()
        raise
    return stores


def _held_message(settings: Settings, exc: BackendUnavailableError) -> str | None:
    """When the embedded directory is locked: by a running ``hello-memory serve`` (its
    server.json names a live process), say which and how to use it instead of opening
    the directory; by another process, how processes share one (issue 29)."""
    from hello_memory.server_info import pid_alive, read_info

    if "already open" not in str(exc):
        return None
    info = read_info(settings.data_dir)
    if info is None or not pid_alive(info.pid):
        return (f"the data directory {settings.data_dir} is open in another process (one "
                "process opens an embedded directory): close that one, or run `hello-memory "
                "serve` on the directory and reach it through hello_memory.Client or the "
                "CLI's --server; processes can also share a Qdrant server (vector.url)")
    return (f"{info.describe()} holds the data directory {settings.data_dir}: one process "
            f"opens an embedded directory. Use that server instead: from Python "
            f"hello_memory.Client({info.url!r}, api_key=...), from the CLI "
            f"--server {info.url} (found by itself when it runs in this directory), or its "
            f"REST API ({info.url}/docs); or stop it first")
