"""The server's coalescing embedding worker (hello_memory/embedding/batching.py, issue 27
item 3): concurrent callers get exactly the plain embedder's vectors from fewer forward
passes, queries go first, a bad input fails only its own caller, and close leaves no
thread. The embedder is the real default model; the subclass below only records the
batches it is given and can hold one at a gate, so the tests decide what is queued
while a batch runs instead of relying on timing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from hello_memory.config import load_settings
from hello_memory.embedding import SentenceTransformerEmbedder
from hello_memory.embedding.batching import CoalescingEmbedder
from hello_memory.errors import EmbeddingError, EmptyContentError
from hello_memory.factory import build_server_embedder

TEXTS = [f"{name} met {other} in {place} and talked about {thing}."
         for name, other, place, thing in zip(
             ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Hana"] * 3,
             ["Ivan", "Judy", "Kim", "Lee", "Mia", "Ned", "Ola", "Pia"] * 3,
             ["Berlin", "Paris", "Tokyo", "Lisbon", "Lima", "Toronto", "Nairobi", "Oslo"] * 3,
             [f"topic {i}" for i in range(24)], strict=True)]
POISON = "POISON: this text makes the embedder fail"


class RecordingEmbedder(SentenceTransformerEmbedder):
    """The real default embedder; records each batch it encodes, can hold a batch at
    ``gate`` (set = open) and fails any batch holding ``POISON``."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        items = list(texts)
        self.batches.append(items)
        self.entered.set()
        assert self.gate.wait(60)
        if POISON in items:
            raise EmbeddingError("the model failed on this batch")
        return super().embed(items)


@pytest.fixture(scope="module")
def plain() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@pytest.fixture()
def recording() -> RecordingEmbedder:
    return RecordingEmbedder()


@pytest.fixture()
def wrapped(recording: RecordingEmbedder) -> Iterator[CoalescingEmbedder]:
    embedder = CoalescingEmbedder(recording, window_ms=0, max_batch=64)
    yield embedder
    recording.gate.set()
    embedder.close()
    assert not embedder.running


def _wait_until(check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def _hold_first_batch(recording: RecordingEmbedder, wrapped: CoalescingEmbedder
                      ) -> threading.Thread:
    """Start one request whose batch is held at the gate (the worker is then busy)."""
    recording.gate.clear()
    recording.entered.clear()
    first = threading.Thread(target=wrapped.embed, args=(["the first request"],))
    first.start()
    assert recording.entered.wait(60)
    return first


def _run_threads(targets: list[tuple[Callable[..., Any], tuple[Any, ...]]]
                 ) -> tuple[list[threading.Thread], list[Any]]:
    """Each call on a thread of its own, started; its result or exception lands in the
    returned list once the thread is joined."""
    results: list[Any] = [None] * len(targets)

    def call(i: int, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            results[i] = fn(*args)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            results[i] = exc

    threads = [threading.Thread(target=call, args=(i, fn, args))
               for i, (fn, args) in enumerate(targets)]
    for t in threads:
        t.start()
    return threads, results


def test_concurrent_callers_get_the_plain_vectors_from_fewer_forward_passes(
        plain: SentenceTransformerEmbedder, recording: RecordingEmbedder,
        wrapped: CoalescingEmbedder) -> None:
    first = _hold_first_batch(recording, wrapped)
    calls = ([(wrapped.embed, ([t],)) for t in TEXTS]
             + [(wrapped.embed_query, (t,)) for t in TEXTS])
    threads, results = _run_threads(calls)
    _wait_until(lambda: wrapped.queued == 2 * len(TEXTS))
    recording.gate.set()
    for t in [first, *threads]:
        t.join(60)
    docs = np.stack([r[0] for r in results[:len(TEXTS)]])
    queries = np.stack(results[len(TEXTS):])
    np.testing.assert_allclose(docs, plain.embed(TEXTS), atol=1e-5)
    np.testing.assert_allclose(queries, np.stack([plain.embed_query(t) for t in TEXTS]),
                               atol=1e-5)
    requests = 1 + 2 * len(TEXTS)
    assert wrapped.requests_served == requests
    # the held batch, one batch of the 24 queries (16 + 8 at query_batch 16) and one
    # of the 24 passages: far fewer passes than requests
    assert len(recording.batches) == wrapped.forward_passes == 4 < requests


def test_queries_are_served_before_queued_passages(
        recording: RecordingEmbedder, wrapped: CoalescingEmbedder) -> None:
    first = _hold_first_batch(recording, wrapped)
    big = [f"{t} (copy {i})" for i in range(10) for t in TEXTS]  # 240 texts: 4 batches
    threads, results = _run_threads([(wrapped.embed, (big,))])
    _wait_until(lambda: wrapped.queued == len(big))
    q_threads, q_results = _run_threads(
        [(wrapped.embed_query, ("where did Alice go?",))])
    _wait_until(lambda: wrapped.queued == len(big) + 1)
    recording.gate.set()
    for t in [first, *threads, *q_threads]:
        t.join(60)
    assert results[0].shape == (len(big), 384) and q_results[0].shape == (384,)
    # the held batch, then the query, then the passages in batches of at most 64
    assert recording.batches[1] == ["where did Alice go?"]
    assert [len(b) for b in recording.batches[2:]] == [64, 64, 64, 48]


def test_a_bad_input_fails_only_its_own_caller(
        plain: SentenceTransformerEmbedder, recording: RecordingEmbedder,
        wrapped: CoalescingEmbedder) -> None:
    first = _hold_first_batch(recording, wrapped)
    texts = [*TEXTS[:5], POISON]
    threads, results = _run_threads([(wrapped.embed, ([t],)) for t in texts])
    _wait_until(lambda: wrapped.queued == len(texts))
    recording.gate.set()
    for t in [first, *threads]:
        t.join(60)
    assert isinstance(results[-1], EmbeddingError)
    np.testing.assert_allclose(np.stack([r[0] for r in results[:5]]), plain.embed(TEXTS[:5]),
                               atol=1e-5)
    # the coalesced batch failed, then each request ran on its own
    assert POISON in recording.batches[1] and len(recording.batches[1]) == len(texts)
    # (in the failed batch's order: the threads queue in any order)
    assert recording.batches[2:] == [[t] for t in recording.batches[1]]
    with pytest.raises(EmptyContentError):  # checked in the caller, never queued
        wrapped.embed(["fine", "  "])


def test_close_answers_what_is_queued_and_leaves_no_thread(
        plain: SentenceTransformerEmbedder, recording: RecordingEmbedder) -> None:
    wrapped = CoalescingEmbedder(recording, window_ms=0)
    first = _hold_first_batch(recording, wrapped)
    threads, results = _run_threads([(wrapped.embed, ([t],)) for t in TEXTS[:6]])
    _wait_until(lambda: wrapped.queued == 6)
    closer = threading.Thread(target=wrapped.close)
    closer.start()
    recording.gate.set()
    for t in [first, *threads, closer]:
        t.join(60)
    assert not wrapped.running
    assert not [t for t in threading.enumerate() if t.name == "hello-memory-embedder"]
    np.testing.assert_allclose(np.stack([r[0] for r in results]), plain.embed(TEXTS[:6]),
                               atol=1e-5)
    # after close, calls run on the wrapped embedder in the caller's thread
    np.testing.assert_allclose(wrapped.embed_query(TEXTS[0]), plain.embed_query(TEXTS[0]),
                               atol=1e-5)
    assert not wrapped.running


def test_a_call_larger_than_the_queue_bound_still_runs(plain: SentenceTransformerEmbedder,
                                                        recording: RecordingEmbedder) -> None:
    with CoalescingEmbedder(recording, window_ms=0, max_batch=8, max_pending=10) as wrapped:
        out = wrapped.embed(TEXTS)
        assert [len(b) for b in recording.batches] == [8, 8, 8]
        np.testing.assert_allclose(out, plain.embed(TEXTS), atol=1e-5)
        assert wrapped.embed([]).shape == (0, 384)
    assert not wrapped.running


def test_serve_installs_the_worker_unless_switched_off() -> None:
    on = build_server_embedder(load_settings(environ={}))
    assert isinstance(on, CoalescingEmbedder)
    assert on.name == SentenceTransformerEmbedder().name and not on.running
    assert on.threads == 1  # api.embed_threads: the worker's torch threads, set once
    on.close()
    off = build_server_embedder(load_settings(
        environ={"HELLO_MEMORY__API__EMBED_BATCHING": "false"}))
    assert isinstance(off, SentenceTransformerEmbedder)
