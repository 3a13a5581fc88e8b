"""The fleet's claims of scheduled job runs (``hm_job_leases``, PostgreSQL only).

A fleet of servers on one PostgreSQL database runs each scheduled job once per
schedule slot, not once per process (docs/DEPLOY.md, "Deploy for a team"; the
scheduler, ``interfaces/scheduler.py``, computes the slots). The first process to
insert a (job, slot) row runs that slot; the others see the conflict and skip it. The
SQL lives here, with the rest of the records' dialect (docs/ARCHITECTURE.md, Layers:
"every query dialect stays here"); the scheduler reaches it through
``MemoryManager.maintenance.job_lease()``.
"""

from __future__ import annotations

import os
import socket
import zlib
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

__all__ = ["LEASE_TABLE", "FleetLease", "fleet_lease"]

LEASE_TABLE = "hm_job_leases"
# the advisory lock taken while creating the table; the key predates the move from
# the scheduler and is kept so old and new processes of one fleet agree on it
_LEASE_DDL_LOCK = zlib.crc32(b"hello_memory.scheduler.leases")
_LEASE_KEEP = timedelta(days=7)  # claimed slots older than this are deleted


class FleetLease:
    """One row per (job, slot) in the records database, inserted by the first process
    to claim it: :meth:`claim` is True for that process only (``INSERT ... ON CONFLICT
    DO NOTHING``, atomic in PostgreSQL whatever the number of claimants)."""

    def __init__(self, engine: Engine, holder: str | None = None) -> None:
        self._engine = engine
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}"
        self._ready = False

    def _create(self, conn: Connection) -> None:
        if self._ready:
            return
        # one creator at a time: CREATE TABLE IF NOT EXISTS races on the catalogue
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (_LEASE_DDL_LOCK,))
        conn.exec_driver_sql(
            f"CREATE TABLE IF NOT EXISTS {LEASE_TABLE} (job text NOT NULL, "
            "slot timestamptz NOT NULL, holder text NOT NULL, "
            "claimed timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (job, slot))")

    def claim(self, job: str, slot: datetime) -> bool:
        """Claim ``job``'s ``slot``; True when this process is to run it."""
        with self._engine.begin() as conn:
            self._create(conn)
            row = conn.exec_driver_sql(
                f"INSERT INTO {LEASE_TABLE} (job, slot, holder) VALUES (%s, %s, %s) "
                "ON CONFLICT (job, slot) DO NOTHING RETURNING holder",
                (job, slot, self.holder)).first()
            conn.exec_driver_sql(f"DELETE FROM {LEASE_TABLE} WHERE job = %s AND slot < %s",
                                 (job, slot - _LEASE_KEEP))
        self._ready = True
        return row is not None


def fleet_lease(engine: Engine, holder: str | None = None) -> FleetLease | None:
    """The lease on ``engine`` when several processes may share it (PostgreSQL), else
    None: an embedded SQLite store has one process and needs none."""
    if engine.url.get_backend_name() != "postgresql":
        return None
    return FleetLease(engine, holder)
