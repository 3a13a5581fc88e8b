"""The ``hello-memory`` command (typer + rich).

Settings come from ``--config`` (or ``HELLO_MEMORY_CONFIG``, else ``./hello-memory.yaml``
when there is one: what ``hello-memory init`` writes), then ``HELLO_MEMORY__*``
environment variables, then ``--data-dir`` / per-command options.

While ``hello-memory serve`` holds the data directory (its ``server.json`` there names
it, :mod:`hello_memory.server_info`), or with ``--server URL``, the commands ``stats``,
``search``, ``show``, ``export``, ``add`` and ``jobs ...`` run through that server's REST
API (:mod:`hello_memory.remote`) and print the same output; the others say in one line
that they cannot, and exit 4 (docs/CLI.md, "The CLI next to a server").

Exit codes: 0 success; 1 unexpected error (traceback only with ``--debug``); 2 bad
usage, configuration or input; 3 not found; 4 a backend, server or model is
unavailable or failed; 130 interrupted.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import secrets
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hello_memory.config import CONFIG_ENV_VAR, Settings, load_settings
from hello_memory.errors import (
    BackendUnavailableError,
    EmbeddingError,
    HelloMemoryError,
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from hello_memory.remote import Backend, LocalBackend, ServerClient
from hello_memory.server_info import ServerInfo, discover, info_path
from hello_memory.types import MemoryType


def _flag_type(display: Callable[[Any, Any], str | None]) -> Callable[[Any, Any], str | None]:
    """A flag's help row shows no value type (``--json``, ``--verbose/--no-verbose``,
    not ``--json <bool>``): typer's rich help gives every option one, flags included."""
    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) or getattr(self, "count", False):
            return None
        return display(self, ctx)
    return display_type_rich


typer.core.TyperOption.display_type_rich = _flag_type(  # type: ignore[method-assign, assignment]
    typer.core.TyperOption.display_type_rich)

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="hello-memory: long-term memory for LLM agents.")
jobs_app = typer.Typer(no_args_is_help=True, help="Maintenance jobs (cron-friendly).")
app.add_typer(jobs_app, name="jobs")
console = Console()
err = Console(stderr=True)
console.on_broken_pipe = lambda: _reader_gone()  # type: ignore[method-assign]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_BACKEND = 0, 1, 2, 3, 4
_state: dict[str, Any] = {}
# click's usage-error base, wherever this typer version keeps click (vendored or not)
_CLICK_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
F = TypeVar("F", bound=Callable[..., Any])

ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", "-c", help="YAML settings file (else $HELLO_MEMORY_CONFIG, else "
    "./hello-memory.yaml when there is one).")]
DataDirOpt = Annotated[Path | None, typer.Option(
    "--data-dir", help="Where embedded stores live (default ./.hello_memory).")]
NamespaceOpt = Annotated[str | None, typer.Option(
    "--namespace", "-n", help="Namespace (default: settings.default_namespace).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


def exit_code_for(exc: BaseException) -> int:
    if isinstance(exc, NotFoundError):
        return EXIT_NOT_FOUND
    if isinstance(exc, (BackendUnavailableError, StoreError, EmbeddingError)):
        return EXIT_BACKEND
    if isinstance(exc, HelloMemoryError):
        # LLM errors live in their own branch (hello_memory.llm.base)
        return EXIT_BACKEND if type(exc).__module__.startswith("hello_memory.llm") \
            else EXIT_USAGE
    return EXIT_ERROR


def _reader_gone() -> NoReturn:
    """stdout's reader went away (``hello-memory search ... | head -1``): end quietly,
    with status 0, as the output it wanted was written. stdout is pointed at
    /dev/null first, so Python's flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    raise SystemExit(EXIT_OK)


def handled(fn: F) -> F:
    """Turn library errors into one red line and an exit code (tracebacks with --debug)."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, _CLICK_ERROR, SystemExit):
            raise
        except BrokenPipeError:
            _reader_gone()
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(130) from None
        except Exception as exc:
            if _state.get("debug"):
                raise
            what = "" if isinstance(exc, HelloMemoryError) else "unexpected "
            err.print(f"[bold red]error:[/] {what}{type(exc).__name__ + ': ' if what else ''}"
                      f"{exc}", highlight=False, soft_wrap=True)  # one line, even piped
            if what:
                err.print("(run with --debug for the traceback)")
            raise typer.Exit(exit_code_for(exc)) from None
    return run  # type: ignore[return-value]


@app.callback()
def _root(config: ConfigOpt = None, data_dir: DataDirOpt = None,
          server: Annotated[str | None, typer.Option(
              "--server", envvar="HELLO_MEMORY_SERVER", metavar="URL",
              help="Run stats, search, show, export, add and jobs through the "
              "hello-memory server at URL (found by itself when it holds the data "
              "directory).")] = None,
          api_key: Annotated[str | None, typer.Option(
              "--api-key", envvar="HELLO_MEMORY_API_KEY",
              help="API key for the server (default: an admin key, granted '*', of "
              "api.api_keys in these settings).")] = None,
          allow_insecure_key: Annotated[bool, typer.Option(
              "--allow-insecure-key",
              help="Send the API key to a --server URL that is neither HTTPS nor on "
              "this machine (plain HTTP over the network: anyone on the way reads "
              "it).")] = False,
          verbose: Annotated[bool, typer.Option(help="Log at INFO level.")] = False,
          debug: Annotated[bool, typer.Option(help="Show tracebacks.")] = False) -> None:
    logging.basicConfig(level=logging.DEBUG if debug else logging.INFO if verbose
                        else logging.WARNING, format="%(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    _state.update(config=config, debug=debug, server=server, api_key=api_key,
                  allow_insecure_key=allow_insecure_key,
                  overrides={"data_dir": data_dir} if data_dir else {})


DEFAULT_CONFIG = Path("hello-memory.yaml")  # what `init` writes, read when present


def _config_path() -> Path | None:
    """``--config``; else None when ``$HELLO_MEMORY_CONFIG`` is set (load_settings reads
    it; set empty, it means no file); else ``./hello-memory.yaml`` if it exists."""
    given: Path | None = _state.get("config")
    if given is not None:
        return given
    if CONFIG_ENV_VAR in os.environ:
        return None
    return DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None


def _settings() -> Settings:
    return load_settings(_config_path(), **_state.get("overrides", {}))


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


DEMO_NAMESPACE = "demo"


def _demo_memories() -> list[dict[str, Any]]:
    base = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=20)
    rows: list[tuple[str, float, str, int, MemoryType]] = [
        ("Alice moved from Paris to Berlin in May 2024 for a job at Acme Robotics.",
         0.8, "s1", 0, MemoryType.EPISODIC),
        ("Alice prefers green tea over coffee and never drinks anything after 6 pm.",
         0.6, "s1", 1, MemoryType.SEMANTIC),
        ("The user's Bluetooth headphones (order 984233) have a crackling left earbud.",
         0.7, "s2", 3, MemoryType.EPISODIC),
        ("用户喜欢降噪耳机，预算在一千元以内。", 0.5, "s2", 3, MemoryType.SEMANTIC),
        ("Bob is allergic to peanuts; always check restaurant menus for him.",
         0.9, "s3", 6, MemoryType.SEMANTIC),
        ("The team agreed to ship version 2.0 of the mobile app on June 30.",
         0.7, "s4", 10, MemoryType.EPISODIC),
        ("上周五我们在杭州西湖边讨论了知识图谱的设计。", 0.6, "s5", 12, MemoryType.EPISODIC),
        ("Deploy steps: run migrations first, then restart the API workers one by one.",
         0.8, "s6", 15, MemoryType.SEMANTIC),
    ]
    return [dict(content=text, namespace=DEMO_NAMESPACE, importance=imp, session_id=sid,
                 user_id="demo-user", memory_type=mtype, event_time=base + timedelta(days=day))
            for text, imp, sid, day, mtype in rows]


DEMO_QUERIES = [
    "Where does Alice live now?",
    "what should I avoid when booking dinner for Bob",
    "耳机有什么问题",
    "how do we roll out a new release of the backend",
]


BREAKDOWN_MIN_WIDTH = 110  # narrower terminals get score, type and memory only
# A table shows at most this much of a memory's text; `hello-memory show ID` shows it all.
TABLE_TEXT_CHARS = 600


def _table_text(content: str, memory_id: str) -> str:
    """A memory's text for a table: whole up to TABLE_TEXT_CHARS, else cut there with
    how much is left out and the command that shows it whole."""
    if len(content) <= TABLE_TEXT_CHARS:
        return content
    rest = len(content) - TABLE_TEXT_CHARS
    return (f"{content[:TABLE_TEXT_CHARS].rstrip()}… [{rest:,} more characters: "
            f"hello-memory show {memory_id}]")


def _hits_table(title: str, hits: list[dict[str, Any]], *, ids: bool = False,
                width: int | None = None) -> Table:
    """One row per hit (as ``hit_to_json`` and the REST API give them). The breakdown
    columns (sim, recency, graph) only when the terminal has room for them; with
    ``ids`` each memory cell ends with the full id on its own line (what ``show``
    takes), so no id column squeezes the text."""
    from rich.text import Text

    wide = (console.width if width is None else width) >= BREAKDOWN_MIN_WIDTH
    table = Table(title=title, title_justify="left")
    cols = ["score", "type", *(["sim", "recency", "graph"] if wide else []), "memory"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("type", "memory") else "right",
                         no_wrap=col != "memory", ratio=1 if col == "memory" else None)
    for h in hits:
        b = h.get("breakdown") or {}
        cell = Text(_table_text(h["content"], h["id"]))
        if ids:
            cell.append("\n")
            cell.append(f"id {h['id']}", style="dim")
        table.add_row(f"{h['score']:.3f}", h["memory_type"],
                      *([f"{b.get(k, 0.0):.2f}" for k in ("similarity", "recency", "graph")]
                        if wide else []), cell)
    return table


@app.command()
@handled
def demo(top_k: int = typer.Option(3, min=1, max=20, help="Results per query.")) -> None:
    """Store a handful of memories (first run only), search them, print results."""
    settings, mm = _open(_local_only("demo"))
    with mm:
        existing = mm.stats(DEMO_NAMESPACE)["total"]
        if existing:
            console.print(f"[bold green]Found {existing} memories stored by an earlier run[/] "
                          f"in {settings.data_dir.resolve()}; nothing added this time.")
        else:
            added = mm.add_many(_demo_memories())
            console.print(f"[bold]Stored {len(added)} memories[/] in {settings.data_dir.resolve()} "
                          "(SQLite records, embedded Qdrant vectors, entity graph).")
        mm.add("The user is reading the hello-memory demo right now.", "working",
               namespace=DEMO_NAMESPACE)
        from hello_memory.memory.manager import hit_to_json

        for query in DEMO_QUERIES:
            hits = mm.search(query, top_k=top_k, namespace=DEMO_NAMESPACE)
            console.print(_hits_table(f"search: {query}", [hit_to_json(h) for h in hits]))
        st = mm.stats(DEMO_NAMESPACE)
        console.print(f"namespace {DEMO_NAMESPACE!r}: {st['by_type']} | vectors {st['vectors']} | "
                      f"graph {st['graph']}. Working memory is per process; the rest persists: "
                      "run again.")


@app.command()
@handled
def init(path: Annotated[Path, typer.Argument(help="Config file to write.")
                         ] = Path("hello-memory.yaml"),
         force: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False
         ) -> None:
    """Write a starter config file and create the embedded stores (checks the model)."""
    import yaml

    if path.exists() and not force:
        raise InvalidInputError(f"{path} exists; pass --force to overwrite it")
    settings = _local_only("init")
    data = settings.model_dump(mode="json", exclude={"api": {"api_keys"}})
    for section in data.values():  # secrets stay in the environment, not in a file
        if isinstance(section, dict):
            for key in ("api_key", "password"):
                if section.get(key):
                    section[key] = None
    # the commented defaults ship inside the package (a wheel has no configs/ folder)
    defaults = Path(__file__).resolve().parent / "default.yaml"
    path.write_text(f"# hello-memory settings; every key with its meaning: {defaults}\n"
                    + yaml.safe_dump(data, sort_keys=False, allow_unicode=True),
                    encoding="utf-8")
    _, mm = _open(settings)
    with mm:
        console.print(f"wrote {path}; stores ready in {settings.data_dir.resolve()} "
                      f"(embedding model {settings.embedding.model!r} loaded)")
    if path.resolve() == DEFAULT_CONFIG.resolve():
        console.print(f"commands run in {Path.cwd()} read {DEFAULT_CONFIG} "
                      f"(unless --config or ${CONFIG_ENV_VAR} names another file)")
    else:
        console.print(f"pass --config {path} (or export {CONFIG_ENV_VAR}={path}) to use it",
                      highlight=False)


@app.command()
@handled
def add(
    content: str,
    namespace: NamespaceOpt = None,
    memory_type: Annotated[MemoryType | None, typer.Option("--type")] = None,
    importance: Annotated[float | None, typer.Option(min=0.0, max=1.0)] = None,
    session_id: Annotated[str | None, typer.Option("--session")] = None,
    user_id: Annotated[str | None, typer.Option("--user")] = None,
    metadata: Annotated[str | None, typer.Option(help="JSON object of tags.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Store one memory (importance estimated when not given); prints its id.
    Not --type working: working memory lives only as long as the process."""
    try:
        meta = json.loads(metadata) if metadata else None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"--metadata is not valid JSON ({exc.msg} at character "
                                f"{exc.pos}); give a JSON object such as "
                                "'{\"topic\": \"keys\"}'") from None
    if meta is not None and not isinstance(meta, dict):
        raise InvalidInputError("--metadata must be a JSON object")
    settings = _settings()
    if (memory_type or MemoryType(settings.memory.default_type)) == MemoryType.WORKING:
        raise InvalidInputError(
            "--type working: working memory lives only as long as the process, so no "
            "later command could find it; use --type episodic or semantic, or add working "
            "memory through the REST API, the MCP server or Python")
    with _backend() as be:  # the catalogue's add: the JSON of POST /v1/memories
        item = be.invoke("add", _given(
            content=content, memory_type=memory_type.value if memory_type else None,
            importance=importance, metadata=meta, session_id=session_id, user_id=user_id),
            namespace=namespace)
    if as_json:
        _print_json(item)
    else:
        print(item["id"])
        if item.get("duplicate_of"):  # stdout stays the id alone, for scripts
            err.print(f"already stored: {item['id']} (memory.on_duplicate)",
                      highlight=False, soft_wrap=True)


def _as_of_option(value: str | None) -> datetime | None:
    """``search --as-of``: an ISO 8601 date or time; without an offset, UTC."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise typer.BadParameter(f"not an ISO 8601 time: {value!r}",
                                 param_hint="--as-of") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _namespace_hint(namespace: str | None, be: Backend | None = None) -> None:
    """After an empty answer: when a stored namespace differs from the one asked for
    only in case (``-n Sam``, ``sam`` holds the memories), one line on stderr naming
    it. Namespaces stay case-sensitive; the hint is skipped when the namespaces cannot
    be listed (a server key that is not an admin's)."""
    settings = _settings()
    asked = namespace or settings.default_namespace
    try:
        if be is None:
            with _backend(embeds=False) as backend:
                names = backend.invoke("list_namespaces", {}, namespace=None)["namespaces"]
        else:
            names = be.invoke("list_namespaces", {}, namespace=None)["namespaces"]
    except HelloMemoryError:
        return
    near = [n for n in names if n != asked and n.casefold() == asked.casefold()]
    if near:
        err.print(f"hint: namespace {asked!r} holds no memories, but {near[0]!r} does "
                  f"(namespaces are case-sensitive): -n {near[0]}", style="yellow",
                  highlight=False, soft_wrap=True)


@app.command()
@handled
def search(query: str, namespace: NamespaceOpt = None,
           top_k: int = typer.Option(5, min=1, max=100),
           memory_type: Annotated[list[MemoryType] | None, typer.Option(
               "--type", help="Limit to a memory type (repeatable).")] = None,
           recipe: Annotated[str, typer.Option(
               help="Search recipe: hybrid (default) or an ablation, e.g. per-type, "
               "dense-only, bm25-only.")] = "hybrid",
           explain: Annotated[bool, typer.Option(
               "--explain", help="Show each hit's per-view ranks and profile parts.")] = False,
           as_of: Annotated[str | None, typer.Option(
               "--as-of", help="What was true then (ISO 8601, UTC if no offset): "
               "memories superseded since are found too.")] = None,
           as_json: JsonOpt = False) -> None:
    """Search every memory type (or --type ones) with the one hybrid search."""
    when = _as_of_option(as_of)
    with _backend() as be:  # the catalogue's search: the JSON of POST /v1/search
        found = be.invoke("search", _given(
            query=query, top_k=top_k, memory_types=[t.value for t in memory_type or ()] or None,
            recipe=recipe, as_of=when), namespace=namespace)
    hits: list[dict[str, Any]] = found["hits"]
    if not hits:
        _namespace_hint(namespace)
    if as_json:
        _print_json(found)
    elif explain:
        from hello_memory.remote import hit_from_json
        from hello_memory.retrieval.fusion import explain as explain_hit

        for h in hits:
            console.print(explain_hit(hit_from_json(h)), markup=False, highlight=False)
    else:
        console.print(_hits_table(f"search: {query}", hits, ids=True))


@app.command()
@handled
def show(memory_id: str, namespace: NamespaceOpt = None, as_json: JsonOpt = False) -> None:
    """Print one memory by id."""
    with _backend(embeds=False) as be:
        data = be.invoke("get", {"memory_id": memory_id}, namespace=namespace)
    if as_json:
        _print_json(data)
        return
    table = Table(show_header=False)
    for key, value in data.items():
        table.add_row(key, json.dumps(value, ensure_ascii=False) if isinstance(value, dict)
                      else str(value))
    console.print(table)


@app.command()
@handled
def stats(namespace: NamespaceOpt = None, as_json: JsonOpt = False) -> None:
    """Counts per memory type and store for one namespace."""
    with _backend(embeds=False) as be:
        data = be.invoke("stats", {}, namespace=namespace)
        if not data.get("total"):
            _namespace_hint(namespace, be)
    if as_json:
        _print_json(data)
        return
    console.print(_stats_table(data))


def _stats_table(data: dict[str, Any]) -> Table:
    table = Table(title=f"namespace {data['namespace']!r}", title_justify="left")
    table.add_column("what")
    table.add_column("count", justify="right")
    for mtype, n in data["by_type"].items():
        note = " (this process only)" if mtype == MemoryType.WORKING.value else ""
        table.add_row(f"{mtype} memories{note}", str(n))
    table.add_row("total", str(data["total"]), end_section=True)
    table.add_row("forgotten (restorable)", str(data["forgotten"]))
    table.add_row("vectors", str(data["vectors"]))
    for key, n in data["graph"].items():
        table.add_row(f"graph {key}", str(n))
    return table


@app.command()
@handled
def forget(
    ids: Annotated[list[str] | None, typer.Argument(help="Forget these ids.")] = None,
    namespace: NamespaceOpt = None,
    strategy: Annotated[str | None, typer.Option(
        help="importance | time | capacity (default: jobs.forget_strategy)")] = None,
    threshold: Annotated[float | None, typer.Option(min=0.0, max=1.0)] = None,
    max_age_days: Annotated[float | None, typer.Option(min=0.0)] = None,
    max_items: Annotated[int | None, typer.Option(min=0)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run")] = False,
    hard: Annotated[bool, typer.Option(help="Delete for good (no restore).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Forget memories: the given ids, or those a strategy picks. Soft by default
    (`hello-memory restore ID...` undoes it)."""
    if ids and (strategy or hard):
        raise InvalidInputError("give ids or a --strategy (--hard), not both")
    settings, mm = _open(_local_only("forget"))
    with mm:
        # the catalogue's forget: the JSON of POST /v1/forget, the jobs defaults for
        # what is left out (docs/JOBS.md, "Lifecycle defaults")
        result = LocalBackend(mm, settings).invoke("forget", _given(
            ids=ids or None, strategy=strategy, threshold=threshold,
            max_age_days=max_age_days, max_items=max_items, dry_run=dry_run, hard=hard),
            namespace=namespace)
    if as_json:
        _print_json(result)
        return
    verb = "would forget" if dry_run else "deleted" if hard else "forgot"
    console.print(f"{verb} {len(result['ids'])} memories in {result['namespace']!r}")
    for mid in result["ids"]:
        console.print(f"  {mid}", highlight=False)


@app.command()
@handled
def restore(ids: Annotated[list[str], typer.Argument(help="Ids to bring back.")],
            namespace: NamespaceOpt = None) -> None:
    """Bring soft-forgotten memories back into search (an unknown id changes nothing
    and exits 3)."""
    _, mm = _open(_local_only("restore"), embeds=False)
    with mm:
        unknown = []
        for mid in ids:
            try:
                mm.get(mid, namespace=namespace)
            except NotFoundError:
                unknown.append(mid)
        if unknown:
            raise NotFoundError(f"no memory {', '.join(map(repr, unknown))} in namespace "
                                f"{mm.resolve_namespace(namespace)!r}; nothing restored")
        n = mm.restore(ids, namespace=namespace)
    console.print(f"restored {n} of {len(ids)}")


@app.command()
@handled
def consolidate(
    namespace: NamespaceOpt = None,
    from_type: Annotated[str | None, typer.Option("--from", help=(
        "working or episodic (default: jobs.consolidate_from, episodic)."))] = None,
    to_type: Annotated[str | None, typer.Option("--to", help=(
        "episodic or semantic (default: jobs.consolidate_to, semantic)."))] = None,
    threshold: Annotated[float | None, typer.Option(min=0.0, max=1.0, help=(
        "Importance at least this (default: jobs.consolidate_importance)."))] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Promote important memories (episodic -> semantic by default), merging duplicates."""
    settings, mm = _open(_local_only("consolidate"))
    with mm:  # the catalogue's consolidate: the JSON of POST /v1/consolidate
        report = LocalBackend(mm, settings).invoke("consolidate", _given(
            from_type=from_type, to_type=to_type, importance_threshold=threshold,
            dry_run=dry_run), namespace=namespace)
    if as_json:
        _print_json(report)
        return
    moved = sum(len(v) for v in report["merged"].values())
    verb = "would move" if dry_run else "moved"
    console.print(f"consolidate [{report['namespace']}]: {verb} {moved} {report['from_type']} "
                  f"memories into {len(report['merged'])} {report['to_type']} memories",
                  markup=False, highlight=False)


@app.command("export")
@handled
def export_(path: Path, namespace: NamespaceOpt = None) -> None:
    """Write a namespace's memories as JSON lines (vectors are recomputed on import)."""
    with _backend(embeds=False) as be, err.status(f"Exporting to {path}..."):
        n = be.export_jsonl(path, namespace=namespace)
    console.print(f"exported {n} memories to {path}")


@app.command("import")
@handled
def import_(path: Path, namespace: NamespaceOpt = None) -> None:
    """Load an export (validated first; ids already present are skipped)."""
    if not path.is_file():
        if path.exists():
            raise InvalidInputError(f"{path} is not a file (give a JSON-lines export)")
        raise NotFoundError(f"{path}: no such file")
    _, mm = _open(_local_only("import"))
    with mm, err.status(f"Importing {path} (embedding every memory)..."):
        result = mm.import_jsonl(path, namespace=namespace)
    console.print(f"imported {result['imported']}, skipped {result['skipped']}")


def keyless_warning(settings: Settings, bind: str) -> str | None:
    """What ``serve`` says before it starts without a key: every request but
    ``/healthz`` would be a 401. Nothing when keys are set, or when auth is disabled on
    a loopback address (check_bind refuses it elsewhere)."""
    from hello_memory.api.security import is_loopback

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
    from hello_memory import __version__
    from hello_memory.api import create_app
    from hello_memory.api.security import check_bind
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.server_info import (
        client_host,
        install_proof,
        remove_info,
        remove_token,
        write_info,
        write_token,
    )

    settings = _settings()
    bind = host or settings.api.host
    check_bind(settings.api, bind)
    held = _held_by(settings)
    if held is not None:  # a live server: say so before loading anything
        raise BackendUnavailableError(
            f"the data directory {settings.data_dir} is already served by "
            f"{held.describe()}; stop that server first, or give another --data-dir")
    import uvicorn

    from hello_memory.factory import build_server_embedder

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

    api = create_app(settings, manager=mm, run_jobs=True)
    if exclusive:
        install_proof(api, token, lambda: address["url"])
    config = uvicorn.Config(api, host=bind,
                            port=settings.api.port if port is None else port,
                            log_level="info", timeout_graceful_shutdown=5)
    server = _Server(config)
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
    if not server.started:
        raise BackendUnavailableError(f"the server did not start on {bind} (the log line "
                                      "above says why)")


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

    from hello_memory.api import create_app
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
    from hello_memory.api.security import is_loopback
    from hello_memory.mcp_server import build_server, grants_for

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


@app.command()
@handled
def bench(n: Annotated[int, typer.Option(min=10, max=100_000)] = 500,
          queries: Annotated[int, typer.Option(min=1, max=10_000)] = 50) -> None:
    """Time add and search on a throwaway embedded store (synthetic sentences)."""
    import statistics
    import tempfile
    import time

    texts = [f"Note {i}: {who} talked about {what} in {where}."
             for i, (who, what, where) in enumerate(
                 (w, t, p) for w in ("Alice", "Bob", "Chen", "Dana", "Emeka")
                 for t in ("tea", "maps", "bikes", "jazz", "robots", "gardens", "chess")
                 for p in ("Berlin", "Lima", "Hangzhou", "Oslo", "Accra"))][:n]
    while len(texts) < n:
        texts.append(f"Note {len(texts)}: {texts[len(texts) % 175][9:]}")
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(_state.get("config"), data_dir=tmp)
        _, mm = _open(settings)
        with mm:
            from rich.progress import track

            start = time.perf_counter()
            for k in track(range(0, n, 100), description="adding", console=err):
                mm.add_many([{"content": t, "namespace": "bench"} for t in texts[k:k + 100]])
            add_s = time.perf_counter() - start
            lat = []
            for q in track(range(queries), description="searching", console=err):
                t0 = time.perf_counter()
                mm.search(f"who talked about {texts[q % n][10:30]}", namespace="bench")
                lat.append((time.perf_counter() - t0) * 1000)
    table = Table(title=f"bench: {n} memories, {queries} searches", title_justify="left")
    for col in ("add/s", "search p50 ms", "search p95 ms"):
        table.add_column(col, justify="right")
    lat.sort()
    table.add_row(f"{n / add_s:.0f}", f"{statistics.median(lat):.1f}",
                  f"{lat[min(len(lat) - 1, int(len(lat) * 0.95))]:.1f}")
    console.print(table)


@app.command("config")
@handled
def show_config() -> None:
    """Print the effective settings (secrets masked)."""
    data = _settings().model_dump(mode="json")
    for section in data.values():
        if isinstance(section, dict):
            for key in ("api_key", "password"):
                if section.get(key):
                    section[key] = "***"
            if section.get("api_keys"):
                section["api_keys"] = {f"***key{n}": v for n, v in
                                       enumerate(section["api_keys"].values(), 1)}
    console.print_json(data=data)


from hello_memory import cli_jobs  # noqa: E402  (registers the `jobs` subcommands)

cli_jobs.register(jobs_app, handled=handled, backend=_backend)


def _register_rag() -> None:
    try:
        from hello_memory.rag.cli import register
    except ImportError as exc:
        reason = str(exc)

        @app.command("ingest", context_settings={"ignore_unknown_options": True,
                                                 "allow_extra_args": True})
        def ingest_missing() -> None:
            """Index documents (needs the rag extra)."""
            err.print(f"[bold red]error:[/] ingest needs the rag extra: pip install "
                      f"'hello-memory[rag]' ({reason})")
            raise typer.Exit(EXIT_USAGE)

        @app.command("ask", context_settings={"ignore_unknown_options": True,
                                              "allow_extra_args": True})
        def ask_missing() -> None:
            """Answer from ingested documents (needs the rag extra)."""
            err.print(f"[bold red]error:[/] ask needs the rag extra: pip install "
                      f"'hello-memory[rag]' ({reason})")
            raise typer.Exit(EXIT_USAGE)
        return
    register(app)
    for info in app.registered_commands:  # same error handling as every other command
        if info.name in ("ingest", "ask") and info.callback is not None:
            info.callback = handled(_opens_stores(info.name, info.callback))


def _opens_stores(command: str, fn: F) -> F:
    """``fn``, refused (one line, exit 4) while a server holds the data directory."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        _local_only(command)
        return fn(*args, **kwargs)
    return run  # type: ignore[return-value]



# --- import-chats (issue 17: hello_memory/chat_import.py) ---------------------------
def _chat_format_of(path: Path) -> str | None:
    """Which export a file looks like (for the hint of a wrong ``--format``): ChatGPT's
    ``mapping`` trees, Claude's ``chat_messages``, or JSON lines with a ``role``."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            head = fh.read(256 * 1024)
    except OSError:
        return None
    if '"mapping"' in head:
        return "chatgpt"
    if '"chat_messages"' in head:
        return "claude"
    first = next((line.strip() for line in head.splitlines() if line.strip()), "")
    if first.startswith("{") and '"role"' in first and '"content"' in first:
        return "jsonl"
    return None


class _LineProgress:
    """The progress of a long import where stderr is no terminal (a log, CI): one line
    per tenth of the way, instead of a bar redrawn in place."""

    def __init__(self) -> None:
        self._shown = -1

    def write(self, text: str) -> None:
        import re

        found = re.search(r"(\d+)/(\d+)", text)
        if not found:
            return
        done, total = int(found.group(1)), int(found.group(2))
        tenth = done * 10 // total if total else 10
        if tenth > self._shown:
            self._shown = tenth
            err.print(f"import-chats: {done}/{total} turns", highlight=False)

    def flush(self) -> None:
        pass


@app.command("import-chats")
@handled
def import_chats(
    path: Annotated[Path, typer.Argument(help="The export file.")],
    fmt: Annotated[str, typer.Option("--format", help="chatgpt (conversations.json), "
                                     "claude (Claude's export) or jsonl (role, content, "
                                     "timestamp per line).")] = "jsonl",
    namespace: NamespaceOpt = None,
    user_id: Annotated[str | None, typer.Option(help="user_id of every turn.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Import chat history: one episodic memory per turn, at its real time, the
    conversation as its session; a second run adds nothing."""
    from hello_memory import chat_import

    if fmt not in chat_import.FORMATS:
        raise InvalidInputError(f"--format must be one of {', '.join(chat_import.FORMATS)}, "
                                f"got {fmt!r}")
    if not path.is_file():
        if path.exists():
            raise InvalidInputError(f"{path} is not a file")
        raise NotFoundError(f"{path}: no such file")
    from hello_memory.validation import configure_limits

    settings = _local_only("import-chats")
    # The whole file is read and every turn validated before the stores open: a bad
    # file is one line, exit 2, and nothing of it is stored (docs/ADAPTERS.md).
    configure_limits(settings.limits)
    # No line before the check: a refused file is one line on stderr (tests/interfaces/
    # test_import_chats.py); the count below says the reading is done.
    try:
        turns = chat_import.read_chats(path, fmt)
    except InvalidInputError as exc:
        guess = _chat_format_of(path)
        if guess is None or guess == fmt:
            raise
        raise InvalidInputError(f"{exc}; this file looks like a {guess} export: try "
                                f"--format {guess}") from None
    chat_import.prepare_chats(turns, fmt, namespace or settings.default_namespace,
                              user_id=user_id)
    err.print(f"{len({t.conversation for t in turns})} conversations, {len(turns)} turns "
              "checked; storing them (each turn is embedded)", highlight=False,
              soft_wrap=True)
    _, mm = _open(settings)
    with mm:
        result = chat_import.import_chats(
            mm, path, fmt, namespace=namespace, user_id=user_id, progress=True,
            turns=turns, progress_file=None if err.is_terminal else _LineProgress())
    if as_json:
        _print_json(result)
    else:
        console.print(f"{result['conversations']} conversations, {result['turns']} turns: "
                      f"imported {result['imported']}, skipped {result['skipped']} already "
                      f"stored, left out {result['left_out']} without text")

_register_rag()


def main() -> None:
    try:
        try:
            code = app(standalone_mode=False)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        _reader_gone()
    except HelloMemoryError as exc:  # raised outside a command (e.g. while parsing)
        if _state.get("debug"):
            raise
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise SystemExit(exit_code_for(exc)) from None
    except _CLICK_ERROR as exc:  # usage errors: one line, as docs/CLI.md's exit codes say
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            console.print(ctx.get_help(), highlight=False, markup=False)
            raise SystemExit(EXIT_USAGE) from None
        where = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
        message = escape(f"{exc.format_message()}{where}")  # type: ignore[attr-defined]
        err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
        raise SystemExit(getattr(exc, "exit_code", EXIT_USAGE)) from None
    except (KeyboardInterrupt, EOFError):
        raise SystemExit(130) from None
    if type(code).__name__ == "Abort" or code is None:
        code = 0
    raise SystemExit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
