"""``hello-memory jobs consolidate|forget|reindex|reconcile`` (see :mod:`hello_memory.jobs`)
and ``jobs optimize`` (store-wide: builds the embedded engine's HNSW index).

Each namespace job run covers ``--namespace NAME`` (repeatable) or ``--all-namespaces``, prints a
summary per namespace (``--json``: one JSON object per line) and writes an audit
record. ``--every 1h`` repeats the jobs until interrupted; a cron line does the same
from outside::

    */30 * * * *  hello-memory --config /etc/hello-memory.yaml jobs forget --all-namespaces
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console

from hello_memory.jobs import (
    JobRun,
    namespaces_for,
    parse_duration,
    run_every,
    run_job,
    run_optimize,
)

__all__ = ["register"]

console = Console()
err = Console(stderr=True)

NsOpt = Annotated[list[str] | None, typer.Option(
    "--namespace", "-n", help="Namespace to process (repeatable).")]
AllOpt = Annotated[bool, typer.Option("--all-namespaces", help="Process every namespace.")]
DryOpt = Annotated[bool, typer.Option("--dry-run", help="Report only; change nothing.")]
EveryOpt = Annotated[str | None, typer.Option(
    "--every", help="Repeat every DURATION (30s, 15m, 1h, 1d) until interrupted.")]
MaxRunsOpt = Annotated[int | None, typer.Option(
    "--max-runs", min=1, help="With --every: stop after this many rounds.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object per run and line.")]


def register(jobs_app: typer.Typer, *, handled: Callable[[Any], Any],
             open_manager: Callable[..., Any], settings: Callable[[], Any]) -> None:
    """Add the job commands to ``jobs_app``."""

    def execute(job: str, namespace: list[str] | None, all_namespaces: bool, dry_run: bool,
                every: str | None, max_runs: int | None, as_json: bool,
                **options: Any) -> None:
        interval = parse_duration(every) if every else None
        if max_runs is not None and interval is None:
            raise typer.BadParameter("--max-runs needs --every")
        opts = {k: v for k, v in options.items() if v is not None}
        cfg, mm = open_manager(settings())
        with mm:
            def once() -> list[JobRun]:
                return [run_job(mm, job, namespace=ns, dry_run=dry_run, settings=cfg.jobs,
                                **opts)
                        for ns in namespaces_for(mm, namespace or [], all_namespaces)]

            def show(runs: list[JobRun]) -> None:
                for run in runs:
                    if as_json:
                        print(json.dumps(run.as_dict(), ensure_ascii=False, default=str))
                    else:
                        console.print(run.summary(), markup=False, highlight=False)
                if not runs and not as_json:
                    console.print(f"{job}: no namespace to process")

            if interval is None:
                show(once())
            else:
                err.print(f"running {job} every {every} (Ctrl-C stops)")
                run_every(interval, once, max_runs=max_runs, on_runs=show)

    @jobs_app.command("consolidate")
    @handled
    def consolidate(namespace: NsOpt = None, all_namespaces: AllOpt = False,
                    dry_run: DryOpt = False, every: EveryOpt = None,
                    max_runs: MaxRunsOpt = None, as_json: JsonOpt = False,
                    threshold: Annotated[float | None, typer.Option(
                        min=0.0, max=1.0, help="Default: jobs.consolidate_importance.")
                    ] = None,
                    min_access: Annotated[int | None, typer.Option(
                        min=0, help="Default: jobs.consolidate_min_access.")] = None) -> None:
        """Promote important episodic memories to semantic ones, merging duplicates."""
        execute("consolidate", namespace, all_namespaces, dry_run, every, max_runs, as_json,
                importance_threshold=threshold, min_access_count=min_access)

    @jobs_app.command("forget")
    @handled
    def forget(namespace: NsOpt = None, all_namespaces: AllOpt = False,
               dry_run: DryOpt = False, every: EveryOpt = None, max_runs: MaxRunsOpt = None,
               as_json: JsonOpt = False,
               strategy: Annotated[str | None, typer.Option(
                   help="importance | time | capacity (default: jobs.forget_strategy).")
               ] = None,
               threshold: Annotated[float | None, typer.Option(min=0.0, max=1.0)] = None,
               max_age_days: Annotated[float | None, typer.Option(min=0.0)] = None,
               max_items: Annotated[int | None, typer.Option(min=0)] = None,
               hard: Annotated[bool, typer.Option(help="Delete for good.")] = False) -> None:
        """Forget low-value memories (soft: `hello-memory restore ID...` undoes it)."""
        execute("forget", namespace, all_namespaces, dry_run, every, max_runs, as_json,
                strategy=strategy, threshold=threshold, max_age_days=max_age_days,
                max_items=max_items, hard=hard or None)

    @jobs_app.command("reindex")
    @handled
    def reindex(namespace: NsOpt = None, all_namespaces: AllOpt = False,
                dry_run: DryOpt = False, every: EveryOpt = None, max_runs: MaxRunsOpt = None,
                as_json: JsonOpt = False) -> None:
        """Rebuild the vector index and the graph from the records."""
        execute("reindex", namespace, all_namespaces, dry_run, every, max_runs, as_json,
                progress=not as_json or None)

    @jobs_app.command("reconcile")
    @handled
    def reconcile(namespace: NsOpt = None, all_namespaces: AllOpt = False,
                  dry_run: DryOpt = False, every: EveryOpt = None,
                  max_runs: MaxRunsOpt = None, as_json: JsonOpt = False) -> None:
        """Replay index work a crash left pending; report what was out of step."""
        execute("reconcile", namespace, all_namespaces, dry_run, every, max_runs, as_json)

    @jobs_app.command("optimize")
    @handled
    def optimize(as_json: JsonOpt = False) -> None:
        """Build the HNSW index of an embedded store (settings: vector.hnsw); search is
        exact until then. Store-wide, not per namespace; blocks while it builds."""
        _, mm = open_manager(settings())
        with mm:
            if not as_json:
                err.print("building the vector index (about a minute per 100k memories "
                          "on 2 cores; the process is busy meanwhile)")
            report = run_optimize(mm).details  # audited as job:optimize under "*"
        if as_json:
            print(json.dumps({"job": "optimize", **report}))
            return
        for collection, rebuilt in report["collections"].items():
            state = "index built" if rebuilt else "nothing to do"
            console.print(f"optimize [{collection}]: {state} in "
                          f"{report['seconds'][collection]:.1f} s", markup=False,
                          highlight=False)
