"""The ``ingest`` and ``ask`` commands, added to the ``hello-memory`` app by
:func:`register` (the main CLI calls it).

Settings come from ``--config`` here, else the root command's ``--config`` /
``--data-dir``, else ``$HELLO_MEMORY_CONFIG`` and ``HELLO_MEMORY__*`` variables.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from hello_memory.interfaces.catalogue.cli_options import option
from hello_memory.interfaces.catalogue.documents import AskRequest

__all__ = ["register"]

console = Console()
err_console = Console(stderr=True)

NamespaceOpt = Annotated[str | None, typer.Option(
    "--namespace", "-n", help="Knowledge base namespace (default: settings.default_namespace).")]
ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", "-c", help="YAML settings file (else the root --config / $HELLO_MEMORY_CONFIG).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


@contextmanager
def _pipeline(ctx: typer.Context, config: Path | None) -> Iterator[tuple[Any, Any, str]]:
    """(pipeline, settings, default namespace), with everything closed afterwards."""
    from hello_memory.config import load_settings
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.rag.pipeline import RAGPipeline

    root = ctx.find_root().params if ctx is not None else {}
    overrides = {"data_dir": root["data_dir"]} if root.get("data_dir") else {}
    settings = load_settings(config or root.get("config"), **overrides)
    with err_console.status("Opening stores and loading the embedding model..."):
        mm = MemoryManager.open(settings)
    # The manager owns the one LLM client (built from settings.llm) and closes it.
    with mm:
        yield (RAGPipeline.from_manager(mm, settings=settings.rag), settings,
               settings.default_namespace)


def _summary(report: Any, namespace: str) -> Table:
    table = Table(title=f"ingest into {namespace!r}", title_justify="left")
    for col in ("files indexed", "replaced", "chunks", "skipped", "failed", "seconds"):
        table.add_column(col, justify="right")
    table.add_row(str(report.files), str(report.replaced), str(report.chunks),
                  str(len(report.skipped)), str(len(report.failed)), f"{report.seconds:.1f}")
    return table


def ingest(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Files and folders to ingest.")],
    namespace: NamespaceOpt = None,
    config: ConfigOpt = None,
    follow_symlinks: Annotated[bool, typer.Option(
        "--follow-symlinks", help="Follow links that lead out of the folders given.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Index documents (PDF, DOCX, PPTX, XLSX, HTML, Markdown, TXT, CSV, JSON)."""
    missing = [p for p in paths if not p.exists()]
    if missing:  # before any store, model or progress bar
        from hello_memory.errors import NotFoundError

        raise NotFoundError(f"no such file or folder: {', '.join(map(str, missing))}; "
                            "nothing ingested")
    with _pipeline(ctx, config) as (rag, _, default_ns):
        ns = namespace or default_ns
        report = rag.ingest(paths, namespace=ns, follow_symlinks=follow_symlinks,
                            progress=not as_json)
    if as_json:
        console.print_json(json.dumps(_as_json("ingest_paths", report)))
    else:
        console.print(_summary(report, ns))
        for path, reason in report.failed:
            console.print(f"[red]failed[/] {path}: {reason}")
        for path, reason in report.skipped:
            if reason != "unchanged":
                console.print(f"[yellow]skipped[/] {path}: {reason}")
    if report.failed:
        raise typer.Exit(1)


def _as_json(operation: str, result: object) -> dict[str, object]:
    """The JSON of ``operation``'s result as every interface prints it: the operation
    catalogue's serialiser (docs/ARCHITECTURE.md, interfaces)."""
    from hello_memory.interfaces.catalogue import default_catalogue

    return default_catalogue()[operation].serialise(result)


def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question.")],
    namespace: NamespaceOpt = None,
    config: ConfigOpt = None,
    top_k: int | None = option(AskRequest, "top_k"),
    max_context_tokens: int | None = option(AskRequest, "max_context_tokens"),
    llm_calls: int | None = option(AskRequest, "llm_calls", note="(0: passages only)"),
    as_json: JsonOpt = False,
) -> None:
    """Answer a question from ingested documents, with numbered citations."""
    with _pipeline(ctx, config) as (rag, _, default_ns):
        answer = rag.ask(question, namespace=namespace or default_ns, top_k=top_k,
                         max_context_tokens=max_context_tokens, llm_calls=llm_calls)
    if as_json:
        console.print_json(json.dumps(_as_json("ask", answer), ensure_ascii=False))
        return
    console.print(answer.text, markup=False, highlight=False)
    if answer.used_llm and answer.citations:
        console.print("\nSources:", style="bold")
        for c in answer.citations:
            console.print(c.label, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``ingest PATH...`` and ``ask QUESTION`` to ``app``."""
    app.command("ingest")(ingest)
    app.command("ask")(ask)
