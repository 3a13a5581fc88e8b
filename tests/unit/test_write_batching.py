"""The server's one writer (memory/write_batching.py, issue 27): adds that arrive while
another is being stored are stored together, and each caller gets what its own
``add_many`` would give it. Real stores and the default model (a manager opened on a
temporary directory); the first write is held on an event so that a batch forms every
time, whatever the machine's speed. Nothing here asserts a timing."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.errors import InvalidInputError
from hello_memory.memory.manager import MemoryManager
from hello_memory.memory.write_batching import CoalescingWriter
from hello_memory.types import MemoryItem

pytestmark = pytest.mark.slow

NS = "w"


class Held:
    """The manager's add_embedded (what the writer stores through), counted; the first
    call waits for ``release``."""

    def __init__(self, mm: MemoryManager) -> None:
        self.mm = mm
        self.calls: list[int] = []
        self.embedded: list[set[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def add_embedded(self, entries: Sequence[Mapping[str, Any]], *,
                     on_duplicate: str | None = None,
                     embedded: Mapping[str, Any] | None = None) -> list[MemoryItem]:
        self.calls.append(len(entries))
        self.embedded.append(set(embedded or {}))
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(60)
        return self.mm.add_embedded(entries, on_duplicate=on_duplicate, embedded=embedded)


@pytest.fixture(scope="module")
def mm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    manager = MemoryManager.open(load_settings(
        environ={}, data_dir=tmp_path_factory.mktemp("writer"),
        semantic={"extractor": "rules"}))
    yield manager
    manager.close()


def _concurrently(writer: CoalescingWriter, held: Held,
                  calls: list[tuple[list[dict[str, Any]], str | None]]
                  ) -> list[list[MemoryItem] | BaseException]:
    """A first call that holds the worker, then ``calls`` from threads of their own
    while it is held; every result (or error) in the order of ``calls``."""
    first = threading.Thread(target=writer.add_many, args=(
        [{"content": "The first call holds the writer.", "namespace": NS}],))
    first.start()
    assert held.entered.wait(60)
    out: list[list[MemoryItem] | BaseException | None] = [None] * len(calls)

    def run(n: int) -> None:
        entries, mode = calls[n]
        try:
            out[n] = writer.add_many(entries, on_duplicate=mode)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out[n] = exc

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    for n, t in enumerate(threads):
        t.start()
        while writer.queued < n + 1:  # queued in this order
            threading.Event().wait(0.001)
    held.release.set()
    for t in [first, *threads]:
        t.join(60)
    assert all(r is not None for r in out)
    return out  # type: ignore[return-value]


def test_concurrent_adds_are_stored_together_and_each_caller_gets_its_own(
        mm: MemoryManager) -> None:
    held = Held(mm)
    writer = CoalescingWriter(held)
    try:
        texts = [f"Sam brought {n} jars of plum jam to the market stall." for n in range(12)]
        results = _concurrently(writer, held, [
            ([{"content": t, "namespace": NS}], None) for t in texts])
    finally:
        writer.close()
    assert held.calls == [1, 12]  # the held first write, then one write for the twelve
    for text, result in zip(texts, results, strict=True):
        assert isinstance(result, list) and [i.content for i in result] == [text]
        assert mm.get(result[0].id, namespace=NS).content == text


def test_a_bad_entry_fails_only_its_own_caller(mm: MemoryManager) -> None:
    held = Held(mm)
    writer = CoalescingWriter(held)
    try:
        results = _concurrently(writer, held, [
            ([{"content": "Lena repaired the blue bicycle.", "namespace": NS}], None),
            ([{"content": "   ", "namespace": NS}], None),  # empty: refused
            ([{"content": "Omar planted tulips by the gate.", "namespace": NS}], None)])
    finally:
        writer.close()
    good_a, bad, good_b = results
    assert isinstance(bad, InvalidInputError)
    assert isinstance(good_a, list) and isinstance(good_b, list)
    assert mm.get(good_a[0].id, namespace=NS).content == "Lena repaired the blue bicycle."
    assert mm.get(good_b[0].id, namespace=NS).content == "Omar planted tulips by the gate."
    assert held.calls[1] == 3  # merged first, then each alone again
    assert sorted(held.calls[2:]) == [1, 1, 1]


def test_a_repeat_in_one_batch_is_a_duplicate_and_modes_are_not_merged(
        mm: MemoryManager) -> None:
    held = Held(mm)
    writer = CoalescingWriter(held)
    text = "Priya's flight to Lisbon leaves at 7:40 on Friday."
    try:
        first, repeat, kept = _concurrently(writer, held, [
            ([{"content": text, "namespace": NS}], None),
            ([{"content": text, "namespace": NS}], None),
            ([{"content": text, "namespace": NS}], "store")])
    finally:
        writer.close()
    assert isinstance(first, list) and isinstance(repeat, list) and isinstance(kept, list)
    assert first[0].duplicate_of is None
    assert repeat[0].duplicate_of == first[0].id  # as a repeat in one add_many
    assert kept[0].id != first[0].id  # "store" keeps a copy: another batch
    assert held.calls[1:] == [2, 1]


def test_callers_embed_their_own_texts_and_the_writer_embeds_none(
        mm: MemoryManager, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``embed`` (the server's writer), each caller embeds its texts before it
    queues them and the merged write reuses those vectors: the writer's thread embeds
    nothing, and what it stored is found by its own text. An entry the embedder
    refuses still gets the add path's own error."""
    model = mm.stores.embedder
    by_thread: list[tuple[str, list[str]]] = []
    real = model.embed

    def counted(texts: Sequence[str]) -> Any:
        by_thread.append((threading.current_thread().name, list(texts)))
        return real(texts)

    monkeypatch.setattr(model, "embed", counted)
    held = Held(mm)
    writer = CoalescingWriter(held, embed=model.embed)
    texts = [f"Ines labelled {n} boxes of winter clothes for the attic." for n in range(5)]
    try:
        results = _concurrently(writer, held, [
            *[([{"content": t, "namespace": NS}], None) for t in texts],
            ([{"content": "", "namespace": NS}], None)])
    finally:
        writer.close()
    assert isinstance(results[-1], InvalidInputError)
    assert held.embedded[1] >= set(texts)  # the merged write got every caller's vector
    assert not [t for name, t in by_thread if name == "hello-memory-writer"]
    for text, result in zip(texts, results[:-1], strict=True):
        assert isinstance(result, list)
        hits = mm.search(text, namespace=NS, top_k=1, recipe="per-type")
        assert hits and hits[0].item.id == result[0].id


def test_after_close_calls_store_themselves(mm: MemoryManager) -> None:
    held = Held(mm)
    held.release.set()
    writer = CoalescingWriter(held)
    writer.add_many([{"content": "Before closing.", "namespace": NS}])
    writer.close()
    writer.close()  # idempotent
    after = writer.add_many([{"content": "After closing.", "namespace": NS}])
    assert mm.get(after[0].id, namespace=NS).content == "After closing."
    assert held.calls == [1, 1]
