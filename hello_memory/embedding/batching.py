"""One embedding worker per process that coalesces concurrent requests (issue 27, item 3).

``hello-memory serve`` answers each request on a thread of its own; without this
wrapper every request ran its own forward pass, and N concurrent single-memory adds
cost N passes, each also asking torch for every core (docs/PERFORMANCE.md, "A server
that batches"). :class:`CoalescingEmbedder` wraps any
:class:`~hello_memory.embedding.base.Embedder` and is one itself:

* every ``embed`` / ``embed_query`` call is put on a bounded queue and answered by one
  worker thread, which runs one forward pass for everything queued (up to a batch);
  while callers overlap it first waits a short window (``window_ms``, or until the
  batch fills) for more to arrive, and a lone caller waits for nothing;
* queries have their own queue and their own small batch (``query_batch``) and are
  served first: a search never waits behind more than the one passage batch that is
  already running;
* the engine's intra-op thread count (ONNX Runtime's or torch's) is set once, on
  the worker (``threads``), not per request thread;
* a batch that fails is run again per request, so a bad input fails only its own
  caller; any error reaches every caller it concerns;
* :meth:`close` answers what is queued, stops the worker and joins it; a call after
  ``close`` runs on the wrapped embedder in the caller's thread.

The library path (``MemoryManager.open`` without ``serve``) does not use it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from hello_memory.embedding.base import Embedder, validate_texts
from hello_memory.embedding.sentence_transformer import SentenceTransformerEmbedder
from hello_memory.errors import EmbeddingError, EmptyContentError, InvalidInputError

__all__ = ["CoalescingEmbedder", "batch_query_encoder"]

Vectors = npt.NDArray[np.float32]


def batch_query_encoder(embedder: object) -> Callable[[list[str]], Vectors] | None:
    """How to encode several search queries in one call, or None when ``embedder`` has
    no batch form (its ``embed_query`` is then called once per query).

    An embedder may offer ``embed_queries(texts)``; for the sentence-transformers
    embedder a query is encoded exactly as a one-text batch (its ``embed_query`` is
    ``embed([text])[0]``), so its ``embed`` is the batch form. Engines whose queries
    differ from passages (e5's ``query:`` prefix, ``embedding/packaged.py``) keep their
    own ``embed_query``. Used by the server's coalescing worker below; it lives here,
    not in ``embedding/base.py``, which the sentence-transformers embedder imports
    (docs/ARCHITECTURE.md "Known debts": no import cycle)."""
    batch = getattr(embedder, "embed_queries", None)
    if callable(batch):
        return batch
    if (isinstance(embedder, SentenceTransformerEmbedder)
            and type(embedder).embed_query is SentenceTransformerEmbedder.embed_query):
        return embedder.embed
    return None


@dataclass
class _Request:
    """One caller's texts; the worker fills ``out`` (possibly over several batches)."""

    texts: list[str]
    out: Vectors
    done: threading.Event = field(default_factory=threading.Event)
    next: int = 0  # first text not yet handed to a batch
    filled: int = 0  # texts whose vectors are in ``out``
    error: BaseException | None = None

    def finish(self, error: BaseException | None = None) -> None:
        if error is not None and self.error is None:
            self.error = error
        self.done.set()


class CoalescingEmbedder:
    """An :class:`~hello_memory.embedding.base.Embedder` whose calls, from any number
    of threads, are answered in batches by one worker thread (module docstring).

    ``max_batch``: texts per passage forward pass (default: the wrapped embedder's
    ``batch_size``, else 64); ``query_batch``: queries per pass; ``max_pending``: texts
    queued at most (a caller blocks while the queue is full; one call larger than the
    bound is taken when the queue is empty); ``threads``: intra-op threads for the
    worker (ONNX Runtime's or torch's; None: leave the engine's setting)."""

    def __init__(self, inner: Embedder, *, window_ms: float = 2.0, max_batch: int | None = None,
                 query_batch: int = 16, max_pending: int = 4096,
                 threads: int | None = None) -> None:
        if window_ms < 0:
            raise InvalidInputError(f"window_ms must be >= 0, got {window_ms!r}")
        batch = max_batch if max_batch is not None else getattr(inner, "batch_size", 64)
        if not isinstance(batch, int) or batch < 1:
            batch = 64
        if query_batch < 1 or max_pending < 1:
            raise InvalidInputError("query_batch and max_pending must be positive")
        if threads is not None and threads < 1:
            raise InvalidInputError(f"threads must be positive or None, got {threads!r}")
        self.inner = inner
        self.window_s = window_ms / 1000.0
        self.max_batch = batch
        self.query_batch = query_batch
        self.max_pending = max_pending
        self.threads = threads
        self._cond = threading.Condition()
        self._queries: deque[_Request] = deque()
        self._passages: deque[_Request] = deque()
        self._pending = 0  # texts queued and not yet handed to a batch
        self._closed = False
        self._worker: threading.Thread | None = None
        self._last_batch_requests = 0  # requests in the last batch, or still queued then
        self._query_encoder: Callable[[list[str]], Vectors] | None = batch_query_encoder(inner)
        # What the worker did (read by tests and benchmarks; written by the worker only).
        self.forward_passes = 0
        self.requests_served = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r}, window_ms={self.window_s * 1000:g})"

    # --- identity: the wrapped embedder's ---------------------------------------------
    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def __getattr__(self, attr: str) -> object:
        # Anything else (batch_size, model, ...) is the wrapped embedder's. Only called
        # for attributes not found on self, so the wrapper's own state is never shadowed.
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    # --- the Embedder protocol ----------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> Vectors:
        items = validate_texts(texts)  # bad input fails here, before it reaches a batch
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._submit(items, query=False)

    def embed_query(self, text: str) -> Vectors:
        if not isinstance(text, str):
            raise InvalidInputError(f"query must be a str, got {type(text).__name__}")
        if not text.strip():
            raise EmptyContentError("query is empty or whitespace only")
        return self._submit([text], query=True)[0]

    # --- lifecycle ----------------------------------------------------------------------
    def close(self, timeout: float = 30.0) -> None:
        """Answer what is queued, stop the worker and join it. Idempotent; later calls
        run on the wrapped embedder in the caller's thread."""
        with self._cond:
            self._closed = True
            worker = self._worker
            self._cond.notify_all()
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout)

    @property
    def queued(self) -> int:
        """Texts waiting for a batch (not counting the batch being computed)."""
        with self._cond:
            return self._pending

    @property
    def running(self) -> bool:
        """Whether the worker thread is alive."""
        return self._worker is not None and self._worker.is_alive()

    def __enter__(self) -> CoalescingEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the caller's side --------------------------------------------------------------
    def _direct(self, items: list[str], query: bool) -> Vectors:
        if query:
            return np.asarray(self.inner.embed_query(items[0]), dtype=np.float32)[None, :]
        return np.asarray(self.inner.embed(items), dtype=np.float32)

    def _submit(self, items: list[str], *, query: bool) -> Vectors:
        if threading.current_thread() is self._worker:  # never wait on ourselves
            return self._direct(items, query)
        dim = self.dimension  # loads the model in the caller, once, before queuing
        request = _Request(items, np.zeros((len(items), dim), dtype=np.float32))
        with self._cond:
            while (not self._closed and self._pending > 0
                   and self._pending + len(items) > self.max_pending):
                self._cond.wait()  # bounded queue: back-pressure on the caller
            closed = self._closed
            if not closed:
                (self._queries if query else self._passages).append(request)
                self._pending += len(items)
                if self._worker is None:
                    self._worker = threading.Thread(target=self._run, daemon=True,
                                                    name="hello-memory-embedder")
                    self._worker.start()
                self._cond.notify_all()
        if closed:
            return self._direct(items, query)
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request.out

    # --- the worker ---------------------------------------------------------------------
    def _run(self) -> None:
        if self.threads is not None:
            self._set_threads(self.threads)  # once, for this worker (issue 27)
        try:
            while True:
                taken = self._next_batch()
                if taken is None:
                    return
                query, parts = taken
                self._run_batch(query, parts)
        except BaseException as exc:  # the worker must not leave anyone waiting
            self._fail_all(EmbeddingError(f"the embedding worker stopped: {exc}"))
            raise

    def _set_threads(self, threads: int) -> None:
        """The wrapped embedder's intra-op threads: its own ``set_threads`` (the
        default embedder: the ONNX session's count, or torch's), else torch's count
        when torch is what it runs on; an engine with neither keeps its own."""
        setter = getattr(self.inner, "set_threads", None)
        if callable(setter):
            # a model that fails to load: each request gets that error itself
            with contextlib.suppress(Exception):
                setter(threads)
            return
        import sys

        torch = sys.modules.get("torch")  # never imported here: the core has no torch
        if torch is not None:
            torch.set_num_threads(threads)

    def _next_batch(self) -> tuple[bool, list[tuple[_Request, int, int]]] | None:
        """The next batch (queries first), as (request, start, stop) slices; None once
        closed with nothing left. Waits ``window_s`` after the first arrival for more."""
        with self._cond:
            while not self._queries and not self._passages:
                if self._closed:
                    return None
                self._cond.wait()
            # The window only pays when callers overlap: after a batch that served one
            # request alone, the next is taken at once (a lone client waits for nothing);
            # while one batch computes, the next requests queue up anyway.
            if self.window_s > 0 and self._last_batch_requests > 1 and not self._closed:
                deadline = time.monotonic() + self.window_s
                while not self._full():
                    left = deadline - time.monotonic()
                    if left <= 0 or self._closed:
                        break
                    self._cond.wait(left)
            query = bool(self._queries)
            queue, limit = ((self._queries, self.query_batch) if query
                            else (self._passages, self.max_batch))
            parts: list[tuple[_Request, int, int]] = []
            room = limit
            while queue and room > 0:
                request = queue[0]
                stop = min(len(request.texts), request.next + room)
                parts.append((request, request.next, stop))
                room -= stop - request.next
                request.next = stop
                if stop == len(request.texts):
                    queue.popleft()
            self._pending -= limit - room
            self._last_batch_requests = len({id(r) for r, _, _ in parts}
                                            | {id(r) for r in self._queries}
                                            | {id(r) for r in self._passages})
            self._cond.notify_all()  # room in the queue for blocked callers
            return query, parts

    def _full(self) -> bool:
        if self._queries:
            return len(self._queries) >= self.query_batch
        return sum(len(r.texts) - r.next for r in self._passages) >= self.max_batch

    def _encode(self, query: bool, texts: list[str]) -> Vectors:
        self.forward_passes += 1
        if query and self._query_encoder is None:
            raw = [self.inner.embed_query(t) for t in texts]  # no batch form: one by one
            return np.asarray(raw, dtype=np.float32).reshape(len(texts), -1)
        encode = self._query_encoder if query else self.inner.embed
        assert encode is not None
        vectors = np.asarray(encode(texts), dtype=np.float32)
        if vectors.shape[0] != len(texts):
            raise EmbeddingError(f"{self.name} returned {vectors.shape[0]} vectors for "
                                 f"{len(texts)} texts")
        return vectors

    def _run_batch(self, query: bool, parts: list[tuple[_Request, int, int]]) -> None:
        live = [(r, a, b) for r, a, b in parts if r.error is None]
        if not live:
            return
        texts = [t for r, a, b in live for t in r.texts[a:b]]
        try:
            vectors = self._encode(query, texts)
        except Exception as exc:
            if len(live) == 1:  # one caller's texts alone: the error is theirs
                live[0][0].finish(exc)
                return
            for part in live:  # isolate the failure: each caller's texts on their own
                self._run_one(query, *part)
            return
        at = 0
        for request, start, stop in live:
            self._deliver(request, start, stop, vectors[at:at + stop - start])
            at += stop - start

    def _run_one(self, query: bool, request: _Request, start: int, stop: int) -> None:
        if request.error is not None:
            return
        try:
            vectors = self._encode(query, request.texts[start:stop])
        except Exception as exc:
            request.finish(exc)  # a failed request is answered at once
            return
        self._deliver(request, start, stop, vectors)

    def _deliver(self, request: _Request, start: int, stop: int, vectors: Vectors) -> None:
        if request.error is not None:
            return
        try:
            request.out[start:stop] = vectors
        except ValueError as exc:  # a wrong shape is this caller's error, not the worker's
            request.finish(EmbeddingError(f"{self.name} returned vectors of shape "
                                          f"{vectors.shape}: {exc}"))
            return
        request.filled += stop - start
        if request.filled == len(request.texts):
            self.requests_served += 1
            request.finish()

    def _fail_all(self, error: BaseException) -> None:
        with self._cond:
            for queue in (self._queries, self._passages):
                while queue:
                    queue.popleft().finish(error)
            self._pending = 0
            self._closed = True
            self._cond.notify_all()
