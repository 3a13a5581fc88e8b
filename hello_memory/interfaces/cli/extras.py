"""The other ``hello-memory`` commands: ``bench``, ``config``, the ``jobs`` subcommands
(:mod:`hello_memory.interfaces.cli.jobs`), ``import-chats``
(:mod:`hello_memory.interfaces.chat_import`) and
``ingest`` / ``ask`` (:mod:`hello_memory.interfaces.cli.rag`, or a one-line error without the rag
extra)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from hello_memory.config import load_settings
from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.interfaces.cli import jobs as cli_jobs
from hello_memory.interfaces.cli.backend import _backend, _local_only, _open, _print_json
from hello_memory.interfaces.cli.common import (
    EXIT_USAGE,
    F,
    JsonOpt,
    NamespaceOpt,
    _settings,
    _state,
    app,
    console,
    err,
    handled,
    jobs_app,
)


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


# registers the `jobs` subcommands
cli_jobs.register(jobs_app, handled=handled, backend=_backend)


def _register_rag() -> None:
    try:
        from hello_memory.interfaces.cli.rag import register
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



# --- import-chats (issue 17: hello_memory/interfaces/chat_import.py) ---------------------------
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
    from hello_memory.interfaces import chat_import

    if fmt not in chat_import.FORMATS:
        raise InvalidInputError(f"--format must be one of {', '.join(chat_import.FORMATS)}, "
                                f"got {fmt!r}")
    if not path.is_file():
        if path.exists():
            raise InvalidInputError(f"{path} is not a file")
        raise NotFoundError(f"{path}: no such file")
    settings = _local_only("import-chats")
    # The whole file is read and every turn validated (against settings.limits) before
    # the stores open: a bad file is one line, exit 2, and nothing of it is stored
    # (docs/ADAPTERS.md).
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
                              user_id=user_id, limits=settings.limits)
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
