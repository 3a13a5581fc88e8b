"""``AsyncMemoryManager``: the memory layer for ``async`` code.

>>> from hello_memory.interfaces.aio import AsyncMemoryManager                    # doctest: +SKIP
>>> async with await AsyncMemoryManager.open(data_dir="/tmp/hm") as amm:  # doctest: +SKIP
...     await amm.add("Alice prefers green tea.", "semantic", namespace="alice")
...     hits = await amm.search("what does Alice drink?", namespace="alice")

There is one implementation of every operation, :class:`~hello_memory.MemoryManager`'s.
This facade runs those blocking calls in a bounded thread pool (``max_workers``
threads, default 4), so an event loop never blocks on SQLite, Qdrant or the embedder,
and at most ``max_workers`` calls run at once (the rest wait their turn in the pool's
queue). Each method is derived from the synchronous one by :class:`_Async` (same
arguments, same result, same errors), never written twice. The caller's context
variables travel into the worker thread.

Any other blocking callable (a ``MemoryTool`` action, a context block, a catalogue
operation's handler) runs in the same pool through :meth:`AsyncMemoryManager.run`; the
framework adapters do that, and so do the REST API's routes (``async def``, generated
from :mod:`hello_memory.interfaces.catalogue`; the app's lifespan owns their facade and closes its
pool at shutdown).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from hello_memory.errors import InvalidInputError
from hello_memory.memory.manager import MemoryManager

if TYPE_CHECKING:
    from hello_memory.interfaces.tools.memory_tool import MemoryTool

__all__ = ["DEFAULT_MAX_WAITING", "DEFAULT_MAX_WORKERS", "AsyncMemoryManager"]

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_MAX_WORKERS = 4
# Threads of the second pool, for calls that mostly wait on another worker (the
# server's writer): see AsyncMemoryManager.run_waiting.
DEFAULT_MAX_WAITING = 64


class _Async(Generic[P, R]):
    """A descriptor: ``AsyncMemoryManager.<name>`` is ``MemoryManager.<name>`` run in
    the facade's pool. Typed from the synchronous method, so the awaitable takes the
    same parameters and returns the same type."""

    def __init__(self, method: Callable[Concatenate[MemoryManager, P], R]) -> None:
        self.method = method
        self.__doc__ = method.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> _Async[P, R]: ...

    @overload
    def __get__(self, obj: AsyncMemoryManager, owner: type) -> Callable[P, Awaitable[R]]: ...

    def __get__(self, obj: AsyncMemoryManager | None, owner: type
                ) -> _Async[P, R] | Callable[P, Awaitable[R]]:
        if obj is None:
            return self
        method = self.method
        manager = obj.manager

        @functools.wraps(method)
        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return await obj.run(method, manager, *args, **kwargs)

        return call


class AsyncMemoryManager:
    """An ``async`` face over one :class:`~hello_memory.MemoryManager` (module doc).

    Wrap a manager you opened (``AsyncMemoryManager(mm)``: closing the facade then
    leaves the manager open) or let :meth:`open` build one (the facade owns and closes
    it). ``max_workers`` bounds how many calls run at once."""

    def __init__(self, manager: MemoryManager, *, max_workers: int = DEFAULT_MAX_WORKERS,
                 owns_manager: bool = False, max_waiting: int = DEFAULT_MAX_WAITING) -> None:
        for name, value in (("max_workers", max_workers), ("max_waiting", max_waiting)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInputError(f"{name} must be a positive integer, got {value!r}")
        self.manager = manager
        self.max_workers = max_workers
        self.max_waiting = max_waiting
        self._owns = owns_manager
        self._pool = ThreadPoolExecutor(max_workers=max_workers,
                                        thread_name_prefix="hello-memory")
        self._waiting = ThreadPoolExecutor(max_workers=max_waiting,
                                           thread_name_prefix="hello-memory-wait")
        self._closed = False

    @classmethod
    async def open(cls, settings: Any = None, *, embedder: Any = None,
                   max_workers: int = DEFAULT_MAX_WORKERS, **overrides: Any
                   ) -> AsyncMemoryManager:
        """``MemoryManager.open(...)`` (loading the stores and the model) off the event
        loop; the facade owns the manager."""
        loop = asyncio.get_running_loop()
        manager = await loop.run_in_executor(None, functools.partial(
            MemoryManager.open, settings, embedder=embedder, **overrides))
        return cls(manager, max_workers=max_workers, owns_manager=True)

    @classmethod
    def wrap(cls, manager: MemoryManager | AsyncMemoryManager, *,
             max_workers: int = DEFAULT_MAX_WORKERS) -> AsyncMemoryManager:
        """``manager`` itself when it already is a facade, else a facade over it."""
        if isinstance(manager, AsyncMemoryManager):
            return manager
        return cls(manager, max_workers=max_workers)

    async def run(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Run any blocking callable in this facade's pool, with the caller's context
        variables, and return (or raise) what it does."""
        if self._closed:
            raise RuntimeError("this AsyncMemoryManager is closed")
        return await self._in(self._pool, fn, *args, **kwargs)

    async def run_waiting(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """:meth:`run` for a call that spends its time waiting on another worker: an
        add through the server's writer (memory/write_batching.py) validates and
        embeds, then waits while the writer stores it with the adds queued beside it.
        It runs in a second pool of ``max_waiting`` threads, so waiting adds hold none
        of the ``max_workers`` slots that searches need, and as many adds as clients
        send reach the writer's queue together (bigger merged writes; issue 27)."""
        if self._closed:
            raise RuntimeError("this AsyncMemoryManager is closed")
        return await self._in(self._waiting, fn, *args, **kwargs)

    @staticmethod
    async def _in(pool: ThreadPoolExecutor, fn: Callable[P, R], *args: P.args,
                  **kwargs: P.kwargs) -> R:
        ctx = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, functools.partial(ctx.run, fn, *args, **kwargs))

    async def context_for_query(self, tool: MemoryTool, query: str,
                                max_tokens: int | None = None, *,
                                reference_time: datetime | None = None,
                                recipe: str | None = None) -> str:
        """``tool.get_context_for_query(...)`` in the pool: the context block of
        ``tool``'s namespace, built from the one search's ranking."""
        return await self.run(tool.get_context_for_query, query, max_tokens,
                              reference_time=reference_time, recipe=recipe)

    async def close(self) -> None:
        """Wait for the calls in flight, stop the pool, and close the manager when this
        facade opened it. Closing twice is a no-op."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        for pool in (self._pool, self._waiting):
            await loop.run_in_executor(None, functools.partial(pool.shutdown, wait=True))
        if self._owns:
            await loop.run_in_executor(None, self.manager.close)

    async def __aenter__(self) -> AsyncMemoryManager:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- MemoryManager's operations, each the sync method run in the pool -------------
    add = _Async(MemoryManager.add)
    add_many = _Async(MemoryManager.add_many)
    search = _Async(MemoryManager.search)
    get = _Async(MemoryManager.get)
    update = _Async(MemoryManager.update)
    remove = _Async(MemoryManager.remove)
    stats = _Async(MemoryManager.stats)
    clear = _Async(MemoryManager.clear)
    export_jsonl = _Async(MemoryManager.export_jsonl)
    import_jsonl = _Async(MemoryManager.import_jsonl)
    forget = _Async(MemoryManager.forget)
    forget_ids = _Async(MemoryManager.forget_ids)
    restore = _Async(MemoryManager.restore)
    consolidate = _Async(MemoryManager.consolidate)
    reconcile = _Async(MemoryManager.reconcile)
    reindex = _Async(MemoryManager.reindex)
    optimize = _Async(MemoryManager.optimize)
