"""Admin routes (a key granted ``*``): the server's maintenance jobs and its namespaces.

``GET /v1/jobs`` tells each job's schedule (``jobs.schedule``), next run, last run and
last result; ``POST /v1/jobs/{name}`` runs one now, with the options of the CLI's
``hello-memory jobs NAME`` (404 for an unknown job, 409 while it runs); ``GET
/v1/namespaces`` lists the stored namespaces.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from hello_memory.api.app import Admin, manager_of
from hello_memory.memory.manager import MemoryManager
from hello_memory.scheduler import JobScheduler

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["admin"], dependencies=[Admin])
Manager = Annotated[MemoryManager, Depends(manager_of)]


def _jobs(request: Request) -> JobScheduler:
    jobs: JobScheduler = request.app.state.jobs
    return jobs


Jobs = Annotated[JobScheduler, Depends(_jobs)]


class JobRequest(BaseModel):
    """The options of ``hello-memory jobs NAME`` (each job takes its own; a store-wide
    job, optimize, takes none)."""

    model_config = ConfigDict(extra="forbid")
    namespace: list[str] | None = Field(None, description="namespaces to process")
    all_namespaces: bool = False
    dry_run: bool = False
    threshold: float | None = Field(None, ge=0, le=1, description=(
        "consolidate: importance threshold; forget: the importance strategy's threshold"))
    min_access: int | None = Field(None, ge=0, description="consolidate")
    strategy: Literal["importance", "time", "capacity"] | None = Field(
        None, description="forget")
    max_age_days: float | None = Field(None, ge=0, description="forget")
    max_items: int | None = Field(None, ge=0, description="forget")
    hard: bool = Field(False, description="forget: delete for good")
    retry_failed: list[str] | None = Field(None, max_length=1000, description=(
        "reconcile: retry the index work of these failing memories"))
    drop_failed: list[str] | None = Field(None, max_length=1000, description=(
        "reconcile: delete these memories, whose index work keeps failing"))

    def options(self, job: str) -> dict[str, Any]:
        """``run_job`` options, named as the CLI names them."""
        given: dict[str, Any]
        if job == "consolidate":
            given = {"importance_threshold": self.threshold, "min_access_count": self.min_access}
        else:
            given = {"threshold": self.threshold, "min_access_count": self.min_access,
                     "strategy": self.strategy, "max_age_days": self.max_age_days,
                     "max_items": self.max_items, "hard": self.hard or None,
                     "retry_failed": self.retry_failed or None,
                     "drop_failed": self.drop_failed or None}
        return {k: v for k, v in given.items() if v is not None}


@router.get("/jobs")
def list_jobs(jobs: Jobs) -> dict[str, Any]:
    """Every job: scope, schedule, running now, next run, last run and last result."""
    return {"scheduler_running": jobs.running, "jobs": jobs.status()}


@router.post("/jobs/{name}")
def run_job_now(name: str, jobs: Jobs, body: JobRequest | None = None) -> dict[str, Any]:
    """Run one job now and return its report, one run per namespace (runs in a worker
    thread; the request waits for it)."""
    body = body or JobRequest.model_validate({})
    runs = jobs.run(name, namespaces=body.namespace or (), all_namespaces=body.all_namespaces,
                    dry_run=body.dry_run, **body.options(name))
    return {"job": name, "runs": [r.as_dict() for r in runs]}


@router.get("/namespaces")
def list_namespaces(mm: Manager) -> dict[str, Any]:
    """Every namespace that holds memories."""
    return {"namespaces": sorted(mm.stores.records.memories.namespaces())}
