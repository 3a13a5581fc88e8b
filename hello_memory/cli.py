"""The ``hello-memory`` command (typer + rich).

Settings come from ``--config`` (or ``HELLO_MEMORY_CONFIG``), then ``HELLO_MEMORY__*``
environment variables, then ``--data-dir`` / per-command options.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from hello_memory.config import Settings, load_settings
from hello_memory.errors import HelloMemoryError
from hello_memory.types import MemoryItem, MemoryType

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="hello-memory: long-term memory for LLM agents.")
console = Console()

_state: dict[str, Any] = {}

ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", "-c", help="YAML settings file (else $HELLO_MEMORY_CONFIG).")]
DataDirOpt = Annotated[Path | None, typer.Option(
    "--data-dir", help="Where embedded stores live (default ./.hello_memory).")]
NamespaceOpt = Annotated[str | None, typer.Option(
    "--namespace", "-n", help="Namespace (default: settings.default_namespace).")]


@app.callback()
def _root(config: ConfigOpt = None, data_dir: DataDirOpt = None, verbose: bool = False) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    _state["config"] = config
    _state["overrides"] = {"data_dir": data_dir} if data_dir else {}


def _settings() -> Settings:
    return load_settings(_state.get("config"), **_state.get("overrides", {}))


def _open() -> Any:
    from hello_memory.factory import open_stores

    settings = _settings()
    with console.status("Opening stores and loading the embedding model..."):
        return settings, open_stores(settings)


DEMO_NAMESPACE = "demo"


def _demo_memories() -> list[MemoryItem]:
    base = datetime(2024, 5, 6, 9, 0, tzinfo=timezone.utc)
    rows: list[tuple[str, float, str, int, MemoryType]] = [
        ("Alice moved from Paris to Berlin in May 2024 for a job at a robotics startup.",
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
    return [MemoryItem(content=text, namespace=DEMO_NAMESPACE, importance=imp, session_id=sid,
                       user_id="demo-user", memory_type=mtype,
                       event_time=base + timedelta(days=day))
            for text, imp, sid, day, mtype in rows]


DEMO_QUERIES = [
    "Where does Alice live now?",
    "what should I avoid when booking dinner for Bob",
    "耳机有什么问题",
    "how do we roll out a new release of the backend",
]


@app.command()
def demo(top_k: int = typer.Option(3, min=1, max=20, help="Results per query.")) -> None:
    """Store a handful of memories (first run only), search them, print results."""
    from hello_memory.stores.records import ItemFilter

    settings, stores = _open()
    with stores:
        existing = stores.records.count_items(DEMO_NAMESPACE, ItemFilter(status=None))
        if existing:
            console.print(f"[bold green]Found {existing} memories stored by an earlier run[/] "
                          f"in {settings.data_dir.resolve()} — nothing added this time.")
        else:
            added = stores.add(_demo_memories())
            console.print(f"[bold]Stored {len(added)} memories[/] in {settings.data_dir.resolve()} "
                          "(SQLite records + embedded Qdrant vectors).")
        for query in DEMO_QUERIES:
            table = Table(title=f"search: {query}", title_justify="left", show_lines=False)
            table.add_column("score", justify="right")
            table.add_column("type")
            table.add_column("when")
            table.add_column("memory")
            for hit in stores.search(DEMO_NAMESPACE, query, limit=top_k):
                table.add_row(f"{hit.similarity:.3f}", hit.item.memory_type.value,
                              hit.item.event_time.date().isoformat(), hit.item.content)
            console.print(table)
        total = stores.records.count_items(DEMO_NAMESPACE)
        console.print(f"{total} memories in namespace {DEMO_NAMESPACE!r}. Run again: they persist.")


@app.command()
def add(
    content: str,
    namespace: NamespaceOpt = None,
    memory_type: MemoryType = typer.Option(MemoryType.EPISODIC, "--type"),
    importance: float = typer.Option(0.5, min=0.0, max=1.0),
    session_id: str | None = typer.Option(None, "--session"),
) -> None:
    """Store one memory."""
    settings, stores = _open()
    with stores:
        [item] = stores.add([MemoryItem(content=content, memory_type=memory_type,
                                        namespace=namespace or settings.default_namespace,
                                        importance=importance, session_id=session_id)])
    console.print(item.id)


@app.command()
def search(query: str, namespace: NamespaceOpt = None,
           top_k: int = typer.Option(5, min=1, max=100)) -> None:
    """Semantic search over stored memories."""
    settings, stores = _open()
    with stores:
        hits = stores.search(namespace or settings.default_namespace, query, limit=top_k)
    for hit in hits:
        console.print(f"{hit.similarity:.3f}  {hit.item.id}  {hit.item.content}")


@app.command()
def stats(namespace: NamespaceOpt = None) -> None:
    """Counts per store for one namespace."""
    from hello_memory.stores.bundle import MEMORY_COLLECTION

    settings, stores = _open()
    ns = namespace or settings.default_namespace
    with stores:
        console.print({"namespace": ns, "records": stores.records.count_items(ns),
                       "vectors": stores.vectors.count(MEMORY_COLLECTION, namespace=ns),
                       "graph": stores.graph.stats(ns).__dict__})


@app.command("config")
def show_config() -> None:
    """Print the effective settings (secrets masked)."""
    data = _settings().model_dump(mode="json")
    for section in data.values():
        if isinstance(section, dict):
            for key in ("api_key", "password"):
                if section.get(key):
                    section[key] = "***"
    console.print_json(data=data)


def main() -> None:
    try:
        app()
    except HelloMemoryError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
