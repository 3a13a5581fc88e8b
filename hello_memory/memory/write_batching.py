"""One writer per server that stores concurrent adds together (issue 27, item 3).

``hello-memory serve`` answers each request on a thread of its own. A single-memory
add costs about 7 ms of work besides its embedding (the duplicate check, the
supersession rules, one records transaction, the index), nearly all of it holding the
interpreter, so concurrent adds queued behind one another at about 100 a second on two
cores however well their embeddings were batched. :meth:`MemoryManager.add_many`
does the same work for many memories at about a millisecond each: one embedding
batch, one transaction.

:class:`CoalescingWriter` puts each ``add_many`` call on a queue; one worker thread
takes every call queued when it is free (never splitting one, at most ``max_items``
memories) and stores them with one ``add_many`` of the manager, then hands each caller
its own items. A lone caller waits for nothing: calls batch only while a write is
already running, the way the embedding worker batches (embedding/batching.py).

Given ``embed`` (the server passes its embedder), each caller embeds its own entries
before it queues them: concurrent callers' texts go to the embedding worker together
while the writer stores the previous batch, so embedding (native code, off the
interpreter) and storing overlap instead of taking turns. The writer hands the vectors
on to ``add_embedded``, which uses one only for an entry whose text is exactly
the one embedded; an entry the embedder refuses goes without, so the add path reports
its error as it would.

What a caller sees is what its own ``add_many`` would give it:

* entries are stored in arrival order, so a later call's memory is the newer one
  (supersession and duplicates between calls of one batch follow
  :meth:`~hello_memory.memory.manager.MemoryManager.add_many`'s rules for entries of
  one call: a repeat of an earlier entry is a duplicate of it);
* calls with different ``on_duplicate`` modes are never merged;
* when a merged batch fails (one caller's bad entry, which stores nothing), each call
  of it is run again alone, so the error reaches its own caller and the others store;
* :meth:`close` answers what is queued and joins the worker; later calls run on the
  manager in the caller's thread.

The library path (``MemoryManager.add_many`` without ``serve``) does not use it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hello_memory.errors import InvalidInputError
from hello_memory.types import MemoryItem

__all__ = ["CoalescingWriter"]


class Adder(Protocol):
    """What the writer stores through: the facade's ``add_embedded`` (this module never
    imports the facade: docs/ARCHITECTURE.md, Layers)."""

    def add_embedded(self, entries: Sequence[Mapping[str, Any]], *,
                     on_duplicate: str | None = None,
                     embedded: Mapping[str, Any] | None = None) -> list[MemoryItem]: ...


@dataclass
class _Call:
    entries: list[Mapping[str, Any]]
    on_duplicate: str | None
    embedded: dict[str, Any] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)
    items: list[MemoryItem] | None = None
    error: BaseException | None = None


class CoalescingWriter:
    """``add_many`` calls from any number of threads, stored together by one worker
    (module docstring). ``max_items``: memories per merged write (at most
    ``limits.max_batch``); ``max_pending``: calls queued at most (a caller blocks
    while the queue is full)."""

    def __init__(self, manager: Adder, *, max_items: int = 64,
                 max_pending: int = 1024,
                 embed: Callable[[Sequence[str]], Any] | None = None) -> None:
        if max_items < 1 or max_pending < 1:
            raise InvalidInputError("max_items and max_pending must be positive")
        self.manager = manager
        self.embed = embed
        self.max_items = max_items
        self.max_pending = max_pending
        self._cond = threading.Condition()
        self._queue: deque[_Call] = deque()
        self._closed = False
        self._worker: threading.Thread | None = None
        # What the worker did (read by tests and benchmarks; written by the worker only).
        self.writes = 0
        self.calls_served = 0

    # --- the caller's side --------------------------------------------------------------
    def add_many(self, entries: Sequence[Mapping[str, Any]], *,
                 on_duplicate: str | None = None) -> list[MemoryItem]:
        """What ``manager.add_many(entries, on_duplicate=...)`` returns, stored together
        with the calls that overlap it."""
        call = _Call(list(entries), on_duplicate)
        if threading.current_thread() is self._worker:  # never wait on ourselves
            return self._direct(call)
        self._embed(call)
        with self._cond:
            while not self._closed and len(self._queue) >= self.max_pending:
                self._cond.wait()  # bounded queue: back-pressure on the caller
            closed = self._closed
            if not closed:
                self._queue.append(call)
                if self._worker is None:
                    self._worker = threading.Thread(target=self._run, daemon=True,
                                                    name="hello-memory-writer")
                    self._worker.start()
                self._cond.notify_all()
        if closed:
            return self._direct(call)
        call.done.wait()
        if call.error is not None:
            raise call.error
        assert call.items is not None
        return call.items

    def close(self, timeout: float = 60.0) -> None:
        """Answer what is queued, stop the worker and join it (idempotent)."""
        with self._cond:
            self._closed = True
            worker = self._worker
            self._cond.notify_all()
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout)

    @property
    def queued(self) -> int:
        with self._cond:
            return len(self._queue)

    def _embed(self, call: _Call) -> None:
        """The caller's texts embedded in its own thread (module docstring); nothing
        when the embedder refuses one (the add path then reports why)."""
        if self.embed is None:
            return
        texts = list(dict.fromkeys(
            e["content"] for e in call.entries
            if isinstance(e.get("content"), str) and e["content"].strip()
            and e.get("memory_type") != "working"))
        if not texts:
            return
        try:
            call.embedded = dict(zip(texts, self.embed(texts), strict=True))
        except Exception:  # the add path embeds again and reports its own error
            return

    def _direct(self, call: _Call) -> list[MemoryItem]:
        return self.manager.add_embedded(call.entries, on_duplicate=call.on_duplicate,
                                         embedded=call.embedded)

    # --- the worker ---------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while True:
                batch = self._next()
                if batch is None:
                    return
                self._write(batch)
        except BaseException as exc:  # a dead worker must leave no one waiting
            with self._cond:
                self._closed = True  # later calls run on the manager themselves
                left = list(self._queue)
                self._queue.clear()
                self._cond.notify_all()
            for call in left:
                call.error = exc
                call.done.set()
            raise

    def _next(self) -> list[_Call] | None:
        """The calls queued now with the first one's ``on_duplicate``, in order, up to
        ``max_items`` memories (one call larger than that goes alone); None once closed
        with nothing left."""
        with self._cond:
            while not self._queue:
                if self._closed:
                    return None
                self._cond.wait()
            first = self._queue.popleft()
            batch, size = [first], len(first.entries)
            kept: deque[_Call] = deque()
            while self._queue:
                call = self._queue.popleft()
                if (call.on_duplicate == first.on_duplicate
                        and size + len(call.entries) <= self.max_items):
                    batch.append(call)
                    size += len(call.entries)
                else:
                    kept.append(call)  # its turn comes next, in its place
            self._queue.extendleft(reversed(kept))
            self._cond.notify_all()  # room in the queue for blocked callers
            return batch

    def _write(self, batch: list[_Call]) -> None:
        try:
            if len(batch) == 1:
                self._answer(batch[0])
                return
            entries = [e for call in batch for e in call.entries]
            embedded = {t: v for call in batch for t, v in call.embedded.items()}
            try:
                items = self.manager.add_embedded(entries, on_duplicate=batch[0].on_duplicate,
                                                  embedded=embedded)
            except Exception:  # one caller's bad entry stores nothing: each alone again
                for call in batch:
                    self._answer(call)
                return
            self.writes += 1
            start = 0
            for call in batch:
                call.items = items[start:start + len(call.entries)]
                start += len(call.entries)
                self.calls_served += 1
                call.done.set()
        except BaseException as exc:  # the worker must not leave anyone waiting
            for call in batch:
                if not call.done.is_set():
                    call.error = exc
                    call.done.set()
            raise

    def _answer(self, call: _Call) -> None:
        try:
            call.items = self._direct(call)
            self.writes += 1
        except Exception as exc:
            call.error = exc
        self.calls_served += 1
        call.done.set()
