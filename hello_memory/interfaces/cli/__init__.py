"""The ``hello-memory`` command (typer + rich).

Settings come from ``--config`` (or ``HELLO_MEMORY_CONFIG``, else ``./hello-memory.yaml``
when there is one: what ``hello-memory init`` writes), then ``HELLO_MEMORY__*``
environment variables, then ``--data-dir`` / per-command options.

While ``hello-memory serve`` holds the data directory (its ``server.json`` there names
it, :mod:`hello_memory.server_info`), or with ``--server URL``, the commands ``stats``,
``search``, ``show``, ``export``, ``add`` and ``jobs ...`` run through that server's REST
API (:mod:`hello_memory.interfaces.remote`) and print the same output; the others say in one line
that they cannot, and exit 4 (docs/CLI.md, "The CLI next to a server").

Exit codes: 0 success; 1 unexpected error (traceback only with ``--debug``); 2 bad
usage, configuration or input; 3 not found; 4 a backend, server or model is
unavailable or failed; 130 interrupted.

The package: :mod:`~hello_memory.interfaces.cli.common` (the typer app, consoles, exit codes and
error handling), :mod:`~hello_memory.interfaces.cli.backend` (where a command runs: a server or
the stores here), this module (the memory commands: ``demo``, ``init``, ``add``,
``search``, ``show``, ``stats``, ``forget``, ``restore``, ``consolidate``, ``export``,
``import``, and :func:`main`), :mod:`~hello_memory.interfaces.cli.serving` (``serve``, ``ui``,
``mcp``) and :mod:`~hello_memory.interfaces.cli.extras` (``bench``, ``config``, ``jobs``,
``import-chats``, ``ingest``, ``ask``). Commands are registered in that order, which is
the order ``--help`` lists them in. The memory commands and their tables read
``console`` from this module: replacing ``hello_memory.interfaces.cli.console`` sets the width
their tables are drawn at (tests/interfaces/test_cli_rough_edges.py).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

import typer
from rich.markup import escape
from rich.table import Table

from hello_memory.config import CONFIG_ENV_VAR
from hello_memory.errors import HelloMemoryError, InvalidInputError, NotFoundError
from hello_memory.interfaces.catalogue.cli_options import field_type, option
from hello_memory.interfaces.catalogue.memory_requests import (
    AddMemory,
    ConsolidateRequest,
    ForgetRequest,
    SearchRequest,
)
from hello_memory.interfaces.cli.backend import (
    _backend,
    _given,
    _local_only,
    _open,
    _print_json,
)
from hello_memory.interfaces.cli.common import (
    _CLICK_ERROR,
    DEFAULT_CONFIG,
    EXIT_BACKEND,
    EXIT_ERROR,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    ConfigOpt,
    DataDirOpt,
    F,
    JsonOpt,
    NamespaceOpt,
    _reader_gone,
    _settings,
    _state,
    app,
    console,
    err,
    exit_code_for,
    handled,
    jobs_app,
)
from hello_memory.interfaces.remote import Backend, LocalBackend
from hello_memory.types import MemoryType

__all__ = [
    "BREAKDOWN_MIN_WIDTH", "DEFAULT_CONFIG", "DEMO_NAMESPACE", "DEMO_QUERIES", "EXIT_BACKEND",
    "EXIT_ERROR", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_USAGE", "TABLE_TEXT_CHARS", "ConfigOpt",
    "DataDirOpt", "F", "JsonOpt", "NamespaceOpt", "add", "app", "bench", "consolidate",
    "console", "demo", "err", "exit_code_for", "export_", "forget", "handled", "import_",
    "import_chats", "init", "jobs_app", "keyless_warning", "main", "mcp", "restore", "search",
    "serve", "show", "show_config", "stats", "ui_command",
]

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


# The types of the options whose choices a catalogue request model's Literal gives
# (hello_memory/interfaces/catalogue/cli_options.py): the same values as REST, MCP and the
# tools take.
# typer reads them at run time; a type checker sees their plain form.
if TYPE_CHECKING:
    AddType: TypeAlias = str | None
    SearchTypes: TypeAlias = list[Any] | None  # str enum members
    ForgetStrategy: TypeAlias = str | None
    ConsolidateFrom: TypeAlias = str | None
    ConsolidateTo: TypeAlias = str | None
else:
    AddType = field_type(AddMemory, "memory_type")
    SearchTypes = field_type(SearchRequest, "memory_types")
    ForgetStrategy = field_type(ForgetRequest, "strategy")
    ConsolidateFrom = field_type(ConsolidateRequest, "from_type")
    ConsolidateTo = field_type(ConsolidateRequest, "to_type")

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
    defaults = Path(__file__).resolve().parents[2] / "default.yaml"  # hello_memory/
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
    memory_type: AddType = option(AddMemory, "memory_type", "--type"),
    importance: float | None = option(AddMemory, "importance"),
    session_id: str | None = option(AddMemory, "session_id", "--session"),
    user_id: str | None = option(AddMemory, "user_id", "--user"),
    metadata: str | None = option(AddMemory, "metadata", note="(a JSON object)"),
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
    if MemoryType(memory_type or settings.memory.default_type) == MemoryType.WORKING:
        raise InvalidInputError(
            "--type working: working memory lives only as long as the process, so no "
            "later command could find it; use --type episodic or semantic, or add working "
            "memory through the REST API, the MCP server or Python")
    with _backend() as be:  # the catalogue's add: the JSON of POST /v1/memories
        item = be.invoke("add", _given(
            content=content, memory_type=memory_type,
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
           top_k: int = option(SearchRequest, "top_k"),
           memory_type: SearchTypes = option(SearchRequest, "memory_types", "--type",
                                             note="(repeatable)"),
           recipe: str = option(SearchRequest, "recipe", note="(e.g. per-type, dense-only, "
                                "bm25-only)"),
           explain: Annotated[bool, typer.Option(
               "--explain", help="Show each hit's per-view ranks and profile parts.")] = False,
           as_of: str | None = option(SearchRequest, "as_of", "--as-of",
                                      note="(ISO 8601, UTC if no offset)"),
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
        from hello_memory.interfaces.remote import hit_from_json
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
    strategy: ForgetStrategy = option(ForgetRequest, "strategy"),
    threshold: float | None = option(ForgetRequest, "threshold"),
    max_age_days: float | None = option(ForgetRequest, "max_age_days"),
    max_items: int | None = option(ForgetRequest, "max_items"),
    dry_run: bool = option(ForgetRequest, "dry_run", "--dry-run"),
    hard: bool = option(ForgetRequest, "hard"),
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
    from_type: ConsolidateFrom = option(ConsolidateRequest, "from_type", "--from"),
    to_type: ConsolidateTo = option(ConsolidateRequest, "to_type", "--to"),
    threshold: float | None = option(ConsolidateRequest, "importance_threshold",
                                     "--threshold"),
    dry_run: bool = option(ConsolidateRequest, "dry_run", "--dry-run"),
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


# The commands after these, in the order --help lists them: serve, ui, mcp; then bench,
# config, the jobs subcommands, import-chats, ingest and ask.
from hello_memory.interfaces.cli.serving import keyless_warning, mcp, serve, ui_command  # noqa: E402

# isort: split
from hello_memory.interfaces.cli.extras import bench, import_chats, show_config  # noqa: E402


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
