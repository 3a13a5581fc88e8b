"""``hello_memory.Client`` and ``AsyncClient``: a running ``hello-memory serve`` from Python.

>>> from hello_memory import Client                                    # doctest: +SKIP
>>> with Client("http://127.0.0.1:8765", api_key="...") as mem:        # doctest: +SKIP
...     mem.add("Alice prefers green tea", memory_type="semantic", namespace="alice")
...     hits = mem.search("what does Alice drink?", namespace="alice")

The shared operations have :class:`~hello_memory.MemoryManager`'s names, arguments and
return types (``add`` -> ``MemoryItem``, ``search`` -> ``list[SearchHit]``, ``forget`` ->
``ForgetReport``, ...), so code written against the library runs against a server by
changing how the object is made (docs/CLIENT.md). Each call is a catalogue operation
(:mod:`hello_memory.interfaces.catalogue`): its arguments are checked with the operation's request
model before anything is sent (bad input is the same ``InvalidInputError`` as locally)
and sent to the operation's REST route.

Errors come back typed: a problem document's ``error`` field names the class of
:mod:`hello_memory.errors` the server raised (``NotFoundError``, ``EmptyContentError``,
``JobBusyError``, ...), raised here with the server's ``detail``; the exception carries
``status`` and ``problem`` (the whole document). A refused key (401, 403) is a
``ConfigError``; a server that cannot be reached, or answers 429 or 5xx, a
``BackendUnavailableError`` or ``StoreError``.

Reads (the operations of scope ``read``: search, get, stats, export, ...) are retried
``retries`` times on a connection error, with a short back-off; writes are never
retried (a write whose answer was lost may have happened). Every request has a
``timeout`` (seconds); jobs and exports wait as long as they run.

There is one engine: :class:`Client` and :class:`AsyncClient` share every operation's
definition (one generator per operation, which yields its requests and returns its
result) and differ only in how a request is sent. The CLI's server path
(:mod:`hello_memory.interfaces.remote`) is this client.

The package: :mod:`~hello_memory.interfaces.client.convert` (JSON and problem documents back into
the library's types and errors), :mod:`~hello_memory.interfaces.client.engine` (a request, the
shared engine, the sync and async method descriptors),
:mod:`~hello_memory.interfaces.client.operations` (each operation's plan) and this module (the two
clients, which send the plans' requests).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

from hello_memory.errors import HelloMemoryError
from hello_memory.interfaces.client.convert import (
    check_server_url,
    error_from_problem,
    hit_from_json,
    item_from_json,
    job_run_from_json,
)
from hello_memory.interfaces.client.engine import (
    DEFAULT_TIMEOUT,
    Plan,
    R,
    _Async,
    _AsyncEngine,
    _Request,
    _result,
    _Sync,
    _SyncEngine,
)
from hello_memory.interfaces.client.operations import (
    SHARED_OPERATIONS,
    _add,
    _add_many,
    _clear,
    _consolidate,
    _context,
    _export_jsonl,
    _forget,
    _forget_ids,
    _get,
    _health,
    _invoke,
    _namespaces,
    _remove,
    _restore,
    _run_job,
    _search,
    _stats,
    _update,
)

__all__ = ["DEFAULT_TIMEOUT", "SHARED_OPERATIONS", "AsyncClient", "Client", "check_server_url",
           "error_from_problem", "hit_from_json", "item_from_json", "job_run_from_json"]


class Client(_SyncEngine):
    """A running ``hello-memory serve`` at ``url`` (module doc). ``api_key`` goes as a
    bearer token, only over HTTPS or to this machine unless ``allow_insecure_key``;
    ``default_namespace`` stands in where a call names none (as MemoryManager's);
    ``timeout`` bounds each request (seconds); reads are retried ``retries`` times on a
    connection error. Redirects are not followed (the key never goes on)."""

    add = _Sync(_add)
    add_many = _Sync(_add_many)
    search = _Sync(_search)
    get = _Sync(_get)
    update = _Sync(_update)
    remove = _Sync(_remove)
    stats = _Sync(_stats)
    clear = _Sync(_clear)
    export_jsonl = _Sync(_export_jsonl)
    forget = _Sync(_forget)
    forget_ids = _Sync(_forget_ids)
    restore = _Sync(_restore)
    consolidate = _Sync(_consolidate)
    invoke = _Sync(_invoke)
    context = _Sync(_context)
    run_job = _Sync(_run_job)
    namespaces = _Sync(_namespaces)
    health = _Sync(_health)

    def __init__(self, url: str, *, api_key: str | None = None,
                 default_namespace: str = "default", timeout: float = DEFAULT_TIMEOUT,
                 retries: int = 2, allow_insecure_key: bool = False) -> None:
        import httpx

        super().__init__(url, api_key=api_key, default_namespace=default_namespace,
                         timeout=timeout, retries=retries,
                         allow_insecure_key=allow_insecure_key)
        self._http = httpx.Client(**self._client_options())

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drive(self, plan: Plan[R]) -> R:
        try:
            request = next(plan)
            while True:
                try:
                    answer = self._send(request)
                except HelloMemoryError as exc:
                    request = plan.throw(exc)
                else:
                    request = plan.send(answer)
        except StopIteration as done:
            return cast(R, done.value)

    def _send(self, request: _Request) -> Any:
        import httpx

        attempts = self._attempts(request)
        for attempt in range(attempts):
            try:
                if request.save_to is not None:
                    return self._save(request)
                response = self._http.request(
                    request.method, request.path, params=request.params or None,
                    json=request.json, timeout=self._timeouts(request.timeout))
            except httpx.HTTPError as exc:
                if attempt + 1 < attempts and self._retryable(exc):
                    time.sleep(self.backoff * 2 ** attempt)
                    continue
                raise self._unreachable(exc) from None
            if response.status_code >= 400:
                raise self._problem(response)
            return _result(response)
        raise AssertionError("unreachable")  # pragma: no cover

    def _save(self, request: _Request) -> int:
        assert request.save_to is not None
        with self._http.stream(request.method, request.path, params=request.params,
                               timeout=self._timeouts(request.timeout)) as response:
            if response.status_code >= 400:
                response.read()
                raise self._problem(response)
            count = 0
            with request.save_to.open("w", encoding="utf-8") as fh:
                for line in response.iter_lines():
                    if line.strip():
                        fh.write(line + "\n")
                        count += 1
            return count


class AsyncClient(_AsyncEngine):
    """:class:`Client` for ``async`` code: the same operations, awaited (one
    ``httpx.AsyncClient``; close it with ``await client.aclose()`` or ``async with``)."""

    add = _Async(_add)
    add_many = _Async(_add_many)
    search = _Async(_search)
    get = _Async(_get)
    update = _Async(_update)
    remove = _Async(_remove)
    stats = _Async(_stats)
    clear = _Async(_clear)
    export_jsonl = _Async(_export_jsonl)
    forget = _Async(_forget)
    forget_ids = _Async(_forget_ids)
    restore = _Async(_restore)
    consolidate = _Async(_consolidate)
    invoke = _Async(_invoke)
    context = _Async(_context)
    run_job = _Async(_run_job)
    namespaces = _Async(_namespaces)
    health = _Async(_health)

    def __init__(self, url: str, *, api_key: str | None = None,
                 default_namespace: str = "default", timeout: float = DEFAULT_TIMEOUT,
                 retries: int = 2, allow_insecure_key: bool = False) -> None:
        import httpx

        super().__init__(url, api_key=api_key, default_namespace=default_namespace,
                         timeout=timeout, retries=retries,
                         allow_insecure_key=allow_insecure_key)
        self._http = httpx.AsyncClient(**self._client_options())

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _drive(self, plan: Plan[R]) -> R:
        try:
            request = next(plan)
            while True:
                try:
                    answer = await self._send(request)
                except HelloMemoryError as exc:
                    request = plan.throw(exc)
                else:
                    request = plan.send(answer)
        except StopIteration as done:
            return cast(R, done.value)

    async def _send(self, request: _Request) -> Any:
        import httpx

        attempts = self._attempts(request)
        for attempt in range(attempts):
            try:
                if request.save_to is not None:
                    return await self._save(request)
                response = await self._http.request(
                    request.method, request.path, params=request.params or None,
                    json=request.json, timeout=self._timeouts(request.timeout))
            except httpx.HTTPError as exc:
                if attempt + 1 < attempts and self._retryable(exc):
                    await asyncio.sleep(self.backoff * 2 ** attempt)
                    continue
                raise self._unreachable(exc) from None
            if response.status_code >= 400:
                raise self._problem(response)
            return _result(response)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _save(self, request: _Request) -> int:
        assert request.save_to is not None
        async with self._http.stream(request.method, request.path, params=request.params,
                                     timeout=self._timeouts(request.timeout)) as response:
            if response.status_code >= 400:
                await response.aread()
                raise self._problem(response)
            count = 0
            with request.save_to.open("w", encoding="utf-8") as fh:
                async for line in response.aiter_lines():
                    if line.strip():
                        fh.write(line + "\n")
                        count += 1
            return count

