"""``hello_memory.Client`` and ``AsyncClient``: a running ``hello-memory serve`` from Python.

>>> from hello_memory import Client                                    # doctest: +SKIP
>>> with Client("http://127.0.0.1:8765", api_key="...") as mem:        # doctest: +SKIP
...     mem.add("Alice prefers green tea", memory_type="semantic", namespace="alice")
...     hits = mem.search("what does Alice drink?", namespace="alice")

The shared operations have :class:`~hello_memory.MemoryManager`'s names, arguments and
return types (``add`` -> ``MemoryItem``, ``search`` -> ``list[SearchHit]``, ``forget`` ->
``ForgetReport``, ...), so code written against the library runs against a server by
changing how the object is made (docs/CLIENT.md). Each call is a catalogue operation
(:mod:`hello_memory.catalogue`): its arguments are checked with the operation's request
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
(:mod:`hello_memory.remote`) is this client.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, cast

from hello_memory import errors
from hello_memory.errors import (
    BackendUnavailableError,
    ConfigError,
    HelloMemoryError,
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from hello_memory.memory.reports import (
    ClearReport,
    ConsolidateReport,
    ForgetReport,
    MemoryStats,
)
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, Modality

if TYPE_CHECKING:
    import httpx

    from hello_memory.jobs import JobRun
    from hello_memory.memory.scoring import SearchHit

__all__ = ["DEFAULT_TIMEOUT", "SHARED_OPERATIONS", "AsyncClient", "Client", "check_server_url",
           "error_from_problem", "hit_from_json", "item_from_json", "job_run_from_json"]

DEFAULT_TIMEOUT = 30.0
P = ParamSpec("P")
R = TypeVar("R")
_NO_LIMIT = "none"  # a request that waits as long as it runs (jobs, export)


# --- JSON -> the library's types --------------------------------------------------------
def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def item_from_json(data: Mapping[str, Any]) -> MemoryItem:
    """A memory back from its JSON (``item_to_json``; ``added_to_json``'s
    ``duplicate_of`` and ``near_duplicates`` too)."""
    item = MemoryItem(
        content=str(data["content"]), namespace=str(data.get("namespace", "")),
        memory_type=MemoryType(data["memory_type"]), id=str(data["id"]),
        user_id=data.get("user_id"), agent_id=data.get("agent_id"),
        session_id=data.get("session_id"), modality=Modality(data.get("modality", "text")),
        importance=float(data.get("importance", 0.5)),
        access_count=int(data.get("access_count", 0)),
        last_access=_when(data.get("last_access")),
        status=MemoryStatus(data.get("status", "active")),
        metadata=dict(data.get("metadata") or {}),
        valid_from=_when(data.get("valid_from")), valid_to=_when(data.get("valid_to")),
        superseded_by=data.get("superseded_by"))
    for name in ("event_time", "recorded_time"):
        when = _when(data.get(name))
        if when is not None:
            setattr(item, name, when)
    item.duplicate_of = data.get("duplicate_of")
    item.near_duplicates = tuple((str(n["id"]), float(n["similarity"]))
                                 for n in data.get("near_duplicates") or ())
    return item


def hit_from_json(data: Mapping[str, Any]) -> SearchHit:
    """A search hit back from its JSON (``hit_to_json``): the memory, the final and
    fused scores, the breakdown and each view's rank and score (the sub-queries that
    found it are not in the JSON). A hit without its ``memory`` (an older server) keeps
    the id, type and text."""
    from hello_memory.memory.scoring import ScoreBreakdown, SearchHit, ViewHit

    breakdown = data.get("breakdown") or {}
    memory = data.get("memory")
    item = (item_from_json(memory) if isinstance(memory, Mapping) and "content" in memory
            else MemoryItem(content=str(data["content"]), namespace="",
                            memory_type=MemoryType(data["memory_type"]), id=str(data["id"])))
    return SearchHit(
        item=item, score=float(data["score"]),
        breakdown=ScoreBreakdown(**{k: float(v) for k, v in breakdown.items()
                                    if k in ScoreBreakdown.__dataclass_fields__}),
        fused=float(data.get("fused", 0.0)),
        views={name: ViewHit(int(v["rank"]), float(v["score"]))
               for name, v in (data.get("views") or {}).items()},
        context=float(data.get("context", 0.0)))


def job_run_from_json(data: Mapping[str, Any]) -> JobRun:
    """A job run back from its JSON (``JobRun.as_dict``)."""
    from hello_memory.jobs import JobRun

    return JobRun(str(data["job"]), str(data["namespace"]), bool(data["dry_run"]),
                  datetime.fromisoformat(data["started"]),
                  datetime.fromisoformat(data["finished"]),
                  {str(k): int(v) for k, v in (data.get("counts") or {}).items()},
                  dict(data.get("details") or {}))


def _forget_report(data: Mapping[str, Any]) -> ForgetReport:
    return ForgetReport(str(data["strategy"]), str(data["namespace"]),
                        tuple(data.get("ids") or ()), bool(data["dry_run"]),
                        bool(data.get("hard", False)))


def _consolidate_report(data: Mapping[str, Any]) -> ConsolidateReport:
    def groups(value: Any) -> dict[str, tuple[str, ...]]:
        return {str(k): tuple(v) for k, v in (value or {}).items()}

    return ConsolidateReport(
        str(data["namespace"]), MemoryType(data["from_type"]), MemoryType(data["to_type"]),
        bool(data["dry_run"]), tuple(data.get("promoted") or ()), groups(data.get("merged")),
        tuple(data.get("removed_sources") or ()), groups(data.get("deduplicated")))


# --- problem documents -> the library's errors ------------------------------------------
# What a problem's ``error`` names besides the classes of hello_memory.errors.
_OTHER_ERRORS: dict[str, type[HelloMemoryError]] = {
    "RequestValidationError": InvalidInputError, "TooManyRequests": BackendUnavailableError,
    "AccessDenied": ConfigError, "HostNotAllowed": ConfigError}
# A status without a known ``error`` name (a proxy in between, an older server).
_BY_STATUS: dict[int, type[HelloMemoryError]] = {
    400: InvalidInputError, 404: NotFoundError, 409: errors.JobBusyError,
    413: errors.PayloadTooLargeError, 422: InvalidInputError, 429: BackendUnavailableError,
    501: ConfigError, 502: BackendUnavailableError, 503: BackendUnavailableError,
    507: errors.InsufficientStorageError}


def _error_class(name: Any) -> type[HelloMemoryError] | None:
    if not isinstance(name, str):
        return None
    found = getattr(errors, name, None)
    if found is None and name.startswith("LLM"):
        from hello_memory.llm import base as llm_base

        found = getattr(llm_base, name, None)
    if isinstance(found, type) and issubclass(found, HelloMemoryError):
        return found
    return _OTHER_ERRORS.get(name)


def error_from_problem(status: int, body: Any, *, url: str, text: str = "",
                       reason: str = "") -> HelloMemoryError:
    """The error a problem document (RFC 9457, :mod:`hello_memory.api.problems`) stands
    for: the class its ``error`` field names, else the one its status stands for; the
    message is the server's ``detail``. The error has ``status`` and ``problem``."""
    problem = body if isinstance(body, dict) else {}
    detail = str(problem.get("detail") or text[:300] or reason or f"HTTP {status}")
    if status in (401, 403):
        cls: type[HelloMemoryError] = ConfigError
        message = (f"the server at {url} refused the request ({status}): {detail}; give a "
                   "key (Client(api_key=...), the CLI's --api-key or HELLO_MEMORY_API_KEY; "
                   "jobs need an admin key, one granted '*' in api.api_keys)")
    else:
        cls = (_error_class(problem.get("error")) or _BY_STATUS.get(status)
               or (StoreError if status >= 500 else InvalidInputError))
        message = f"{detail} (server {url})"
    # Some classes take other arguments (a key, a value): the message is the server's.
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    exc.status = status  # type: ignore[attr-defined]
    exc.problem = problem  # type: ignore[attr-defined]
    return exc


def check_server_url(url: str, *, key: bool, allow_insecure_key: bool = False) -> None:
    """Refuse (:class:`ConfigError`, one line) a server URL that is not ``http(s)://``,
    and one a key would cross in plain text: ``http://`` to an address that is not this
    machine's, unless ``allow_insecure_key``."""
    from urllib.parse import urlsplit

    from hello_memory.server_info import loopback_url

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise ConfigError(f"the server URL {url!r} is not an http:// or https:// address")
    if key and parts.scheme == "http" and not loopback_url(url) and not allow_insecure_key:
        raise ConfigError(
            f"refusing to send the API key to {url} in plain text (http:// to another "
            "machine): use https://, or pass allow_insecure_key=True (the CLI's "
            "--allow-insecure-key) if the network is trusted")


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

        from hello_memory.catalogue import default_catalogue

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


class _Sync(Generic[P, R]):
    """``Client.<name>``: the operation's plan, its requests sent one by one."""

    def __init__(self, plan: Callable[Concatenate[_Engine, P], Plan[R]]) -> None:
        self.plan = plan
        self.__doc__ = plan.__doc__

    def __get__(self, obj: Client | None, owner: type) -> Callable[P, R]:
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

    def __get__(self, obj: AsyncClient | None, owner: type) -> Callable[P, Awaitable[R]]:
        plan = self.plan
        if obj is None:
            return cast(Callable[P, Awaitable[R]], self)
        client = obj

        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return await client._drive(plan(client, *args, **kwargs))

        _describe(call, plan)
        return call


# --- the operations: each defined once, for both clients --------------------------------
def _add(c: _Engine, content: str, memory_type: MemoryType | str | None = None,
         importance: float | None = None, metadata: Mapping[str, Any] | None = None, *,
         namespace: str | None = None, user_id: str | None = None,
         agent_id: str | None = None, session_id: str | None = None,
         event_time: datetime | None = None, auto_classify: bool = False,
         on_duplicate: str | None = None) -> Plan[MemoryItem]:
    """Store one memory (``MemoryManager.add``); a repeated add returns the stored
    memory with ``duplicate_of`` set."""
    data = yield c._operation("add", _given(
        content=content, memory_type=memory_type, importance=importance,
        metadata=dict(metadata) if metadata is not None else None, user_id=user_id,
        agent_id=agent_id, session_id=session_id, event_time=event_time,
        auto_classify=bool(auto_classify), on_duplicate=on_duplicate), namespace)
    return item_from_json(data)


_ENTRY_FIELDS = frozenset({"content", "memory_type", "importance", "metadata", "namespace",
                           "user_id", "agent_id", "session_id", "event_time",
                           "auto_classify"})


def _add_many(c: _Engine, entries: Iterable[Mapping[str, Any]], *,
              on_duplicate: str | None = None) -> Plan[list[MemoryItem]]:
    """Store many memories (``MemoryManager.add_many``), returned in entry order. Every
    entry is checked before anything is sent; the entries of one namespace go in one
    request (one bad entry stores none of them)."""
    entries = list(entries)
    groups: dict[str, list[int]] = {}
    bodies: list[dict[str, Any]] = []
    for n, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise InvalidInputError(f"entry {n}: not a mapping")
        unknown = set(entry) - _ENTRY_FIELDS
        if unknown:
            raise InvalidInputError(f"entry {n}: unknown field(s) {sorted(unknown)}")
        body = _given(**{k: v for k, v in entry.items() if k != "namespace"})
        body["auto_classify"] = bool(entry.get("auto_classify", False))
        bodies.append(body)
        groups.setdefault(c._ns(entry.get("namespace")), []).append(n)
    if not entries:
        raise InvalidInputError("add_many needs at least one entry")
    requests = [(ns, idx, c._operation("add_batch", _given(
        memories=[bodies[i] for i in idx], on_duplicate=on_duplicate), ns))
        for ns, idx in groups.items()]
    out: list[MemoryItem | None] = [None] * len(entries)
    for _ns, idx, request in requests:
        data = yield request
        for i, memory in zip(idx, data["memories"], strict=True):
            out[i] = item_from_json(memory)
    return [item for item in out if item is not None]


_NOT_OVER_REST = ("views", "view_weights", "neighbor_weight", "enable_planning",
                  "enable_reflection")


def _search(c: _Engine, query: str, memory_types: Sequence[MemoryType | str] | None = None,
            top_k: int = 5, *, namespace: str | None = None,
            min_importance: float | None = None,
            time_range: tuple[datetime | None, datetime | None] | None = None,
            user_id: str | None = None, agent_id: str | None = None,
            session_id: str | None = None, filters: Mapping[str, Any] | None = None,
            reference_time: datetime | None = None, recipe: str | None = None,
            views: Sequence[str] | None = None,
            view_weights: Mapping[str, float] | None = None,
            neighbor_weight: float | None = None, enable_planning: bool | None = None,
            enable_reflection: bool | None = None, touch: bool = True,
            as_of: datetime | None = None, min_score: float | None = None
            ) -> Plan[list[SearchHit]]:
    """The one hybrid search (``MemoryManager.search``), best first. ``views``,
    ``view_weights``, ``neighbor_weight`` and the LLM switches are the server's
    settings: giving them is an InvalidInputError; ``touch`` is always on."""
    local = {"views": views, "view_weights": view_weights,
             "neighbor_weight": neighbor_weight, "enable_planning": enable_planning,
             "enable_reflection": enable_reflection}
    given = [k for k in _NOT_OVER_REST if local[k] is not None] + ([] if touch else ["touch"])
    if given:
        raise InvalidInputError(f"{', '.join(given)}: the server's settings decide this; "
                                "a client cannot set it per call")
    if recipe is not None and not isinstance(recipe, str):
        raise InvalidInputError("recipe: give a recipe's name (a client cannot send a "
                                "SearchRecipe object)")
    if filters:
        allowed = {"user_id", "agent_id", "session_id", "min_importance", "time_range",
                   "as_of"}
        unknown = set(filters) - allowed
        if unknown:
            raise InvalidInputError(f"unknown search filter(s) {sorted(unknown)}; use "
                                    f"{sorted(allowed)}")
        merged = {"min_importance": min_importance, "time_range": time_range,
                  "user_id": user_id, "agent_id": agent_id, "session_id": session_id,
                  "as_of": as_of, **filters}
        min_importance, time_range = merged["min_importance"], merged["time_range"]
        user_id, agent_id = merged["user_id"], merged["agent_id"]
        session_id, as_of = merged["session_id"], merged["as_of"]
    since, until = time_range if time_range is not None else (None, None)
    data = yield c._operation("search", _given(
        query=query, top_k=top_k, memory_types=list(memory_types) if memory_types else None,
        min_importance=min_importance, since=since, until=until, user_id=user_id,
        agent_id=agent_id, session_id=session_id, reference_time=reference_time,
        recipe=recipe, as_of=as_of, min_score=min_score), namespace)
    return [hit_from_json(h) for h in data["hits"]]


def _get(c: _Engine, memory_id: str, *, namespace: str | None = None) -> Plan[MemoryItem]:
    """One memory by id (``MemoryManager.get``; NotFoundError for an unknown one)."""
    data = yield c._operation("get", {"memory_id": memory_id}, namespace)
    return item_from_json(data)


def _update(c: _Engine, memory_id: str, *, namespace: str | None = None,
            content: str | None = None, importance: float | None = None,
            metadata: Mapping[str, Any] | None = None) -> Plan[MemoryItem]:
    """Change a memory's content, importance or metadata (``MemoryManager.update``)."""
    data = yield c._operation("update", _given(
        memory_id=memory_id, content=content, importance=importance,
        metadata=dict(metadata) if metadata is not None else None), namespace)
    return item_from_json(data)


def _remove(c: _Engine, memory_id: str, *, namespace: str | None = None) -> Plan[bool]:
    """Delete one memory for good (``MemoryManager.remove``); False if there is none."""
    try:
        yield c._operation("remove", {"memory_id": memory_id}, namespace)
    except NotFoundError:
        return False
    return True


def _stats(c: _Engine, namespace: str | None = None) -> Plan[MemoryStats]:
    """Counts of one namespace (``MemoryManager.stats``)."""
    data = yield c._operation("stats", {}, namespace)
    return cast(MemoryStats, data)


def _clear(c: _Engine, namespace: str, *, confirm: bool = False,
           uploads_dir: str | Path | None = None) -> Plan[ClearReport]:
    """Delete everything of ONE namespace (``MemoryManager.clear``; needs
    ``confirm=True``). The server removes its own uploaded files: ``uploads_dir`` is
    not a client's to give."""
    if uploads_dir is not None:
        raise InvalidInputError("uploads_dir: the server removes the files it keeps; a "
                                "client cannot name a folder")
    if not namespace:
        raise errors.NamespaceRequiredError("clear needs a namespace")
    data = yield c._operation("clear", {"confirm": confirm}, namespace)
    return cast(ClearReport, data)


def _export_jsonl(c: _Engine, path: str | Path, *, namespace: str | None = None
                  ) -> Plan[int]:
    """Write every memory of a namespace as JSON lines into ``path`` (a file on this
    machine; ``MemoryManager.export_jsonl``); the number of memories written."""
    count = yield _Request("GET", "/v1/export", {"namespace": c._ns(namespace)}, retry=True,
                           save_to=Path(path), timeout=_NO_LIMIT)
    return int(count)


def _forget(c: _Engine, strategy: str | None = None, *, namespace: str | None = None,
            threshold: float | None = None, max_age_days: float | None = None,
            max_items: int | None = None,
            memory_types: Sequence[MemoryType | str] | None = None,
            dry_run: bool = False, hard: bool = False) -> Plan[ForgetReport]:
    """Forget by a strategy (``MemoryManager.forget``); what is left out comes from the
    server's ``jobs`` settings."""
    data = yield c._operation("forget", _given(
        strategy=strategy, threshold=threshold, max_age_days=max_age_days,
        max_items=max_items, memory_types=list(memory_types) if memory_types else None,
        dry_run=dry_run, hard=hard), namespace)
    return _forget_report(data)


def _forget_ids(c: _Engine, ids: Sequence[str], *, namespace: str | None = None,
                dry_run: bool = False) -> Plan[list[str]]:
    """Soft-forget these memories (``MemoryManager.forget_ids``); the ids forgotten."""
    data = yield c._operation("forget", {"ids": list(ids), "dry_run": dry_run}, namespace)
    return [str(i) for i in data["ids"]]


def _restore(c: _Engine, ids: Sequence[str], *, namespace: str | None = None) -> Plan[int]:
    """Bring soft-forgotten memories back (``MemoryManager.restore``); how many."""
    data = yield c._operation("restore", {"ids": list(ids)}, namespace)
    return int(data["restored"])


def _consolidate(c: _Engine, from_type: MemoryType | str | None = None,
                 to_type: MemoryType | str | None = None, *, namespace: str | None = None,
                 importance_threshold: float | None = None,
                 min_access_count: int | None = None, dry_run: bool = False
                 ) -> Plan[ConsolidateReport]:
    """Promote important memories one step (``MemoryManager.consolidate``)."""
    data = yield c._operation("consolidate", _given(
        from_type=from_type, to_type=to_type, importance_threshold=importance_threshold,
        min_access_count=min_access_count, dry_run=dry_run), namespace)
    return _consolidate_report(data)


# --- beyond MemoryManager: the server's own operations ----------------------------------
def _invoke(c: _Engine, operation: str, arguments: Mapping[str, Any] | None = None, *,
            namespace: str | None = None) -> Plan[dict[str, Any]]:
    """Any catalogue operation with a JSON route (documents, media by path, jobs...) by
    name: its JSON, as REST answers it ({} for an answer without content)."""
    data = yield c._operation(operation, dict(arguments or {}), namespace,
                              timeout=_NO_LIMIT if operation == "run_job" else None)
    return data if isinstance(data, dict) else {}


def _context(c: _Engine, query: str, max_tokens: int = 1500, *,
             namespace: str | None = None, reference_time: datetime | None = None,
             recipe: str | None = None) -> Plan[str]:
    """The ready-to-inject context block for ``query`` (``MemoryTool.
    get_context_for_query``; ``POST /v1/context``), at most ``max_tokens`` tokens."""
    data = yield c._operation("context", _given(
        query=query, max_tokens=max_tokens, reference_time=reference_time, recipe=recipe),
        namespace)
    return str(data["context"])


def _run_job(c: _Engine, job: str, namespaces: Sequence[str] = (), *,
             all_namespaces: bool = False, dry_run: bool = False, **options: Any
             ) -> Plan[list[JobRun]]:
    """Run one maintenance job now on the server (an admin key): one run per namespace.
    ``options`` are those of ``POST /v1/jobs/{name}`` (threshold, min_access, strategy,
    max_age_days, max_items, hard, retry_failed, drop_failed)."""
    data = yield c._operation("run_job", _given(
        name=job, namespace=list(namespaces) or None, all_namespaces=all_namespaces,
        dry_run=dry_run, **options), None, timeout=_NO_LIMIT)
    return [job_run_from_json(r) for r in data["runs"]]


def _namespaces(c: _Engine) -> Plan[list[str]]:
    """Every namespace that holds memories (an admin key)."""
    data = yield c._operation("list_namespaces", {}, None)
    return [str(n) for n in data["namespaces"]]


def _health(c: _Engine) -> Plan[dict[str, Any]]:
    """``GET /healthz``: ``{"status": "ok", "version": ...}`` once the server serves."""
    data = yield _Request("GET", "/healthz", retry=True)
    return dict(data or {})


# The operations shared with MemoryManager (same names, arguments and return types).
SHARED_OPERATIONS = ("add", "add_many", "search", "get", "update", "remove", "stats",
                     "clear", "export_jsonl", "forget", "forget_ids", "restore",
                     "consolidate")


class Client(_Engine):
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


class AsyncClient(_Engine):
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

