"""Where a CLI command runs: on the stores themselves, or through a running server.

The commands that can run either way (``stats``, ``search``, ``show``, ``export``,
``add`` and every ``jobs`` command; docs/CLI.md "The CLI next to a server") take a
:class:`Backend`: a :class:`LocalBackend` over an open
:class:`~hello_memory.memory.manager.MemoryManager`, or a :class:`ServerClient` over the
REST API of ``hello-memory serve``: :class:`hello_memory.Client`, the one HTTP
engine (:mod:`hello_memory.interfaces.client`), which Python code uses too. Both run a catalogue
operation by name (:meth:`Backend.invoke`: its handler and serialiser here, its generated REST route
there) and return its JSON, what the REST API answers, and ``JobRun`` objects, so one
renderer prints the same tables and ``--json`` either way.

Server errors come back as the library's errors (problem JSON status -> the error
class), so the CLI's exit codes hold: 404 is 3, a 4xx is 2, an unreachable server or a
5xx is 4.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hello_memory.interfaces.client import check_server_url, hit_from_json, job_run_from_json

if TYPE_CHECKING:
    from hello_memory.config import Settings
    from hello_memory.interfaces.jobs import JobRun
    from hello_memory.memory.manager import MemoryManager

__all__ = ["Backend", "LocalBackend", "ServerClient", "check_server_url", "hit_from_json",
           "job_run_from_json"]


class Backend(Protocol):
    """What the CLI's server-capable commands need, locally or over REST."""

    def where(self) -> str:
        """Where the work runs, for messages ("in this process", "through the server
        at URL")."""

    def invoke(self, operation: str, arguments: Mapping[str, Any], *,
               namespace: str | None) -> dict[str, Any]:
        """The catalogue operation's JSON (:mod:`hello_memory.interfaces.catalogue`: its handler
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
        from hello_memory.interfaces.catalogue import Call, default_catalogue

        op = default_catalogue()[operation]
        ns = self.manager.resolve_namespace(namespace) if op.scope != "admin" else ""
        return op.run(Call(self.manager, ns, self.settings), op.parse(arguments))

    def export_jsonl(self, path: Path, *, namespace: str | None) -> int:
        return self.manager.export_jsonl(path, namespace=namespace)

    def run_job(self, job: str, namespaces: Sequence[str], all_namespaces: bool,
                dry_run: bool, **options: Any) -> list[JobRun]:
        # the manager's lifecycle defaults fill what options leave out (docs/JOBS.md
        # "Lifecycle defaults")
        from hello_memory.interfaces.jobs import namespaces_for, run_job

        mm = self.manager
        return [run_job(mm, job, namespace=ns, dry_run=dry_run, **options)
                for ns in namespaces_for(mm, list(namespaces), all_namespaces)]

    def optimize(self) -> JobRun:
        from hello_memory.interfaces.jobs import run_optimize

        return run_optimize(self.manager)  # audited as job:optimize under "*"


# run_job's option names -> the names of POST /v1/jobs/{name} (the CLI's)
_JOB_FIELDS = {"importance_threshold": "threshold", "min_access_count": "min_access"}
_LOCAL_ONLY_OPTIONS = {"progress"}  # a progress bar is this terminal's, not the server's


class ServerClient:
    """The commands over a running server: the CLI's face of
    :class:`hello_memory.Client` (the one HTTP engine: the catalogue check and route,
    the problem -> error mapping, retries of reads, the timeout). It adds only what the
    :class:`Backend` protocol asks that the client says otherwise: ``where``, the jobs
    as ``JobRun`` lists and optimize.

    ``api_key`` goes as a bearer token; jobs need an admin key (one granted ``*``),
    the other routes a key granting the namespace. ``default_namespace`` stands in
    where a command names none, as the local path's manager does. A key goes only over
    HTTPS or to this machine (a loopback address): to a plain ``http://`` address
    elsewhere only with ``allow_insecure_key`` (the CLI's ``--allow-insecure-key``);
    otherwise a ``ConfigError`` before anything is sent (issue 28, item 2)."""

    def __init__(self, url: str, *, api_key: str | None = None,
                 default_namespace: str = "default", timeout: float = 120.0,
                 allow_insecure_key: bool = False) -> None:
        from hello_memory.interfaces.client import Client

        self.client = Client(url, api_key=api_key, default_namespace=default_namespace,
                             timeout=timeout, allow_insecure_key=allow_insecure_key)
        self.url = self.client.url
        self.default_namespace = default_namespace

    def where(self) -> str:
        return f"through the server at {self.url}"

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> ServerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def invoke(self, operation: str, arguments: Mapping[str, Any], *,
               namespace: str | None) -> dict[str, Any]:
        """The operation's REST route (:meth:`hello_memory.Client.invoke`): checked
        here first (the same InvalidInputError as locally)."""
        return self.client.invoke(operation, arguments, namespace=namespace)

    def export_jsonl(self, path: Path, *, namespace: str | None) -> int:
        """Stream ``GET /v1/export`` into ``path``; the number of memories written."""
        return self.client.export_jsonl(path, namespace=namespace)

    def run_job(self, job: str, namespaces: Sequence[str], all_namespaces: bool,
                dry_run: bool, **options: Any) -> list[JobRun]:
        """``POST /v1/jobs/{job}`` (the server runs it over its own manager, with its
        lifecycle defaults for what ``options`` leave out, and audits it)."""
        given = {_JOB_FIELDS.get(key, key): value for key, value in options.items()
                 if key not in _LOCAL_ONLY_OPTIONS and value is not None}
        return self.client.run_job(job, namespaces, all_namespaces=all_namespaces,
                                   dry_run=dry_run, **given)

    def optimize(self) -> JobRun:
        return self.client.run_job("optimize")[0]
