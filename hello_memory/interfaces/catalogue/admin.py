"""The admin operations (scope admin: a key granted ``*``): the maintenance jobs and the
stored namespaces.

``run_job`` runs one job now through the interface's scheduler (``Call.scheduler()``:
the server's, so a job asked for while it runs is refused with JobBusyError; 409), with
the options of ``hello-memory jobs NAME``; ``list_jobs`` tells each job's schedule, next
run and last result. Neither is an agent's: they act on the whole store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from hello_memory.interfaces.catalogue.core import Call, NoArguments, Operation, Request, Rest

if TYPE_CHECKING:
    from hello_memory.interfaces.jobs import JobRun

__all__ = ["ADMIN_OPERATIONS", "JobRequest", "JobsRan", "jobs_json"]


class JobRequest(Request):
    """The options of ``hello-memory jobs NAME`` (each job takes its own; a store-wide
    job, optimize, takes none)."""

    name: str = Field(description="The job: consolidate, forget, reindex, reconcile or "
                      "optimize.")
    namespace: list[str] | None = Field(None, description="namespaces to process")
    all_namespaces: bool = False
    dry_run: bool = Field(False, description="Report only; change nothing.")
    threshold: float | None = Field(None, ge=0, le=1, description=(
        "consolidate: importance at least this (default: jobs.consolidate_importance); "
        "forget: the importance strategy's threshold (default: jobs.forget_threshold)"))
    min_access: int | None = Field(None, ge=0, description=(
        "consolidate: accessed at least this often (default: jobs.consolidate_min_access)"))
    strategy: Literal["importance", "time", "capacity"] | None = Field(
        None, description="forget (default: jobs.forget_strategy)")
    max_age_days: float | None = Field(None, ge=0, description=(
        "forget: the time strategy's age (default: jobs.forget_max_age_days)"))
    max_items: int | None = Field(None, ge=0, description=(
        "forget: the capacity strategy keeps this many (default: jobs.forget_max_items)"))
    hard: bool = Field(False, description="forget: delete for good")
    retry_failed: list[str] | None = Field(None, max_length=1000, description=(
        "reconcile: retry the index work of these failing memories"))
    drop_failed: list[str] | None = Field(None, max_length=1000, description=(
        "reconcile: delete these memories, whose index work keeps failing"))

    def options(self) -> dict[str, Any]:
        """``run_job`` options, named as the CLI names them."""
        given: dict[str, Any]
        if self.name == "consolidate":
            given = {"importance_threshold": self.threshold, "min_access_count": self.min_access}
        else:
            given = {"threshold": self.threshold, "min_access_count": self.min_access,
                     "strategy": self.strategy, "max_age_days": self.max_age_days,
                     "max_items": self.max_items, "hard": self.hard or None,
                     "retry_failed": self.retry_failed or None,
                     "drop_failed": self.drop_failed or None}
        return {k: v for k, v in given.items() if v is not None}


@dataclass(frozen=True)
class JobsRan:
    """One job's runs, one per namespace (a store-wide job: one)."""

    job: str
    runs: list[JobRun]


def run_job(call: Call, req: JobRequest) -> JobsRan:
    runs = call.scheduler().run(req.name, namespaces=req.namespace or (),
                                all_namespaces=req.all_namespaces, dry_run=req.dry_run,
                                **req.options())
    return JobsRan(req.name, runs)


def jobs_json(ran: JobsRan) -> dict[str, Any]:
    """The JSON of a job's runs: what ``POST /v1/jobs/{name}`` answers and
    ``hello-memory jobs NAME --json`` prints."""
    return {"job": ran.job, "runs": [r.as_dict() for r in ran.runs]}


def list_jobs(call: Call, req: NoArguments) -> dict[str, Any]:
    jobs = call.scheduler()
    return {"scheduler_running": jobs.running, "jobs": jobs.status()}


def list_namespaces(call: Call, req: NoArguments) -> list[str]:
    return sorted(call.manager.browse.namespaces())


_STORE_WIDE = "acts on the whole store: an operator's (REST with an admin key, the CLI)"
_NOT_AGENTS = {"mcp": _STORE_WIDE + ", not a namespace-granted MCP client's",
               "tool": _STORE_WIDE + ", not an agent's tool bound to one namespace"}

ADMIN_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "list_jobs", "Every job: scope, schedule, running now, next run, last run and last "
        "result.", NoArguments, list_jobs, dict, "admin", Rest("GET", "/jobs"),
        not_on=_NOT_AGENTS, area="admin"),
    Operation(
        "run_job", "Run one job now and return its report, one run per namespace.",
        JobRequest, run_job, jobs_json, "admin", Rest("POST", "/jobs/{name}"),
        description="Runs in a worker thread; the request waits for it (404 for an "
        "unknown job, 409 while it runs).", not_on=_NOT_AGENTS, cli="jobs", area="admin"),
    Operation(
        "list_namespaces", "Every namespace that holds memories.", NoArguments,
        list_namespaces, lambda names: {"namespaces": names}, "admin",
        Rest("GET", "/namespaces"), not_on=_NOT_AGENTS, area="admin"),
)
