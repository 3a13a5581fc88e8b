"""The server's own maintenance runs: :class:`JobScheduler`.

``hello-memory serve`` runs the jobs of :mod:`hello_memory.interfaces.jobs` on the schedules in
``jobs.schedule`` (``{"forget": "every 6h", "optimize": "30 3 * * *"}``), with
APScheduler 3 (``server`` extra) in a background thread, so no job runs on the event
loop. Each job runs at most once at a time (``max_instances=1``; missed runs coalesce
into one), scheduled runs one after another in a single worker thread, over every
namespace with the manager's lifecycle defaults (``MemoryManager.lifecycle``, the
``jobs.*`` thresholds it was opened with: docs/JOBS.md "Lifecycle defaults"), and each writes
its audit records as the CLI's ``hello-memory jobs`` does (the same
:func:`~hello_memory.interfaces.jobs.run_job`). A run asked
for while the same job runs is refused with :class:`~hello_memory.errors.JobBusyError`.
:meth:`JobScheduler.shutdown` waits for a running job to finish, then stops the thread.

A fleet of servers on one PostgreSQL database (docs/DEPLOY.md, "Deploy for a team")
runs each scheduled job once per schedule, not once per process: before a scheduled
run, the process claims the run's slot in the database (:class:`FleetLease`, table
``hm_job_leases``, stores/records/leases.py, through the maintenance service), and only
the process whose claim inserted the slot runs it. A slot is the scheduled minute for
a cron line, and the ``every`` period counted from the Unix epoch for an interval, so
every process computes the same slots. Runs asked for by
request (``POST /v1/jobs/...``, ``hello-memory jobs``) are not leased. On SQLite (one
process, the embedded default) there is no lease and nothing changes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from hello_memory.config import JobsSettings
from hello_memory.errors import ConfigError, InvalidInputError, JobBusyError, NotFoundError
from hello_memory.interfaces.jobs import (
    ALL_JOBS,
    STORE_JOBS,
    JobRun,
    Schedule,
    namespaces_for,
    parse_schedule,
    run_job,
    run_optimize,
)
from hello_memory.services.maintenance import LEASE_TABLE, FleetLease
from hello_memory.types import utcnow

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

# FleetLease and LEASE_TABLE: the lease itself is SQL, kept in stores/records/leases.py
# and reached through the maintenance service; re-exported here, where it was
__all__ = ["LEASE_TABLE", "THREAD_PREFIX", "FleetLease", "JobScheduler"]

log = logging.getLogger(__name__)
THREAD_PREFIX = "hm-job"  # the worker thread's name; the scheduler's own is "APScheduler"


def slot_of(schedule: Schedule, now: datetime) -> datetime:
    """The slot a run at ``now`` belongs to: the minute of a cron line, or the start of
    the ``every`` period (counted from the epoch) holding ``now``; UTC."""
    now = now.astimezone(timezone.utc) if now.tzinfo else now.replace(tzinfo=timezone.utc)
    if schedule.seconds:
        start = int(now.timestamp() // schedule.seconds * schedule.seconds)
        return datetime.fromtimestamp(start, timezone.utc)
    return now.replace(second=0, microsecond=0)


class JobScheduler:
    """Runs the jobs over the manager that ``manager()`` returns: on ``settings.schedule``
    once :meth:`start` ran, and on request through :meth:`run`; :meth:`status` tells
    each job's schedule, next run and last run. Only the schedule comes from
    ``settings``: thresholds a run leaves out come from the manager's own lifecycle
    defaults (``manager().lifecycle``), the one set every entry point reads."""

    def __init__(self, manager: Callable[[], MemoryManager], settings: JobsSettings, *,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self._manager = manager
        self.settings = settings
        self.schedules: dict[str, Schedule] = {
            job: parse_schedule(text) for job, text in settings.schedule.items()}
        self._clock = clock
        self._locks = {job: threading.Lock() for job in ALL_JOBS}
        self._last: dict[str, dict[str, Any]] = {}
        self._aps: Any = None
        self._lease: FleetLease | None = None
        self._lease_checked = False

    @property
    def running(self) -> bool:
        """Whether the scheduler thread runs (False before start, after shutdown, or
        with no schedule)."""
        return self._aps is not None and bool(self._aps.running)

    def start(self) -> bool:
        """Start the scheduler thread when any job has a schedule; True if it started."""
        if not self.schedules or self._aps is not None:
            return False
        try:
            from apscheduler.executors.pool import ThreadPoolExecutor
            from apscheduler.schedulers.background import BackgroundScheduler
            from apscheduler.triggers.cron import CronTrigger
            from apscheduler.triggers.interval import IntervalTrigger
        except ImportError as exc:  # pragma: no cover - the server extra brings it
            raise ConfigError("jobs.schedule needs APScheduler 3: pip install "
                              "'hello-memory[server]'") from exc
        aps = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(
                1, pool_kwargs={"thread_name_prefix": THREAD_PREFIX})},
            job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": None},
            daemon=True)
        for job, schedule in self.schedules.items():
            trigger = (IntervalTrigger(seconds=schedule.seconds) if schedule.seconds
                       else CronTrigger(**(schedule.cron or {})))
            aps.add_job(self._scheduled, trigger, args=[job], id=job, name=job)
        aps.start()
        self._aps = aps
        log.info("maintenance jobs scheduled: %s",
                 ", ".join(f"{j} ({s.text})" for j, s in self.schedules.items()))
        return True

    def shutdown(self, wait: bool = True) -> None:
        """Stop the scheduler; ``wait`` lets a running job finish first."""
        aps, self._aps = self._aps, None
        if aps is not None and aps.running:
            aps.shutdown(wait=wait)

    def lease(self) -> FleetLease | None:
        """The fleet lease when the records are on PostgreSQL (several processes may
        share them), else None (read once, from the manager's record store)."""
        if not self._lease_checked:
            self._lease = self._manager().maintenance.job_lease()
            self._lease_checked = True
        return self._lease

    def _scheduled(self, job: str) -> None:
        try:
            lease = self.lease()
            if lease is not None:
                slot = slot_of(self.schedules[job], self._clock())
                if not lease.claim(job, slot):
                    log.info("scheduled %s for %s: another process of the fleet runs it",
                             job, slot.isoformat())
                    return
            # a store-wide job (optimize) takes no namespaces: asked for them, run()
            # refuses, and a scheduled optimize never ran (seen in tests/reliability/
            # test_fleet.py)
            self.run(job, all_namespaces=job not in STORE_JOBS, trigger="schedule")
        except JobBusyError:
            log.info("scheduled %s skipped: a run asked for by request is still going", job)
        except Exception:  # recorded as the job's last result; the scheduler goes on
            log.exception("scheduled job %s failed", job)

    def run(self, job: str, *, namespaces: Sequence[str] = (), all_namespaces: bool = False,
            dry_run: bool = False, trigger: str = "request", **options: Any) -> list[JobRun]:
        """Run ``job`` now in this thread, over ``namespaces`` or all of them (a
        store-wide job takes neither); ``options`` as :func:`~hello_memory.interfaces.jobs.run_job`.

        Raises:
            NotFoundError: no such job.
            JobBusyError: the job is running already.
            InvalidInputError: bad options (nothing ran).
        """
        if job not in ALL_JOBS:
            raise NotFoundError(f"no job {job!r}; jobs: {', '.join(ALL_JOBS)}")
        if job in STORE_JOBS:
            if namespaces or all_namespaces or dry_run or options:
                raise InvalidInputError(f"{job} is store-wide: it takes no namespace, no dry "
                                        "run and no options")
        elif not namespaces and not all_namespaces:
            raise InvalidInputError(f"{job} needs namespaces (namespace: [NAME, ...]) or "
                                    "all_namespaces: true")
        lock = self._locks[job]
        if not lock.acquire(blocking=False):
            since = self._last.get(job, {}).get("started")
            raise JobBusyError(f"job {job!r} is already running"
                               + (f" (since {since.isoformat()})" if since else ""))
        state: dict[str, Any] = {"trigger": trigger, "started": self._clock(),
                                 "finished": None, "status": "running", "error": None,
                                 "runs": []}
        self._last[job] = state
        runs: list[JobRun] = state["runs"]
        try:
            mm = self._manager()
            if job in STORE_JOBS:
                runs.append(run_optimize(mm, clock=self._clock))
            else:
                for ns in namespaces_for(mm, list(namespaces), all_namespaces):
                    runs.append(run_job(mm, job, namespace=ns, dry_run=dry_run,
                                        clock=self._clock, **options))
        except BaseException as exc:
            state.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            raise
        else:
            state["status"] = "ok"
        finally:
            state["finished"] = self._clock()
            lock.release()
        return runs

    def status(self) -> list[dict[str, Any]]:
        """Per job: scope, schedule, whether it runs now, next run, last run and result
        (per namespace counts; the full report is in the audit)."""
        out = []
        for job in ALL_JOBS:
            schedule = self.schedules.get(job)
            aps_job = self._aps.get_job(job) if self.running else None
            next_run = getattr(aps_job, "next_run_time", None)
            last = self._last.get(job)
            entry: dict[str, Any] = {
                "name": job, "scope": "store" if job in STORE_JOBS else "namespace",
                "schedule": schedule.text if schedule else None,
                "running": self._locks[job].locked(),
                "next_run": next_run.isoformat() if next_run else None,
                "last_run": None, "last_result": None}
            if last is not None:
                finished = last["finished"]
                entry["last_run"] = {"trigger": last["trigger"],
                                     "started": last["started"].isoformat(),
                                     "finished": finished.isoformat() if finished else None}
                entry["last_result"] = {
                    "status": last["status"], "error": last["error"],
                    "runs": [{"namespace": r.namespace, "dry_run": r.dry_run,
                              "counts": dict(r.counts)} for r in list(last["runs"])]}
            out.append(entry)
        return out
