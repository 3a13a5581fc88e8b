"""Maintenance jobs: ``consolidate``, ``forget``, ``reindex`` and ``reconcile``.

Each job runs over one namespace at a time through :class:`MemoryManager`, takes its
thresholds from :class:`~hello_memory.config.JobsSettings` (the lifecycle defaults that
the REST API and the MemoryTool use too; overridable per call), and
writes one audit record per namespace (``job:<name>``: what moved, merged or was
forgotten, counts, start and end time, dry run or not). Every job is idempotent: a
second identical run changes nothing.

- ``consolidate``: episodic → semantic by default (``jobs.consolidate_from`` /
  ``consolidate_to``; near-duplicates merge); working memory lives in one process, so
  working → episodic belongs to that process.
- ``forget``: soft by default (``hello-memory restore`` undoes it); ``hard=True`` purges.
- ``reindex``: rebuild the vector index and the graph from the records.
- ``reconcile``: replay index work that a crash left pending.
- ``optimize`` (store-wide, :func:`run_optimize`): build the embedded engine's HNSW
  index; audited under the namespace ``*``.

>>> run_job(manager, "forget", namespace="alice", dry_run=True)    # doctest: +SKIP

:func:`run_every` repeats a set of jobs on an interval (``--every 1h``), for hosts
without cron; :func:`parse_schedule` reads the ``jobs.schedule`` entries that
``hello-memory serve`` runs (:mod:`hello_memory.interfaces.scheduler`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hello_memory import telemetry
from hello_memory.config import JobsSettings
from hello_memory.errors import InvalidInputError

# the job names and the schedule syntax live in the core (settings check
# jobs.schedule against them without importing this interface); re-exported here
from hello_memory.schedules import (
    ALL_JOBS,
    JOBS,
    STORE_JOBS,
    Schedule,
    parse_duration,
    parse_schedule,
)
from hello_memory.types import MemoryType, utcnow
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["ALL_JOBS", "JOBS", "STORE_JOBS", "STORE_NAMESPACE", "JobRun", "Schedule",
           "namespaces_for", "parse_duration", "parse_schedule", "run_every", "run_job",
           "run_optimize"]

# Jobs that write (index work, HNSW segments): refused under storage.min_free_bytes
# before they start (hello_memory/stores/disk.py); forget is left to the record
# store's own guard, since a hard forget is how space is freed.
_WRITING_JOBS = frozenset({"consolidate", "reindex", "reconcile", "optimize"})
STORE_NAMESPACE = "*"  # the audit namespace of a store-wide run


@dataclass
class JobRun:
    """What one job did in one namespace; ``changed`` is False for a no-op run."""

    job: str
    namespace: str
    dry_run: bool
    started: datetime
    finished: datetime
    counts: dict[str, int] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """Whether this run changed anything (a report's own ``changed`` count wins)."""
        if self.dry_run:
            return False
        if "changed" in self.counts:
            return self.counts["changed"] > 0
        return any(v for k, v in self.counts.items() if k != "records")

    def as_dict(self) -> dict[str, Any]:
        return {"job": self.job, "namespace": self.namespace, "dry_run": self.dry_run,
                "started": self.started.isoformat(), "finished": self.finished.isoformat(),
                "seconds": round((self.finished - self.started).total_seconds(), 3),
                "counts": dict(self.counts), "details": self.details}

    def summary(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in self.counts.items()) or "nothing to do"
        mode = " (dry run: nothing changed)" if self.dry_run else ""
        return f"{self.job} [{self.namespace}]: {counts}{mode}"


def _plain(value: Any) -> Any:
    """A JSON-ready copy of a report (dataclasses, enums, tuples, datetimes)."""
    if hasattr(value, "as_dict"):
        return _plain(value.as_dict())
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, MemoryType):
        return value.value
    return value


def _counts_of(report: Mapping[str, Any]) -> dict[str, int]:
    """Integer fields and list lengths of a maintenance report, as counts."""
    counts: dict[str, int] = {}
    for key, value in report.items():
        if isinstance(value, bool) or key in ("namespace", "namespaces", "dry_run"):
            continue
        if isinstance(value, int):
            counts[key] = value
        elif isinstance(value, (list, dict)):
            counts[key] = len(value)
    return counts


def _consolidate(mm: MemoryManager, ns: str, dry_run: bool, cfg: JobsSettings,
                 opts: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, Any]]:
    args = cfg.consolidate_options(**opts)
    threshold, min_access = args["importance_threshold"], args["min_access_count"]
    rep = mm.consolidate(namespace=ns, dry_run=dry_run, **args)
    # dry runs name would-be new targets "new:<source id>"; real runs list promotions
    new = (len(rep.promoted) if not dry_run
           else sum(1 for k in rep.merged if k.startswith("new:")))
    counts = {"moved": sum(len(v) for v in rep.merged.values()), "new_targets": new,
              "removed": len(rep.removed_sources)}
    return counts, {"from": rep.from_type.value, "to": rep.to_type.value,
                    "importance_threshold": threshold, "min_access_count": min_access,
                    "merged": {k: list(v) for k, v in rep.merged.items()},
                    "promoted": list(rep.promoted)}


def _forget(mm: MemoryManager, ns: str, dry_run: bool, cfg: JobsSettings,
            opts: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, Any]]:
    params = cfg.forget_options(**{k: v for k, v in opts.items() if k != "hard"})
    strategy = params.pop("strategy")
    hard = bool(opts.get("hard", False))
    rep = mm.forget(strategy, namespace=ns, dry_run=dry_run, hard=hard, **params)
    return ({"forgotten": rep.count},
            {"strategy": strategy, "hard": hard, **params, "ids": list(rep.ids)})


def _maintenance(name: str) -> Callable[..., tuple[dict[str, int], dict[str, Any]]]:
    def run(mm: MemoryManager, ns: str, dry_run: bool, cfg: JobsSettings,
            opts: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, Any]]:
        kwargs: dict[str, Any] = {"namespace": ns, "dry_run": dry_run}
        if name == "reindex":
            kwargs["progress"] = bool(opts.get("progress", False))
        if name == "reconcile":  # the failing rows' options
            kwargs["retry_failed"] = list(opts.get("retry_failed") or ())
            kwargs["drop_failed"] = list(opts.get("drop_failed") or ())
        report = _plain(getattr(mm, name)(**kwargs))
        report = report if isinstance(report, dict) else {"result": report}
        return _counts_of(report), report
    return run


_RUNNERS: dict[str, Callable[..., tuple[dict[str, int], dict[str, Any]]]] = {
    "consolidate": _consolidate,
    "forget": _forget,
    "reindex": _maintenance("reindex"),
    "reconcile": _maintenance("reconcile"),
}


@telemetry.traced("hello_memory.job", name=lambda mm, job, **_: f"job {job}")
def run_job(
    manager: MemoryManager,
    job: str,
    *,
    namespace: str,
    dry_run: bool = False,
    settings: JobsSettings | None = None,
    clock: Callable[[], datetime] = utcnow,
    **options: Any,
) -> JobRun:
    """Run one job in one namespace and write its audit record.

    ``options`` override the thresholds of ``settings`` (by default the manager's
    lifecycle defaults, ``manager.lifecycle``) for this run: consolidate
    takes ``importance_threshold``, ``min_access_count``, ``from_type`` and
    ``to_type``; forget takes
    ``strategy``, ``threshold``, ``max_age_days``, ``max_items`` and ``hard``.
    """
    if job in STORE_JOBS:
        raise InvalidInputError(f"{job} is store-wide, not per namespace: use run_optimize")
    if job not in _RUNNERS:
        raise InvalidInputError(f"unknown job {job!r}; use one of {', '.join(ALL_JOBS)}")
    ns = require_namespace(namespace)
    allowed = {"consolidate": {"importance_threshold", "min_access_count", "from_type",
                               "to_type"},
               "forget": {"strategy", "threshold", "max_age_days", "max_items", "hard"},
               "reindex": {"progress"}, "reconcile": {"retry_failed", "drop_failed"}}[job]
    if unknown := sorted(set(options) - allowed):
        raise InvalidInputError(f"job {job!r} takes no option(s) {unknown}; "
                                f"it takes {sorted(allowed) or 'none'}")
    cfg = settings or manager.lifecycle
    if not dry_run and job in _WRITING_JOBS:
        manager.browse.check_disk()  # 507 before the job reads anything
    started = clock()
    counts, details = _RUNNERS[job](manager, ns, dry_run, cfg, options)
    run = JobRun(job, ns, dry_run, started, clock(), counts, _plain(details))
    manager.maintenance.record_job(ns, job, run.as_dict())
    return run


@telemetry.traced("hello_memory.job", name="job optimize")
def run_optimize(manager: MemoryManager, *, clock: Callable[[], datetime] = utcnow
                 ) -> JobRun:
    """Build the vector index store-wide (:meth:`MemoryManager.optimize`) and audit it
    under :data:`STORE_NAMESPACE`; ``details`` is the ``OptimizeReport``. Refused under
    ``storage.min_free_bytes`` before it starts (building segments writes)."""
    manager.browse.check_disk()
    started = clock()
    report = _plain(manager.optimize())
    report = report if isinstance(report, dict) else {"result": report}
    run = JobRun("optimize", STORE_NAMESPACE, False, started, clock(), _counts_of(report),
                 report)
    manager.maintenance.record_job(STORE_NAMESPACE, "optimize", run.as_dict())
    return run


def namespaces_for(manager: MemoryManager, namespaces: Sequence[str],
                   all_namespaces: bool) -> list[str]:
    """The namespaces a job run covers: the given ones, or every stored one when
    ``all_namespaces`` (never both, never neither: isolation fails closed)."""
    if all_namespaces and namespaces:
        raise InvalidInputError("give --namespace or --all-namespaces, not both")
    if all_namespaces:
        return sorted(manager.browse.namespaces())
    if not namespaces:
        raise InvalidInputError("a job needs --namespace NAME (repeatable) or --all-namespaces")
    return [require_namespace(n) for n in namespaces]


def run_every(
    interval: float,
    once: Callable[[], Iterable[JobRun]],
    *,
    max_runs: int | None = None,
    on_runs: Callable[[list[JobRun]], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Call ``once`` every ``interval`` seconds (measured start to start) until
    ``max_runs`` rounds ran or KeyboardInterrupt; returns the rounds completed."""
    rounds = 0
    try:
        while max_runs is None or rounds < max_runs:
            start = time.monotonic()
            runs = list(once())
            rounds += 1
            if on_runs is not None:
                on_runs(runs)
            if max_runs is not None and rounds >= max_runs:
                break
            sleep(max(0.0, interval - (time.monotonic() - start)))
    except KeyboardInterrupt:
        pass
    return rounds
