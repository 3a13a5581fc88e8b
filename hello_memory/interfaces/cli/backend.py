"""Where a command of the ``hello-memory`` CLI runs: through a server (``--server URL``,
or the one that holds the data directory: docs/CLI.md, "The CLI next to a server") or
on the stores opened in this process, and the refusal of commands that need the
stores here while a server holds them."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from rich.markup import escape

from hello_memory.config import Settings
from hello_memory.errors import BackendUnavailableError
from hello_memory.interfaces.cli.common import _settings, _state, err
from hello_memory.interfaces.remote import Backend, LocalBackend, ServerClient
from hello_memory.server_info import ServerInfo, discover, info_path


# --- the server next to the CLI (docs/CLI.md, "The CLI next to a server") --------------
def _held_by(settings: Settings) -> ServerInfo | None:
    """The live server proven to hold this data directory's embedded stores, if any
    (:func:`hello_memory.server_info.discover`: nothing but a nonce is sent before it
    proves itself). A ``server.json`` that is not trusted is one line on stderr saying
    why, and the command runs here, as for a stale file."""
    found = discover(settings.data_dir)
    if found.refused:
        err.print(f"warning: not using {escape(str(info_path(settings.data_dir)))}: "
                  f"{escape(found.refused)}; running in this process",
                  style="yellow", highlight=False, soft_wrap=True)
    info = found.info
    return info if info is not None and info.exclusive else None


def _server_key(settings: Settings) -> str | None:
    """``--api-key`` / ``$HELLO_MEMORY_API_KEY``, else an admin key (granted ``*``) of
    these settings' ``api.api_keys`` (the server's, when both read the same config),
    else none (a loopback server with ``api.auth_disabled``)."""
    given: str | None = _state.get("api_key")
    if given:
        return given
    return next((key for key, patterns in settings.api.api_keys.items() if "*" in patterns),
                None)


@contextlib.contextmanager
def _backend(*, embeds: bool = True) -> Iterator[Backend]:
    """Where a server-capable command runs: through ``--server URL``, through the
    server that holds the data directory, or on the stores opened here."""
    settings = _settings()
    url: str | None = _state.get("server")
    if not url:
        held = _held_by(settings)
        if held is not None:
            url = held.url
            if err.is_terminal:
                err.print(f"(through {held.describe()}, which holds "
                          f"{settings.data_dir})", style="dim", highlight=False)
    if url:
        with ServerClient(url, api_key=_server_key(settings),
                          default_namespace=settings.default_namespace,
                          allow_insecure_key=bool(_state.get("allow_insecure_key"))
                          ) as client:
            yield client
        return
    _, mm = _open(settings, embeds=embeds)
    with mm:
        yield LocalBackend(mm, settings)


# What runs through a server instead of a command that needs the stores here.
_THROUGH_SERVER = {"forget": "jobs forget", "consolidate": "jobs consolidate"}


def _instead(command: str) -> str:
    job = _THROUGH_SERVER.get(command)
    return f"use `hello-memory {job}` (it runs through the server), or " if job else ""


@contextlib.contextmanager
def _exit_cleanly(server: Any, capture: Callable[[], Any]) -> Iterator[None]:
    """uvicorn's signal capture for ``serve`` and ``ui``, minus its re-raise: uvicorn
    re-raises a SIGTERM it shut down for once it is done, which ends the process before
    the manager closes and server.json goes; a graceful shutdown is the clean exit here
    (status 0)."""
    with capture():
        try:
            yield
        finally:
            server._captured_signals.clear()


def _local_only(command: str, settings: Settings | None = None) -> Settings:
    """The settings, when ``command`` may open the stores here; else (``--server``
    given, or a live server holds the data directory) one line and exit 4."""
    settings = settings or _settings()
    url = _state.get("server")
    if url:
        raise BackendUnavailableError(
            f"{command} cannot run through a server (--server {url}): it opens the stores "
            "itself; run it without --server, or use the server's REST API "
            f"({url.rstrip('/')}/docs)")
    held = _held_by(settings)
    if held is not None:
        raise BackendUnavailableError(
            f"{command} cannot run while {held.describe()} holds the data directory "
            f"{settings.data_dir}: {_instead(command)}stop the server first, or use its "
            f"REST API ({held.url}/docs)")
    return settings


class _NoLoadEmbedder:
    """The configured embedder, for commands that embed nothing (``show``, ``stats``,
    ``restore``): opening the stores asks for the vector size, which would load the
    model (torch, seconds). A preset model's size is known without loading it; any
    embedding still goes to the real embedder, which loads on first use."""

    def __init__(self, inner: Any, dimension: int) -> None:
        self._inner, self._dimension = inner, dimension

    @property
    def name(self) -> str:
        return str(self._inner.name)

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Any) -> Any:
        return self._inner.embed(texts)

    def embed_query(self, text: str) -> Any:
        return self._inner.embed_query(text)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


def _open(settings: Settings | None = None, *, embeds: bool = True) -> Any:
    """(settings, MemoryManager). ``embeds=False``: the command embeds nothing, so a
    preset model (whose vector size is known) is not loaded to open the stores."""
    from hello_memory.memory.manager import MemoryManager

    settings = settings or _settings()
    embedder = None
    if not embeds:
        from hello_memory.embedding.presets import preset_named
        from hello_memory.factory import build_embedder

        inner = build_embedder(settings.embedding)
        preset = preset_named(inner.name)
        if preset is not None:
            embedder = _NoLoadEmbedder(inner, preset.dimension)
    try:
        with err.status("Opening stores..." if embedder is not None
                        else "Opening stores and loading the models..."):
            return settings, MemoryManager.open(settings, embedder=embedder)
    except BackendUnavailableError as exc:
        from hello_memory.server_info import pid_alive, read_info

        info = read_info(settings.data_dir)
        if info is None or not pid_alive(info.pid):
            raise
        # server.json names a live process that did not answer (docs/CLI.md, "The CLI
        # next to a server"): most likely that server is busy, e.g. building the index
        raise BackendUnavailableError(
            f"{exc} ({info.describe()} holds it but did not answer at {info.url}/healthz; "
            "it may be busy: try again)") from None


def _print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _given(**arguments: Any) -> dict[str, Any]:
    """A command's arguments for a catalogue operation: those given (None: left out,
    the operation's default)."""
    return {k: v for k, v in arguments.items() if v is not None}
