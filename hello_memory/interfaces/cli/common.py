"""The ``hello-memory`` command's frame: the typer app, the consoles, the exit codes,
the error handling every command is wrapped in (:func:`handled`), the global options
and the settings they load. Every other module of :mod:`hello_memory.interfaces.cli` adds its
commands to :data:`app`."""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console

from hello_memory.config import CONFIG_ENV_VAR, Settings, load_settings
from hello_memory.errors import (
    BackendUnavailableError,
    EmbeddingError,
    HelloMemoryError,
    NotFoundError,
    StoreError,
)


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

