"""Where a CLI command runs: on the stores themselves, or through a running server.

The commands that can run either way (``stats``, ``search``, ``show``, ``export``,
``add`` and every ``jobs`` command; README "The CLI next to a server") take a
:class:`Backend`: a :class:`LocalBackend` over an open
:class:`~hello_memory.memory.manager.MemoryManager`, or a :class:`ServerClient` over the
REST API of ``hello-memory serve`` (httpx). Both run a catalogue operation by name
(:meth:`Backend.invoke`: its handler and serialiser here, its generated REST route
there) and return its JSON, what the REST API answers, and ``JobRun`` objects, so one
renderer prints the same tables and ``--json`` either way.

Server errors come back as the library's errors (problem JSON status -> the error
class), so the CLI's exit codes hold: 404 is 3, a 4xx is 2, an unreachable server or a
5xx is 4.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hello_memory.errors import (
    BackendUnavailableError,
    ConfigError,
    HelloMemoryError,
    InvalidInputError,
    JobBusyError,
    NotFoundError,
    StoreError,
)
from hello_memory.types import MemoryItem, MemoryType

if TYPE_CHECKING:
    import httpx

    from hello_memory.config import Settings
    from hello_memory.jobs import JobRun
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.memory.scoring import SearchHit

__all__ = ["Backend", "LocalBackend", "ServerClient", "check_server_url", "hit_from_json",
           "job_run_from_json"]


class Backend(Protocol):
    """What the CLI's server-capable commands need, locally or over REST."""

    def where(self) -> str:
        """Where the work runs, for messages ("in this process", "through the server
        at URL")."""

    def invoke(self, operation: str, arguments: Mapping[str, Any], *,
               namespace: str | None) -> dict[str, Any]:
        """The catalogue operation's JSON (:mod:`hello_memory.catalogue`: its handler
        and serialiser here, its REST route through a server): what REST answers, so
        ``--json`` prints the same either way. ``namespace`` None: the default one."""

    def export_jsonl(self, path: Path, *, namespace: str | None) -> int: ...

    def run_job(self, job: str, namespaces: Sequence[str], all_namespaces: bool,
                dry_run: bool, **options: Any) -> list[JobRun]: ...

    def optimize(self) -> JobRun: ...


class LocalBackend:
    """The commands on an open manager (the stores in this process)."""

    def __init__(self, manager: MemoryManager, settings: Settings | None = None) -> None:
        self.manager = manager
        self.settings = settings

    def where(self) -> str:
        return "in this process"

    def invoke(self, operation: str, arguments: Mapping[str, Any], *,
               namespace: str | None) -> dict[str, Any]:
        from hello_memory.catalogue import Call, default_catalogue

        op = default_catalogue()[operation]
        ns = self.manager.resolve_namespace(namespace) if op.scope != "admin" else ""
        return op.run(Call(self.manager, ns, self.settings), op.parse(arguments))

    def export_jsonl(self, path: Path, *, namespace: str | None) -> int:
        return self.manager.export_jsonl(path, namespace=namespace)

    def run_job(self, job: str, namespaces: Sequence[str], all_namespaces: bool,
                dry_run: bool, **options: Any) -> list[JobRun]:
        # the manager's lifecycle defaults fill what options leave out (README
        # "Lifecycle defaults")
        from hello_memory.jobs import namespaces_for, run_job

        mm = self.manager
        return [run_job(mm, job, namespace=ns, dry_run=dry_run, **options)
                for ns in namespaces_for(mm, list(namespaces), all_namespaces)]

    def optimize(self) -> JobRun:
        from hello_memory.jobs import run_optimize

        return run_optimize(self.manager)  # audited as job:optimize under "*"


# problem status -> the error it stands for (the reverse of api/problems.py STATUS)
_BY_STATUS: dict[int, type[HelloMemoryError]] = {
    400: InvalidInputError, 404: NotFoundError, 409: JobBusyError, 413: InvalidInputError,
    422: InvalidInputError, 501: ConfigError, 502: BackendUnavailableError,
    503: BackendUnavailableError, 507: StoreError}
# run_job's option names -> the names of POST /v1/jobs/{name} (the CLI's)
_JOB_FIELDS = {"importance_threshold": "threshold", "min_access_count": "min_access"}
_LOCAL_ONLY_OPTIONS = {"progress"}  # a progress bar is this terminal's, not the server's


def hit_from_json(data: Mapping[str, Any]) -> SearchHit:
    """A search hit back from its JSON (``hit_to_json``), enough to explain it
    (``retrieval.fusion.explain``): scores, views and the memory's id, type and text
    (the sub-queries that found it are not in the JSON)."""
    from hello_memory.memory.scoring import ScoreBreakdown, SearchHit, ViewHit

    breakdown = data.get("breakdown") or {}
    memory = data.get("memory") or {}
    item = MemoryItem(content=str(data["content"]), namespace=str(memory.get("namespace", "")),
                      memory_type=MemoryType(data["memory_type"]), id=str(data["id"]))
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
            "machine): use https://, or pass --allow-insecure-key if the network is "
            "trusted")


class ServerClient:
    """The commands over a running server's REST API (``url``: its base address).

    ``api_key`` goes as a bearer token; jobs need an admin key (one granted ``*``),
    the other routes a key granting the namespace. ``default_namespace`` stands in
    where a command names none, as the local path's manager does.

    A key goes only over HTTPS or to this machine (a loopback address): to a plain
    ``http://`` address elsewhere only with ``allow_insecure_key`` (the CLI's
    ``--allow-insecure-key``); otherwise a ``ConfigError`` before anything is sent
    (issue 28, item 2). Redirects are not followed, so the key never goes on."""

    def __init__(self, url: str, *, api_key: str | None = None,
                 default_namespace: str = "default", timeout: float = 120.0,
                 allow_insecure_key: bool = False) -> None:
        import httpx

        from hello_memory.server_info import loopback_url

        check_server_url(url, key=bool(api_key), allow_insecure_key=allow_insecure_key)
        self.url = url.rstrip("/")
        self.default_namespace = default_namespace
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # a proxy of the environment (HTTP_PROXY) is for other machines, not this one
        self._http = httpx.Client(base_url=self.url, headers=headers,
                                  timeout=httpx.Timeout(timeout, connect=5.0),
                                  trust_env=not loopback_url(self.url))

    def where(self) -> str:
        return f"through the server at {self.url}"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- HTTP -------------------------------------------------------------------------
    def _ns(self, namespace: str | None) -> str:
        return namespace or self.default_namespace

    def _error(self, response: httpx.Response) -> HelloMemoryError:
        try:
            body = response.json()
        except ValueError:
            body = {}
        detail = (body.get("detail") if isinstance(body, dict) else None) \
            or response.text[:300] or response.reason_phrase
        status = response.status_code
        if status in (401, 403):
            return ConfigError(
                f"the server at {self.url} refused the request ({status}): {detail}; give "
                "a key with --api-key or HELLO_MEMORY_API_KEY (jobs need an admin key, one "
                "granted '*' in api.api_keys)")
        cls = _BY_STATUS.get(status, StoreError if status >= 500 else InvalidInputError)
        return cls(f"{detail} (server {self.url})")

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        import httpx

        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise BackendUnavailableError(f"the server at {self.url} did not answer in "
                                          f"time ({type(exc).__name__})") from None
        except httpx.HTTPError as exc:
            raise BackendUnavailableError(f"cannot reach the server at {self.url}: "
                                          f"{exc}") from None
        if response.status_code >= 400:
            raise self._error(response)
        return response.json() if response.content else None

    @contextlib.contextmanager
    def _stream(self, path: str, params: Mapping[str, Any]) -> Iterator[httpx.Response]:
        import httpx

        try:
            with self._http.stream("GET", path, params=params, timeout=httpx.Timeout(
                    None, connect=5.0)) as response:
                if response.status_code >= 400:
                    response.read()
                    raise self._error(response)
                yield response
        except httpx.HTTPError as exc:
            raise BackendUnavailableError(f"cannot reach the server at {self.url}: "
                                          f"{exc}") from None

    # --- the commands -----------------------------------------------------------------
    def invoke(self, operation: str, arguments: Mapping[str, Any], *,
               namespace: str | None) -> dict[str, Any]:
        """The operation's REST route: its path fields in the path, its query fields
        (all of them for a GET or DELETE) in the query string, the rest as the body;
        checked here first (the same InvalidInputError as locally)."""
        from urllib.parse import quote

        from hello_memory.catalogue import default_catalogue

        op = default_catalogue()[operation]
        if op.rest is None:
            raise InvalidInputError(f"{operation} has no REST route: it cannot run through "
                                    "a server")
        rest = op.rest
        given = op.parse(arguments).model_dump(mode="json", exclude_unset=True)
        path = "/v1" + rest.path.format(**{f: quote(str(given.pop(f)), safe="")
                                          for f in rest.path_fields})
        in_query = set(given) if not rest.has_body else set(rest.query)
        params = {k: v for k, v in given.items() if k in in_query}
        if op.scope != "admin":
            params["namespace"] = self._ns(namespace)
        body = {k: v for k, v in given.items() if k not in in_query}
        data = self._request(rest.method, path, params=params,
                             json=body if rest.has_body else None)
        return data if isinstance(data, dict) else {}  # 204: no content

    def export_jsonl(self, path: Path, *, namespace: str | None) -> int:
        """Stream ``GET /v1/export`` into ``path``; the number of memories written."""
        count = 0
        with self._stream("/v1/export", {"namespace": self._ns(namespace)}) as response, \
                Path(path).open("w", encoding="utf-8") as fh:
            for line in response.iter_lines():
                if line.strip():
                    fh.write(line + "\n")
                    count += 1
        return count

    def run_job(self, job: str, namespaces: Sequence[str], all_namespaces: bool,
                dry_run: bool, **options: Any) -> list[JobRun]:
        """``POST /v1/jobs/{job}`` (the server runs it over its own manager, with its
        lifecycle defaults for what ``options`` leave out, and audits it)."""
        import httpx

        body: dict[str, Any] = {"namespace": list(namespaces) or None,
                                "all_namespaces": all_namespaces, "dry_run": dry_run}
        for key, value in options.items():
            if key not in _LOCAL_ONLY_OPTIONS and value is not None:
                body[_JOB_FIELDS.get(key, key)] = value
        data = self._request("POST", f"/v1/jobs/{job}", json=body,
                             timeout=httpx.Timeout(None, connect=5.0))
        return [job_run_from_json(r) for r in data["runs"]]

    def optimize(self) -> JobRun:
        import httpx

        data = self._request("POST", "/v1/jobs/optimize",
                             timeout=httpx.Timeout(None, connect=5.0))
        return job_run_from_json(data["runs"][0])
