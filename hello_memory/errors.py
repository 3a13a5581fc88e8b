"""The one exception tree of hello-memory.

Every error raised on purpose by the library derives from :class:`HelloMemoryError`;
backends translate their SDK's exceptions at the boundary (``raise ... from exc``)
so callers never need to import qdrant-client, neo4j or SQLAlchemy to catch them::

    HelloMemoryError
    ├── ConfigError                  bad settings file / env / argument
    │   ├── UnknownConfigKeyError    a key no model declares (names the key)
    │   └── PerceptualNotConfiguredError  images / audio used while perceptual memory is off
    ├── InvalidInputError            bad caller input; nothing was written
    │   ├── EmptyContentError
    │   ├── InvalidImportanceError
    │   ├── NamespaceRequiredError   a store call without a namespace
    │   └── VectorError              NaN / inf in a vector
    │       └── DimensionMismatchError   names the collection and both sizes
    ├── NotFoundError                an id that does not exist (in that namespace)
    ├── JobBusyError                 a maintenance job asked to run while it runs
    ├── EmbeddingError
    │   └── ModelNotFoundError       names the setting to change
    └── StoreError                   a backend failed
        ├── BackendUnavailableError  cannot reach a server / open a file
        ├── InsufficientStorageError under storage.min_free_bytes (HTTP 507)
        ├── IndexWorkError           index work of a committed record failed
        ├── SchemaVersionError       record store schema newer than this code
        ├── RecordStoreError
        ├── VectorStoreError
        └── GraphStoreError

The LLM client adds its own branch in :mod:`hello_memory.llm.base`: ``LLMError`` >
``LLMUnavailableError`` (also a BackendUnavailableError), ``LLMResponseError``,
``LLMSchemaError``.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailableError",
    "CollectionNotFoundError",
    "ConfigError",
    "DimensionMismatchError",
    "EmbeddingError",
    "EmptyContentError",
    "GraphStoreError",
    "HelloMemoryError",
    "IndexWorkError",
    "InsufficientStorageError",
    "InvalidImportanceError",
    "InvalidInputError",
    "JobBusyError",
    "ModelNotFoundError",
    "NamespaceRequiredError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PerceptualNotConfiguredError",
    "RecordStoreError",
    "SchemaVersionError",
    "StoreError",
    "UnknownConfigKeyError",
    "VectorError",
    "VectorStoreError",
]


class HelloMemoryError(Exception):
    """Root of every error hello-memory raises on purpose."""


# --- configuration -------------------------------------------------------------------
class ConfigError(HelloMemoryError):
    """Settings could not be loaded or validated."""


class UnknownConfigKeyError(ConfigError):
    """A settings key that no configuration model declares."""

    def __init__(self, key: str, source: str = "settings") -> None:
        self.key = key
        self.source = source
        super().__init__(f"unknown configuration key {key!r} in {source}")


# --- caller input --------------------------------------------------------------------
class PerceptualNotConfiguredError(ConfigError):
    """Perceptual memory (images, audio) was used while it is off; the message names
    the extra to install and the settings to set (HTTP 501)."""


class InvalidInputError(HelloMemoryError, ValueError):
    """The caller passed something invalid. Nothing was written."""


class EmptyContentError(InvalidInputError):
    """Content is empty or whitespace only."""


class InvalidImportanceError(InvalidInputError):
    """Importance is not a finite number in [0, 1]."""

    def __init__(self, value: object) -> None:
        self.value = value
        super().__init__(f"importance must be a finite number in [0, 1], got {value!r}")


class NamespaceRequiredError(InvalidInputError):
    """A store call was made without a namespace (isolation fails closed)."""


class PayloadTooLargeError(InvalidInputError):
    """A request (REST body, MCP tool call) is over the configured size limit."""


class VectorError(InvalidInputError):
    """A vector is malformed (NaN, infinity, wrong shape)."""


class DimensionMismatchError(VectorError):
    """A vector's size differs from its collection's configured size."""

    def __init__(self, collection: str, expected: int, got: int, vector_name: str = "") -> None:
        self.collection = collection
        self.expected = expected
        self.got = got
        self.vector_name = vector_name
        named = f" (vector {vector_name!r})" if vector_name else ""
        super().__init__(
            f"collection {collection!r}{named} holds vectors of size {expected}, got size {got}"
        )


# --- lookups -------------------------------------------------------------------------
class NotFoundError(HelloMemoryError, KeyError):
    """No such object (in the given namespace)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class JobBusyError(HelloMemoryError):
    """A maintenance job was asked to run while a run of it is still going."""


# --- embeddings ----------------------------------------------------------------------
class EmbeddingError(HelloMemoryError):
    """An embedder failed to load or to encode."""


class ModelNotFoundError(EmbeddingError):
    """The configured model cannot be loaded; the message names the setting."""

    def __init__(self, model: str, setting: str, reason: str = "") -> None:
        self.model = model
        self.setting = setting
        detail = f": {reason}" if reason else ""
        super().__init__(
            f"cannot load model {model!r}{detail}. Set {setting} to a local model directory "
            "or a model name that is available offline"
        )


# --- backends ------------------------------------------------------------------------
class StoreError(HelloMemoryError):
    """A storage backend failed."""


class BackendUnavailableError(StoreError):
    """A backend could not be reached or opened."""


class InsufficientStorageError(StoreError):
    """Free disk space is under ``storage.min_free_bytes``: the write was refused
    before anything was written (HTTP 507)."""


class IndexWorkError(StoreError):
    """Index work (embedding, vectors, graph extraction) for a committed record failed;
    the record stays pending for ``reconcile`` (an outbox row)."""


class SchemaVersionError(StoreError):
    """The record store's schema cannot be used by this version of hello-memory."""


class RecordStoreError(StoreError):
    """The relational record store failed."""


class VectorStoreError(StoreError):
    """The vector store failed."""


class CollectionNotFoundError(VectorStoreError):
    """The vector collection does not exist (never created in this store)."""


class GraphStoreError(StoreError):
    """The graph store failed."""
