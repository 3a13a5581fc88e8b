"""The schedulable jobs' names and the schedule syntax of ``jobs.schedule``.

Core, below the settings: ``JobsSettings`` (``config_sections.py``) checks each
``jobs.schedule`` entry against :data:`ALL_JOBS` and :func:`parse_schedule` here, so the
settings need not import :mod:`hello_memory.interfaces.jobs`, an interface that reaches the facade
(docs/ARCHITECTURE.md "Known debts": no import cycle). :mod:`hello_memory.interfaces.jobs` runs
the jobs and re-exports every name below.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hello_memory.errors import InvalidInputError

__all__ = ["ALL_JOBS", "JOBS", "STORE_JOBS", "Schedule", "parse_duration", "parse_schedule"]

JOBS = ("consolidate", "forget", "reindex", "reconcile")  # per namespace
STORE_JOBS = ("optimize",)                                # store-wide
ALL_JOBS = JOBS + STORE_JOBS
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


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
