"""The ``hello-memory`` commands that serve: ``serve`` (the REST API and the scheduled
jobs), ``ui`` (the memory inspector) and ``mcp`` (the MCP server)."""

from __future__ import annotations

import contextlib
import os
import secrets
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from hello_memory.config import Settings
from hello_memory.errors import BackendUnavailableError, InvalidInputError
from hello_memory.interfaces.cli.backend import _exit_cleanly, _held_by, _local_only
from hello_memory.interfaces.cli.common import _settings, app, console, err, handled
from hello_memory.server_info import ServerInfo

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager


def keyless_warning(settings: Settings, bind: str) -> str | None:
    """What ``serve`` says before it starts without a key: every request but
    ``/healthz`` would be a 401. Nothing when keys are set, or when auth is disabled on
    a loopback address (check_bind refuses it elsewhere)."""
    from hello_memory.interfaces.rest.security import is_loopback

    if settings.api.api_keys or (settings.api.auth_disabled and is_loopback(bind)):
        return None
    return ("no API key is configured (api.api_keys is empty): this server will answer "
            "every request but /healthz with 401. Set one, e.g. "
            "HELLO_MEMORY__API__API_KEYS='{\"<secret>\": [\"*\"]}' (a key granted '*' is an "
            "admin key), or, for this machine only, HELLO_MEMORY__API__AUTH_DISABLED=true "
            "with --host 127.0.0.1")


@app.command()
@handled
def serve(host: Annotated[str | None, typer.Option(help="Default: api.host.")] = None,
          port: Annotated[int | None, typer.Option(
              min=0, max=65535, help="Default: api.port; 0: any free port (server.json "
              "in the data directory names it).")] = None) -> None:
    """Run the REST API (FastAPI + uvicorn; OpenAPI at /docs) and the jobs of
    jobs.schedule."""
    from hello_memory.interfaces.rest.security import check_bind

    settings = _settings()
    bind = host or settings.api.host
    check_bind(settings.api, bind)
    held = _held_by(settings)
    if held is not None:  # a live server: say so before loading anything
        raise BackendUnavailableError(
            f"the data directory {settings.data_dir} is already served by "
            f"{held.describe()}; stop that server first, or give another --data-dir")
    _serve(settings, bind, port)


def _serve(settings: Settings, bind: str, port: int | None) -> None:
    """Open the stores and run the server until it stops (``serve``'s part, once no
    other server holds the data directory)."""
    import uvicorn

    from hello_memory.factory import build_server_embedder
    from hello_memory.interfaces.rest import create_app
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.server_info import install_proof

    # One embedding worker batches every concurrent request (api.embed_batching,
    # docs/PERFORMANCE.md "A server that batches"); closed after the manager.
    embedder = build_server_embedder(settings)
    # The stores open before uvicorn starts, so a data directory another process holds
    # (a second serve, a `jobs --every` loop) is one line and exit 4, not a traceback
    # out of the ASGI lifespan.
    with err.status("Opening stores and loading the embedding model..."):
        mm = MemoryManager.open(settings, embedder=embedder)
    # once it can start: a server without a key answers 401 to everything
    warning = keyless_warning(settings, bind)
    if warning:
        err.print(f"[bold red]WARNING:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    # An embedded vector directory opens in one process only: while this server holds
    # it, server.json in the data directory tells the CLI where to send its commands.
    # Vectors in pgvector hold no directory: a fleet's servers may share one
    # (docs/DEPLOY.md).
    exclusive = (settings.vector.provider != "pgvector" and settings.vector.url is None
                 and settings.vector.location is None)
    # The CLI trusts server.json only once this server proves it can read the token in
    # the directory it holds (hello_memory/server_info.py; docs/CLI.md, "The CLI next
    # to a server"): written once the stores are ours, before server.json.
    token = secrets.token_hex(32)
    address = {"url": ""}
    server_class = _announcing_server(settings, bind, exclusive, address)
    api = create_app(settings, manager=mm, run_jobs=True)
    if exclusive:
        install_proof(api, token, lambda: address["url"])
    config = uvicorn.Config(api, host=bind,
                            port=settings.api.port if port is None else port,
                            log_level="info", timeout_graceful_shutdown=5)
    server = server_class(config)
    _run_until_stopped(server, settings, mm, embedder, exclusive, token)
    if not server.started:
        raise BackendUnavailableError(f"the server did not start on {bind} (the log line "
                                      "above says why)")


def _announcing_server(settings: Settings, bind: str, exclusive: bool,
                       address: dict[str, str]) -> type[Any]:
    """The uvicorn server class of ``serve`` (its part): once listening, it sets
    ``address["url"]`` and writes server.json (when ``exclusive``), and it stops cleanly
    on a signal."""
    import uvicorn

    from hello_memory import __version__
    from hello_memory.server_info import client_host, write_info

    def listening(port: int) -> None:
        if exclusive:
            address["url"] = f"http://{client_host(bind)}:{port}"
            write_info(settings.data_dir, ServerInfo(
                url=address["url"], pid=os.getpid(),
                started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                data_dir=str(settings.data_dir.resolve()), exclusive=True,
                version=__version__))

    class _Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:  # listening now: the real port, also for --port 0
                listening(int(self.servers[0].sockets[0].getsockname()[1]))

        def capture_signals(self) -> contextlib._GeneratorContextManager[None]:
            return _exit_cleanly(self, super().capture_signals)

    return _Server


def _run_until_stopped(server: Any, settings: Settings, mm: MemoryManager, embedder: Any,
                       exclusive: bool, token: str) -> None:
    """Run ``server`` with the stores open (``serve``'s part): the token in the data
    directory while it runs (when ``exclusive``), server.json and the token removed
    after, the manager and then the embedder closed."""
    from hello_memory.server_info import remove_info, remove_token, write_token

    try:
        with mm:
            try:
                if exclusive:
                    write_token(settings.data_dir, token)
                server.run()
            finally:
                if exclusive:
                    remove_info(settings.data_dir)
                    remove_token(settings.data_dir, token)
    finally:
        closer = getattr(embedder, "close", None)
        if callable(closer):
            closer()


# --- the memory inspector (issue 18) -----------------------------------------------------
@app.command("ui")
@handled
def ui_command(
        port: Annotated[int, typer.Option(min=0, max=65535, help="0: any free port.")] = 0,
        open_browser: Annotated[bool, typer.Option(
            "--open/--no-open", help="Open the page in the default browser.")] = True
) -> None:
    """Open the memory inspector (/ui) for this data directory on 127.0.0.1, without a
    key (api.auth_disabled, loopback only); a running server that holds the directory
    is used instead (its keys apply)."""
    import webbrowser

    settings = _settings()
    held = _held_by(settings)
    if held is not None:
        url = held.url.rstrip("/") + "/ui/"
        console.print(f"{held.describe()} serves this data directory: {url}")
        if open_browser:
            webbrowser.open(url)
        return
    import uvicorn

    from hello_memory.interfaces.rest import create_app
    from hello_memory.memory.manager import MemoryManager

    local = settings.model_copy(update={"api": settings.api.model_copy(
        update={"host": "127.0.0.1", "auth_disabled": True})})
    with err.status("Opening stores and loading the embedding model..."):
        mm = MemoryManager.open(local)

    class _Inspector(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                bound = int(self.servers[0].sockets[0].getsockname()[1])
                url = f"http://127.0.0.1:{bound}/ui/"
                console.print(f"memory inspector for {local.data_dir}: {url} (Ctrl+C stops "
                              "it)", soft_wrap=True, highlight=False)
                if open_browser:
                    webbrowser.open(url)

        def capture_signals(self) -> contextlib._GeneratorContextManager[None]:
            return _exit_cleanly(self, super().capture_signals)

    server = _Inspector(uvicorn.Config(create_app(local, manager=mm), host="127.0.0.1",
                                       port=port, log_level="warning"))
    with mm:
        server.run()
    if not server.started:
        raise BackendUnavailableError(f"the inspector did not start on 127.0.0.1:{port}")


@app.command()
@handled
def mcp(namespace: Annotated[list[str] | None, typer.Option(
            "--namespace", "-n", help="Namespace pattern this server may use (repeatable).")
        ] = None,
        api_key: Annotated[str | None, typer.Option(
            envvar="HELLO_MEMORY_API_KEY", help="Use the namespaces of this api.api_keys key.")
        ] = None,
        http: Annotated[bool, typer.Option(
            "--http", help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
        ] = False,
        host: Annotated[str, typer.Option(help="With --http: a loopback address.")
                        ] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="With --http.")] = 8766) -> None:
    """Run the MCP server over stdio (remember, recall, forget, restore, ingest, ask)."""
    from hello_memory.interfaces.mcp import build_server, grants_for
    from hello_memory.interfaces.rest.security import is_loopback

    settings = _local_only("mcp")
    grants = grants_for(settings, namespaces=namespace or (), api_key=api_key)
    if http and not is_loopback(host):
        # the MCP endpoint has no per-request keys: its grants hold for every caller
        raise InvalidInputError(f"mcp --http serves loopback addresses only, not {host!r}; "
                                "use the REST API (keys per namespace) for remote clients")
    from hello_memory.memory.manager import MemoryManager

    mm = MemoryManager.open(settings)  # nothing may reach stdout: it carries the protocol
    with mm:
        server = build_server(mm, settings, grants)
        if http:
            server.run("streamable-http", host=host, port=port)
        else:
            server.run("stdio")
