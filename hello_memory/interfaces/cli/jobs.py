"""``hello-memory jobs consolidate|forget|reindex|reconcile`` (see
:mod:`hello_memory.interfaces.jobs`)
and ``jobs optimize`` (store-wide: builds the embedded engine's HNSW index).

Each namespace job run covers ``--namespace NAME`` (repeatable) or ``--all-namespaces``,
prints a summary per namespace (``--json``: the catalogue's run_job JSON, ``{"job",
"runs"}``, one object per round and line) and writes an audit record. ``--every 1h``
repeats the jobs until interrupted; a cron line does the same from outside::

    */30 * * * *  hello-memory --config /etc/hello-memory.yaml jobs forget --all-namespaces

While ``hello-memory serve`` holds the data directory (or with ``--server URL``) the jobs
run in that server, through ``POST /v1/jobs/{name}`` with an admin key, and print the
same summaries (:mod:`hello_memory.interfaces.remote`; docs/JOBS.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

import typer
from rich.console import Console

from hello_memory.errors import InvalidInputError
from hello_memory.interfaces.catalogue.admin import JobRequest
from hello_memory.interfaces.catalogue.cli_options import field_type, option
from hello_memory.interfaces.jobs import JobRun, parse_duration, run_every
from hello_memory.interfaces.remote import Backend

__all__ = ["register"]

console = Console()
err = Console(stderr=True)

NsOpt = Annotated[list[str] | None, typer.Option(
    "--namespace", "-n", help="Namespace to process (repeatable).")]
AllOpt = Annotated[bool, typer.Option("--all-namespaces", help="Process every namespace.")]
EveryOpt = Annotated[str | None, typer.Option(
    "--every", help="Repeat every DURATION (30s, 15m, 1h, 1d) until interrupted.")]
MaxRunsOpt = Annotated[int | None, typer.Option(
    "--max-runs", min=1, help="With --every: stop after this many rounds.")]
# The job options that are run_job's request fields come from the catalogue (JobRequest,
# hello_memory/interfaces/catalogue/cli_options.py): default, bounds, help and choices as REST
# takes them.
if TYPE_CHECKING:  # typer reads the catalogue's Literal; a type checker its plain form
    JobStrategy: TypeAlias = str | None
else:
    JobStrategy = field_type(JobRequest, "strategy")
JsonOpt = Annotated[bool, typer.Option("--json", help=(
    "The runs as POST /v1/jobs/{name} answers them: one JSON object per line ("
    "per round with --every)."))]


def register(jobs_app: typer.Typer, *, handled: Callable[[Any], Any],
             backend: Callable[..., AbstractContextManager[Backend]]) -> None:
    """Add the job commands to ``jobs_app``; ``backend()`` opens where they run (the
    local stores, or the server that holds them)."""
    execute = _executor(backend)
    _add_consolidate_and_forget(jobs_app, handled, execute)
    _add_reindex_and_reconcile(jobs_app, handled, execute)
    _add_optimize(jobs_app, handled, backend)


def _executor(backend: Callable[..., AbstractContextManager[Backend]]) -> Callable[..., None]:
    """What runs one namespace job for the commands (``register``'s part): the options
    checked, then the job run once, or again every ``--every`` interval, where ``backend()``
    opens."""

    def execute(job: str, namespace: list[str] | None, all_namespaces: bool, dry_run: bool,
                every: str | None, max_runs: int | None, as_json: bool,
                **options: Any) -> None:
        interval = parse_duration(every) if every else None
        if max_runs is not None and interval is None:
            raise typer.BadParameter("--max-runs needs --every")
        if all_namespaces and namespace:  # before anything opens, locally or not
            raise InvalidInputError("give --namespace or --all-namespaces, not both")
        if not all_namespaces and not namespace:
            raise InvalidInputError("a job needs --namespace NAME (repeatable) or "
                                    "--all-namespaces")
        opts = {k: v for k, v in options.items() if v is not None}
        with backend() as be:
            def once() -> list[JobRun]:
                return be.run_job(job, namespace or [], all_namespaces, dry_run, **opts)

            def show(runs: list[JobRun]) -> None:
                if as_json:  # the catalogue's run_job JSON, as POST /v1/jobs/{name}
                    _print_runs(job, runs)
                    return
                for run in runs:
                    console.print(run.summary(), markup=False, highlight=False)
                    _show_failures(run)
                if not runs:
                    console.print(f"{job}: no namespace to process")

            if interval is None:
                show(once())
            else:
                err.print(f"running {job} every {every} {be.where()} (Ctrl-C stops)")
                run_every(interval, once, max_runs=max_runs, on_runs=show)

    return execute


def _add_consolidate_and_forget(jobs_app: typer.Typer, handled: Callable[[Any], Any],
                                execute: Callable[..., None]) -> None:
    """``jobs consolidate`` and ``jobs forget`` (``register``'s part)."""

    @jobs_app.command("consolidate")
    @handled
    def consolidate(namespace: NsOpt = None, all_namespaces: AllOpt = False,
                    dry_run: bool = option(JobRequest, "dry_run", "--dry-run"),
                    every: EveryOpt = None,
                    max_runs: MaxRunsOpt = None, as_json: JsonOpt = False,
                    threshold: float | None = option(JobRequest, "threshold"),
                    min_access: int | None = option(JobRequest, "min_access")) -> None:
        """Promote important episodic memories to semantic ones, merging duplicates."""
        execute("consolidate", namespace, all_namespaces, dry_run, every, max_runs, as_json,
                importance_threshold=threshold, min_access_count=min_access)

    @jobs_app.command("forget")
    @handled
    def forget(namespace: NsOpt = None, all_namespaces: AllOpt = False,
               dry_run: bool = option(JobRequest, "dry_run", "--dry-run"),
               every: EveryOpt = None, max_runs: MaxRunsOpt = None,
               as_json: JsonOpt = False,
               strategy: JobStrategy = option(JobRequest, "strategy"),
               threshold: float | None = option(JobRequest, "threshold"),
               max_age_days: float | None = option(JobRequest, "max_age_days"),
               max_items: int | None = option(JobRequest, "max_items"),
               hard: bool = option(JobRequest, "hard")) -> None:
        """Forget low-value memories (soft: `hello-memory restore ID...` undoes it)."""
        execute("forget", namespace, all_namespaces, dry_run, every, max_runs, as_json,
                strategy=strategy, threshold=threshold, max_age_days=max_age_days,
                max_items=max_items, hard=hard or None)


def _add_reindex_and_reconcile(jobs_app: typer.Typer, handled: Callable[[Any], Any],
                               execute: Callable[..., None]) -> None:
    """``jobs reindex`` and ``jobs reconcile`` (``register``'s part)."""

    @jobs_app.command("reindex")
    @handled
    def reindex(namespace: NsOpt = None, all_namespaces: AllOpt = False,
                dry_run: bool = option(JobRequest, "dry_run", "--dry-run"),
                every: EveryOpt = None, max_runs: MaxRunsOpt = None,
                as_json: JsonOpt = False) -> None:
        """Rebuild the vector index and the graph from the records."""
        execute("reindex", namespace, all_namespaces, dry_run, every, max_runs, as_json,
                progress=not as_json or None)

    @jobs_app.command("reconcile")
    @handled
    def reconcile(namespace: NsOpt = None, all_namespaces: AllOpt = False,
                  dry_run: bool = option(JobRequest, "dry_run", "--dry-run"),
                  every: EveryOpt = None,
                  max_runs: MaxRunsOpt = None, as_json: JsonOpt = False,
                  retry: Annotated[list[str] | None, typer.Option(
                      "--retry", help="Retry the index work of this failing memory "
                      "(repeatable).")] = None,
                  drop_failed: Annotated[list[str] | None, typer.Option(
                      "--drop-failed", help="Delete this memory, whose index work keeps "
                      "failing (repeatable; the record goes too).")] = None) -> None:
        """Replay index work a crash left pending; report what was out of step, and
        the memories whose index work keeps failing (--retry ID / --drop-failed ID)."""
        execute("reconcile", namespace, all_namespaces, dry_run, every, max_runs, as_json,
                retry_failed=retry or None, drop_failed=drop_failed or None)


def _add_optimize(jobs_app: typer.Typer, handled: Callable[[Any], Any],
                  backend: Callable[..., AbstractContextManager[Backend]]) -> None:
    """``jobs optimize``, store-wide (``register``'s part)."""

    @jobs_app.command("optimize")
    @handled
    def optimize(as_json: JsonOpt = False) -> None:
        """Build the HNSW index of an embedded store (settings: vector.hnsw); search is
        exact until then. Store-wide, not per namespace; blocks while it builds."""
        with backend() as be:
            if not as_json:
                err.print("building the vector index (about a minute per 100k memories "
                          f"on 2 cores, {be.where()}, which is busy meanwhile)")
            run = be.optimize()  # audited as job:optimize under "*"
        if as_json:
            _print_runs("optimize", [run])
            return
        report = run.details
        for collection, rebuilt in report["collections"].items():
            state = "index built" if rebuilt else "nothing to do"
            console.print(f"optimize [{collection}]: {state} in "
                          f"{report['seconds'][collection]:.1f} s", markup=False,
                          highlight=False)


def _print_runs(job: str, runs: list[JobRun]) -> None:
    """One job's runs as the catalogue's run_job JSON, on one line."""
    from hello_memory.interfaces.catalogue.admin import JobsRan, jobs_json

    print(json.dumps(jobs_json(JobsRan(job, runs)), ensure_ascii=False, default=str))


def _show_failures(run: JobRun) -> None:
    """The failing memories of a reconcile run, each with the commands that act on it."""
    for failure in run.details.get("index_failures") or ():
        mid, ns = failure.get("memory_id"), failure.get("namespace")
        console.print(f"  failing: memory {mid} [{ns}] ({failure.get('attempts', 1)} "
                      f"attempts): {failure.get('error')}\n"
                      f"    retry: hello-memory jobs reconcile -n {ns} --retry {mid}\n"
                      f"    drop:  hello-memory jobs reconcile -n {ns} --drop-failed {mid}",
                      markup=False, highlight=False, soft_wrap=True)
