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
from hello_memory.types import MemoryType

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
    from hello_memory.memory.manager import MemoryManager

    settings = _settings()
    with console.status("Opening stores and loading the models..."):
        return settings, MemoryManager.open(settings)


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


def _hits_table(title: str, hits: Any) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("score", "type", "sim", "recency", "graph", "memory"):
        table.add_column(col, justify="right" if col not in ("type", "memory") else "left")
    for h in hits:
        b = h.breakdown
        table.add_row(f"{h.score:.3f}", h.memory_type.value, f"{b.similarity:.2f}",
                      f"{b.recency:.2f}", f"{b.graph:.2f}", h.item.content)
    return table


@app.command()
def demo(top_k: int = typer.Option(3, min=1, max=20, help="Results per query.")) -> None:
    """Store a handful of memories (first run only), search them, print results."""
    settings, mm = _open()
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
        for query in DEMO_QUERIES:
            hits = mm.search(query, top_k=top_k, namespace=DEMO_NAMESPACE)
            console.print(_hits_table(f"search: {query}", hits))
        st = mm.stats(DEMO_NAMESPACE)
        console.print(f"namespace {DEMO_NAMESPACE!r}: {st['by_type']} | vectors {st['vectors']} | "
                      f"graph {st['graph']}. Working memory is per process; the rest persists: "
                      "run again.")


@app.command()
def add(
    content: str,
    namespace: NamespaceOpt = None,
    memory_type: MemoryType | None = typer.Option(None, "--type"),
    importance: float | None = typer.Option(None, min=0.0, max=1.0),
    session_id: str | None = typer.Option(None, "--session"),
) -> None:
    """Store one memory (importance estimated when not given)."""
    _, mm = _open()
    with mm:
        item = mm.add(content, memory_type, importance, namespace=namespace,
                      session_id=session_id)
    console.print(item.id)


@app.command()
def search(query: str, namespace: NamespaceOpt = None,
           top_k: int = typer.Option(5, min=1, max=100)) -> None:
    """Search every memory type, best final score first."""
    _, mm = _open()
    with mm:
        console.print(_hits_table(f"search: {query}", mm.search(query, top_k=top_k,
                                                                namespace=namespace)))


@app.command()
def stats(namespace: NamespaceOpt = None) -> None:
    """Counts per memory type and store for one namespace."""
    _, mm = _open()
    with mm:
        console.print(mm.stats(namespace))


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
