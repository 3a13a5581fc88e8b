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

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hello_memory import telemetry
from hello_memory.config import JobsSettings
from hello_memory.errors import InvalidInputError
from hello_memory.types import MemoryType, utcnow
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["ALL_JOBS", "JOBS", "STORE_JOBS", "STORE_NAMESPACE", "JobRun", "Schedule",
           "namespaces_for", "parse_duration", "parse_schedule", "run_every", "run_job",
           "run_optimize"]

JOBS = ("consolidate", "forget", "reindex", "reconcile")  # per namespace
STORE_JOBS = ("optimize",)                                # store-wide
# Jobs that write (index work, HNSW segments): refused under storage.min_free_bytes
# before they start (hello_memory/stores/disk.py); forget is left to the record
# store's own guard, since a hard forget is how space is freed.
_WRITING_JOBS = frozenset({"consolidate", "reindex", "reconcile", "optimize"})
ALL_JOBS = JOBS + STORE_JOBS
STORE_NAMESPACE = "*"  # the audit namespace of a store-wide run
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


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


def parse_duration(text: str) -> float:
    """Seconds in ``"90"``, ``"30s"``, ``"15m"``, ``"1.5h"`` or ``"1d"`` (at least 1 s)."""
    match = _DURATION_RE.match(text or "")
    if not match:
        raise InvalidInputError(f"not a duration: {text!r}; use e.g. 30s, 15m, 1h or 1d")
    seconds = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if seconds < 1:
        raise InvalidInputError(f"duration {text!r} is below one second")
    return seconds


# cron fields: (name, low, high, names that stand for low, low + 1, ...)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_CRON_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()), ("hour", 0, 23, ()), ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS), ("day of week", 0, 7, _DAYS))
# APScheduler 3 counts weekdays from Monday = 0: hand it names, never numbers
_APS_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class Schedule:
    """One ``jobs.schedule`` entry: ``every <duration>`` (``seconds``) or a 5-field
    cron line (``cron``: minute, hour, day, month, day_of_week, as APScheduler reads
    them; ``*`` or a comma list, weekdays by name)."""

    text: str
    seconds: float | None = None
    cron: dict[str, str] | None = None


def _cron_value(token: str, low: int, names: tuple[str, ...], what: str) -> int:
    token = token.strip().lower()
    if token in names:
        return low + names.index(token)
    if not token.isdigit():
        raise InvalidInputError(f"{what}: {token!r} is not a number"
                                + (f" or one of {', '.join(names)}" if names else ""))
    return int(token)


def _cron_field(text: str, what: str, low: int, high: int, names: tuple[str, ...]
                ) -> set[int] | None:
    """The values a cron field allows (None for ``*``); ``InvalidInputError`` names
    the field when one part is out of range or not cron syntax."""
    if text == "*":
        return None
    values: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) < 1:
                raise InvalidInputError(f"{what}: step {step_text!r} must be a whole number >= 1")
            step = int(step_text)
        if base == "*":
            first, last = low, high
        elif "-" in base:
            a, _, b = base.partition("-")
            first, last = (_cron_value(a, low, names, what), _cron_value(b, low, names, what))
        else:
            first = _cron_value(base, low, names, what)
            last = high if step_text else first
        if not (low <= first <= high and low <= last <= high) or first > last:
            raise InvalidInputError(f"{what}: {part!r} is not within {low}-{high} "
                                    "(ranges ascend)")
        values.update(range(first, last + 1, step))
    return values


def parse_schedule(text: str) -> Schedule:
    """``"every 6h"`` (any :func:`parse_duration`) or a 5-field cron line
    ``"MIN HOUR DAY MONTH WEEKDAY"`` (``*``, ``a-b``, ``*/n``, ``a,b``; months and
    weekdays also by name, weekday 0 or 7 = Sunday), in the server's local time.
    A line that restricts both day of month and weekday is refused (cron ORs them,
    APScheduler ANDs them: neither reading would be safe to guess)."""
    raw = text.strip() if isinstance(text, str) else ""
    if raw.lower().startswith("every "):
        return Schedule(raw, seconds=parse_duration(raw[6:]))
    fields = raw.split()
    if len(fields) != 5:
        raise InvalidInputError(
            f"not a schedule: {text!r}; use 'every DURATION' (every 30m, every 6h, "
            "every 1d) or a 5-field cron line 'MIN HOUR DAY MONTH WEEKDAY' (15 3 * * *)")
    sets = [_cron_field(f, what, low, high, names)
            for f, (what, low, high, names) in zip(fields, _CRON_FIELDS, strict=True)]
    if sets[2] is not None and sets[4] is not None:
        raise InvalidInputError(f"schedule {text!r} restricts both day of month and weekday; "
                                "use one of them (the other '*')")
    keys = ("minute", "hour", "day", "month", "day_of_week")
    cron: dict[str, str] = {}
    for key, values in zip(keys, sets, strict=True):
        if values is None:
            cron[key] = "*"
        elif key == "day_of_week":
            cron[key] = ",".join(sorted({_APS_DAYS[v] for v in values}, key=_DAYS.index))
        else:
            cron[key] = ",".join(str(v) for v in sorted(values))
    return Schedule(raw, cron=cron)


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
    manager.stores.records.audit.add(ns, f"job:{job}", run.as_dict())
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
    manager.stores.records.audit.add(STORE_NAMESPACE, "job:optimize", run.as_dict())
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
