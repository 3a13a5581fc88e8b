"""Several processes on one PostgreSQL database (issue 30; docs/ARCHITECTURE.md, "The
write path"): the index engine's per-key locks are also advisory locks in the
database, and a scheduled job's slot is claimed by one process of the fleet
(``FleetLease``). Each "process" here is its own engine and connection pool, as
another process would have; the three-server test under SIGKILL is test_fleet.py."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from hello_memory.interfaces.jobs import parse_schedule
from hello_memory.interfaces.scheduler import slot_of
from hello_memory.stores.indexing import DbKeyLocks, IndexEngine
from hello_memory.stores.records.leases import FleetLease

from .load import drift
from .support import make_manager

pytestmark = pytest.mark.postgres


def _waiting_advisory_locks(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.exec_driver_sql(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ).scalar() or 0)
    finally:
        engine.dispose()


def test_a_key_held_by_one_process_blocks_another_until_released(postgres_url: str) -> None:
    first, second = DbKeyLocks(postgres_url), DbKeyLocks(postgres_url)
    order: list[str] = []
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with first.hold("ns", {"id-1", "id-2"}):
            order.append("first in")
            held.set()
            release.wait(30)
            order.append("first out")

    def waiter() -> None:
        with second.hold("ns", {"id-2", "id-3"}):  # overlaps on id-2
            order.append("second in")

    a = threading.Thread(target=holder)
    a.start()
    assert held.wait(30)
    b = threading.Thread(target=waiter)
    b.start()
    # the second process is seen waiting in the database, not merely slow
    for _ in range(300):
        if _waiting_advisory_locks(postgres_url):
            break
        threading.Event().wait(0.05)
    assert _waiting_advisory_locks(postgres_url) == 1
    assert order == ["first in"]
    release.set()
    a.join(30)
    b.join(30)
    assert order == ["first in", "first out", "second in"]
    # another namespace is another key: both are taken at once
    with second.hold("other-ns", {"id-2"}), first.hold("ns", {"id-2"}):
        pass
    first.close()
    second.close()


def test_the_engine_takes_database_locks_only_on_postgresql(postgres_url: str,
                                                            tmp_path: Path) -> None:
    from hello_memory.stores.records import RecordStore

    pg, lite = RecordStore(postgres_url), RecordStore(f"sqlite:///{tmp_path / 'r.db'}")
    for store in (pg, lite):
        store.open()
    on_pg = IndexEngine(lambda: pg.outbox, shared_url=lambda: pg.engine.url)
    on_lite = IndexEngine(lambda: lite.outbox, shared_url=lambda: lite.engine.url)
    assert isinstance(on_pg.db_locks(), DbKeyLocks)
    assert on_lite.db_locks() is None
    on_pg.close()
    for store in (pg, lite):
        store.close()


def test_two_processes_racing_on_the_same_memories_leave_no_drift(
        postgres_url: str, tmp_path: Path, embedder: Any) -> None:
    """Two managers (two engines, two pools: two processes' worth) update, forget and
    delete the same memories from 6 threads at once; afterwards a dry-run reconcile
    finds nothing to repair and no outbox row is pending."""
    stack = {"records": {"url": postgres_url}, "vector": {"provider": "pgvector"}}
    managers = [make_manager(tmp_path / f"p{k}", embedder, **stack) for k in (0, 1)]
    ns = "race"
    items = managers[0].add_many([{"content": f"Alice keeps note {i} about Lisbon",
                                   "namespace": ns, "memory_type": "semantic"}
                                  for i in range(12)])
    ids = [i.id for i in items]
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        import random

        from hello_memory.errors import NotFoundError

        rng = random.Random(k)
        mm = managers[k % 2]
        for step in range(15):
            target = rng.choice(ids)
            try:
                roll = rng.random()
                if roll < 0.7:
                    mm.update(target, namespace=ns, content=f"Bob rewrote {target} step {step}",
                              importance=round(rng.uniform(0.1, 0.9), 2))
                elif roll < 0.85:
                    mm.forget_ids([target], namespace=ns)
                else:
                    mm.remove(target, namespace=ns)
            except NotFoundError:
                pass  # deleted by another thread first
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    try:
        assert drift(managers[1], [ns]) == {}
    finally:
        for mm in managers:
            mm.close()


def test_one_claim_per_slot_among_many_processes(postgres_url: str) -> None:
    engines = [create_engine(postgres_url) for _ in range(3)]
    leases = [FleetLease(e, holder=f"p{k}") for k, e in enumerate(engines)]
    slot = slot_of(parse_schedule("every 5m"), datetime(2026, 1, 2, 3, 7, 31,
                                                        tzinfo=timezone.utc))
    assert slot == datetime(2026, 1, 2, 3, 5, tzinfo=timezone.utc)
    wins: list[str] = []
    barrier = threading.Barrier(9)

    def claim(k: int) -> None:
        barrier.wait()
        if leases[k % 3].claim("forget", slot):
            wins.append(leases[k % 3].holder)

    threads = [threading.Thread(target=claim, args=(k,)) for k in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert leases[0].claim("forget", slot + timedelta(minutes=5))  # the next slot
    assert leases[1].claim("optimize", slot)  # another job's slot is its own
    cron = parse_schedule("15 3 * * *")
    assert slot_of(cron, datetime(2026, 1, 2, 3, 15, 42, tzinfo=timezone.utc)) == datetime(
        2026, 1, 2, 3, 15, tzinfo=timezone.utc)
    for e in engines:
        e.dispose()


def test_a_scheduled_store_wide_job_runs_and_once_per_slot(postgres_url: str, tmp_path: Path,
                                                          embedder: Any) -> None:
    """A scheduled ``optimize`` (store-wide) runs (it was refused for being asked for
    every namespace), and a second process firing in the same slot does not run it."""
    from hello_memory.config import JobsSettings
    from hello_memory.interfaces.scheduler import JobScheduler

    stack = {"records": {"url": postgres_url}, "vector": {"provider": "pgvector"}}
    managers = [make_manager(tmp_path / f"p{k}", embedder, **stack) for k in (0, 1)]
    now = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
    cfg = JobsSettings(schedule={"optimize": "every 1h"})
    try:
        for mm in managers:  # two processes, one slot
            JobScheduler(lambda mm=mm: mm, cfg, clock=lambda: now)._scheduled("optimize")
        runs = [a for a in managers[0].stores.records.audit.list("*")
                if a["action"] == "job:optimize"]
        assert len(runs) == 1
        later = now + timedelta(hours=1)
        JobScheduler(lambda: managers[1], cfg, clock=lambda: later)._scheduled("optimize")
        assert len([a for a in managers[0].stores.records.audit.list("*")
                    if a["action"] == "job:optimize"]) == 2
    finally:
        for mm in managers:
            mm.close()
