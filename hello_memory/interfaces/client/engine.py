"""The client's engine, shared by :class:`~hello_memory.interfaces.client.Client` and
:class:`~hello_memory.interfaces.client.AsyncClient`: one request (:class:`_Request`), an
operation's plan (a generator of requests, :data:`Plan`), what both clients hold
(:class:`_Engine`: the address, the key, the catalogue check and route, the error
mapping) and the descriptors that turn a plan into a method, sent (:class:`_Sync`) or
awaited (:class:`_Async`)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, cast

from hello_memory.errors import BackendUnavailableError, HelloMemoryError, InvalidInputError
from hello_memory.interfaces.client.convert import check_server_url, error_from_problem
from hello_memory.types import MemoryType

if TYPE_CHECKING:
    import httpx


DEFAULT_TIMEOUT = 30.0
P = ParamSpec("P")
R = TypeVar("R")
_NO_LIMIT = "none"  # a request that waits as long as it runs (jobs, export)


# --- one request, and the engine that builds them ---------------------------------------
@dataclasses.dataclass(frozen=True)
class _Request:
    """One HTTP request of an operation: ``retry`` for a read (retried on connection
    errors), ``save_to`` for a streamed download written to a file (its line count is the
    result), ``timeout`` None for the client's, ``_NO_LIMIT`` to wait as long as it runs."""

    method: str
    path: str
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    json: Any = None
    retry: bool = False
    save_to: Path | None = None
    timeout: float | str | None = None


Plan = Generator[_Request, Any, R]

# The connection errors a read is retried on (the request may not have arrived; a slow
# answer, ReadTimeout, is not retried: the server is busy, not gone).
_RETRYABLE = ("ConnectError", "ConnectTimeout", "ReadError", "WriteError",
              "RemoteProtocolError", "PoolTimeout")


def _given(**arguments: Any) -> dict[str, Any]:
    """The arguments given (None: left out, the operation's default); enums as values,
    tuples as lists."""
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        if value is None:
            continue
        if isinstance(value, MemoryType):
            value = value.value
        elif isinstance(value, (tuple, list, set, frozenset)):
            value = [v.value if isinstance(v, MemoryType) else v for v in value]
        out[key] = value
    return out


class _Engine:
    """What both clients share: the server's address and key, the namespace default,
    the catalogue check and route of each operation, the error mapping."""

    def __init__(self, url: str, *, api_key: str | None = None,
                 default_namespace: str = "default", timeout: float = DEFAULT_TIMEOUT,
                 retries: int = 2, backoff: float = 0.2,
                 allow_insecure_key: bool = False) -> None:
        check_server_url(url, key=bool(api_key), allow_insecure_key=allow_insecure_key)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise InvalidInputError(f"timeout must be a positive number of seconds, got "
                                    f"{timeout!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise InvalidInputError(f"retries must be a non-negative integer, got {retries!r}")
        if not isinstance(default_namespace, str) or not default_namespace.strip():
            raise InvalidInputError("default_namespace must be a non-empty string")
        self.url = url.rstrip("/")
        self.default_namespace = default_namespace
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = backoff
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def _timeouts(self, value: float | str | None) -> httpx.Timeout:
        import httpx

        connect = min(5.0, self.timeout)
        if value == _NO_LIMIT:
            return httpx.Timeout(None, connect=connect)
        return httpx.Timeout(self.timeout if value is None else float(value), connect=connect)

    def _client_options(self) -> dict[str, Any]:
        from hello_memory.server_info import loopback_url

        # a proxy of the environment (HTTP_PROXY) is for other machines, not this one
        return {"base_url": self.url, "headers": self._headers,
                "timeout": self._timeouts(None), "trust_env": not loopback_url(self.url)}

    def _ns(self, namespace: str | None) -> str:
        return namespace or self.default_namespace

    def _operation(self, operation: str, arguments: Mapping[str, Any],
                   namespace: str | None, *, timeout: float | str | None = None) -> _Request:
        """The request of a catalogue operation: its arguments checked with its request
        model (InvalidInputError, nothing sent), its path fields in the path, its query
        fields (all of them for a GET or DELETE) in the query string, the rest as the
        JSON body; the namespace for every operation but the admin ones."""
        from urllib.parse import quote

        from hello_memory.interfaces.catalogue import default_catalogue

        catalogue = default_catalogue()
        if operation not in catalogue:
            raise InvalidInputError(f"unknown operation {operation!r}")
        op = catalogue[operation]
        if op.rest is None or op.rest.upload is not None:
            raise InvalidInputError(f"{operation} has no JSON REST route: it cannot run "
                                    "through a client")
        rest = op.rest
        given = op.parse(arguments).model_dump(mode="json", exclude_unset=True)
        missing = [f for f in rest.path_fields if f not in given]
        if missing:
            raise InvalidInputError(f"{operation}: {', '.join(missing)} is required")
        path = "/v1" + rest.path.format(**{f: quote(str(given.pop(f)), safe="")
                                          for f in rest.path_fields})
        in_query = set(given) if not rest.has_body else set(rest.query)
        params = {k: v for k, v in given.items() if k in in_query}
        if op.scope != "admin":
            params["namespace"] = self._ns(namespace)
        body = {k: v for k, v in given.items() if k not in in_query}
        return _Request(rest.method, path, params, body if rest.has_body else None,
                        retry=op.scope == "read", timeout=timeout)

    def _problem(self, response: httpx.Response) -> HelloMemoryError:
        try:
            body = response.json()
        except ValueError:
            body = None
        return error_from_problem(response.status_code, body, url=self.url,
                                  text=response.text, reason=response.reason_phrase)

    def _unreachable(self, exc: Exception) -> BackendUnavailableError:
        import httpx

        if isinstance(exc, httpx.TimeoutException) and type(exc).__name__ != "ConnectTimeout":
            return BackendUnavailableError(f"the server at {self.url} did not answer in "
                                           f"time ({type(exc).__name__})")
        return BackendUnavailableError(f"cannot reach the server at {self.url}: {exc}")

    def _attempts(self, request: _Request) -> int:
        return 1 + (self.retries if request.retry else 0)

    @staticmethod
    def _retryable(exc: Exception) -> bool:
        return type(exc).__name__ in _RETRYABLE


def _result(response: httpx.Response) -> Any:
    return response.json() if response.content else None


def _describe(call: Callable[..., Any], plan: Callable[..., Any]) -> None:
    """The bound method's name, doc and signature: the plan's, without the client."""
    signature = inspect.signature(plan)
    call.__name__ = call.__qualname__ = plan.__name__.lstrip("_")
    call.__doc__ = plan.__doc__
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=list(signature.parameters.values())[1:])


class _SyncEngine(_Engine):
    """An engine that sends a plan's requests one by one (``Client``); named here so
    that this module never imports the package that defines the clients."""

    def _drive(self, plan: Plan[R]) -> R:
        raise NotImplementedError


class _AsyncEngine(_Engine):
    """An engine that awaits a plan's requests (``AsyncClient``)."""

    async def _drive(self, plan: Plan[R]) -> R:
        raise NotImplementedError


class _Sync(Generic[P, R]):
    """``Client.<name>``: the operation's plan, its requests sent one by one."""

    def __init__(self, plan: Callable[Concatenate[_Engine, P], Plan[R]]) -> None:
        self.plan = plan
        self.__doc__ = plan.__doc__

    def __get__(self, obj: _SyncEngine | None, owner: type) -> Callable[P, R]:
        plan = self.plan
        if obj is None:
            return cast(Callable[P, R], self)
        client = obj

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return client._drive(plan(client, *args, **kwargs))

        _describe(call, plan)
        return call


class _Async(Generic[P, R]):
    """``AsyncClient.<name>``: the same plan, awaited."""

    def __init__(self, plan: Callable[Concatenate[_Engine, P], Plan[R]]) -> None:
        self.plan = plan
        self.__doc__ = plan.__doc__

    def __get__(self, obj: _AsyncEngine | None, owner: type) -> Callable[P, Awaitable[R]]:
        plan = self.plan
        if obj is None:
            return cast(Callable[P, Awaitable[R]], self)
        client = obj

        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return await client._drive(plan(client, *args, **kwargs))

        _describe(call, plan)
        return call

