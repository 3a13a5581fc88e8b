"""The server's own maintenance jobs (``jobs.schedule``, :mod:`hello_memory.interfaces.scheduler`):
the real app, its lifespan (``with TestClient(app)``), real APScheduler threads and a
real manager on embedded stores."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from hello_memory.config import load_settings
from hello_memory.errors import ConfigError
from hello_memory.interfaces.jobs import parse_schedule
from hello_memory.interfaces.rest import create_app
from hello_memory.interfaces.scheduler import THREAD_PREFIX
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.records.models import AuditRow

from .conftest import make_manager, make_settings

KEYS = {"key-admin": ["*"], "key-a": ["alice", "team/*"]}
ADMIN = {"Authorization": "Bearer key-admin"}
A = {"Authorization": "Bearer key-a"}


def job_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate()
            if t.name == "APScheduler" or t.name.startswith(THREAD_PREFIX)]


def wait_for(check: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not seen within {timeout} s")
        time.sleep(0.2)


def jobs_by_name(client: TestClient) -> dict[str, dict[str, Any]]:
    r = client.get("/v1/jobs", headers=ADMIN)
    assert r.status_code == 200, r.text
    return {j["name"]: j for j in r.json()["jobs"]}


@pytest.fixture
def served(tmp_path: Path, embedder: Any) -> Iterator[Callable[..., tuple[TestClient,
                                                                          MemoryManager]]]:
    """``served(schedule)``: a TestClient (lifespan running) over a real manager with
    that ``jobs.schedule``; everything is closed at the end."""
    opened: list[tuple[TestClient, MemoryManager]] = []

    def start(schedule: dict[str, str], **jobs: Any) -> tuple[TestClient, MemoryManager]:
        settings = make_settings(tmp_path / f"data{len(opened)}", api={"api_keys": KEYS},
                                 jobs={"schedule": schedule, **jobs})
        mm = make_manager(settings, embedder)
        client = TestClient(create_app(settings, manager=mm, run_jobs=True))
        client.__enter__()
        opened.append((client, mm))
        return client, mm

    yield start
    for client, mm in opened:
        client.__exit__(None, None, None)
        mm.close()


@pytest.mark.slow
def test_scheduled_consolidate_and_forget_run_and_are_audited(served: Any) -> None:
    client, mm = served({"consolidate": "every 2s", "forget": "every 2s"},
                        forget_threshold=0.2)
    listed = jobs_by_name(client)
    assert listed["forget"]["schedule"] == "every 2s" and listed["forget"]["next_run"]
    assert listed["reconcile"]["schedule"] is None and listed["reconcile"]["next_run"] is None
    ns = {"namespace": "alice"}
    r = client.post("/v1/memories", params=ns, headers=A, json={
        "content": "Alice moved to Lisbon in May.", "memory_type": "episodic",
        "importance": 0.9})
    assert r.status_code == 201, r.text
    low = client.post("/v1/memories", params=ns, headers=A, json={
        "content": "The lift was slow this morning.", "memory_type": "episodic",
        "importance": 0.05}).json()["id"]

    def ran_in_alice() -> dict[str, dict[str, Any]] | None:
        jobs = jobs_by_name(client)
        done = all(
            (j["last_result"] or {}).get("status") == "ok"
            and any(run["namespace"] == "alice" for run in j["last_result"]["runs"])
            for j in (jobs["consolidate"], jobs["forget"]))
        return jobs if done else None

    jobs = wait_for(ran_in_alice)
    for name in ("consolidate", "forget"):
        assert jobs[name]["last_run"]["trigger"] == "schedule"
        assert jobs[name]["last_run"]["finished"] and jobs[name]["next_run"]
    audit = wait_for(lambda: [a for a in mm.stores.records.audit.list("alice", limit=1000)
                              if a["action"] in ("job:consolidate", "job:forget")])
    actions = {a["action"] for a in audit}
    assert actions == {"job:consolidate", "job:forget"}
    forgotten = [i for a in audit if a["action"] == "job:forget"
                 for i in a["details"]["details"]["ids"]]
    assert low in forgotten
    assert any(a["details"]["counts"]["new_targets"] + a["details"]["counts"]["moved"]
               for a in audit if a["action"] == "job:consolidate")
    r = client.get("/v1/namespaces", headers=ADMIN)
    assert r.status_code == 200 and r.json() == {"namespaces": ["alice"]}


@pytest.mark.slow
def test_run_now_not_found_busy_and_admin_only(served: Any) -> None:
    client, mm = served({})
    client.post("/v1/memories", params={"namespace": "alice"}, headers=A,
                json={"content": "Alice likes green tea."})
    assert client.get("/v1/jobs", headers=ADMIN).json()["scheduler_running"] is False
    r = client.post("/v1/jobs/reconcile", headers=ADMIN, json={"all_namespaces": True})
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["job"] == "reconcile" and [x["namespace"] for x in report["runs"]] == [
        "alice"]
    assert {"counts", "details", "started", "finished"} <= set(report["runs"][0])
    assert any(a["action"] == "job:reconcile" for a in mm.stores.records.audit.list("alice"))
    listed = jobs_by_name(client)["reconcile"]
    assert listed["last_run"]["trigger"] == "request"
    assert listed["last_result"]["status"] == "ok"

    # the CLI's options: a dry-run forget in one namespace
    r = client.post("/v1/jobs/forget", headers=ADMIN, json={
        "namespace": ["alice"], "dry_run": True, "strategy": "importance", "threshold": 0.9})
    assert r.status_code == 200, r.text
    assert r.json()["runs"][0]["dry_run"] is True and r.json()["runs"][0]["counts"] == {
        "forgotten": 1}
    assert mm.stats(namespace="alice")["total"] == 1  # dry run: nothing forgotten

    def problem(r: Any, status: int) -> dict[str, Any]:
        assert r.status_code == status, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        return dict(r.json())

    assert "no job 'nope'" in problem(client.post("/v1/jobs/nope", headers=ADMIN), 404)[
        "detail"]
    problem(client.post("/v1/jobs/reconcile", headers=ADMIN), 400)  # no namespaces named
    problem(client.post("/v1/jobs/forget", headers=ADMIN,
                        json={"all_namespaces": True, "min_access": 2}), 400)
    problem(client.post("/v1/jobs/forget", headers=ADMIN, json={"bogus": 1}), 422)
    problem(client.post("/v1/jobs/optimize", headers=ADMIN, json={"dry_run": True}), 400)
    for method, url in (("GET", "/v1/jobs"), ("POST", "/v1/jobs/reconcile"),
                        ("GET", "/v1/namespaces")):
        assert "admin key" in problem(client.request(method, url, headers=A), 403)["detail"]
        problem(client.request(method, url), 401)
        problem(client.request(method, url, headers={"X-API-Key": "nope"}), 401)

    # 409 while the same job runs: hold its run lock as a running job does
    jobs = client.app.state.jobs  # type: ignore[attr-defined]
    lock = jobs._locks["reconcile"]
    assert lock.acquire(blocking=False)
    try:
        body = problem(client.post("/v1/jobs/reconcile", headers=ADMIN,
                                   json={"all_namespaces": True}), 409)
        assert body["error"] == "JobBusyError"
        assert jobs_by_name(client)["reconcile"]["running"] is True
    finally:
        lock.release()

    r = client.post("/v1/jobs/optimize", headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json()["runs"][0]["namespace"] == "*"
    assert any(a["action"] == "job:optimize" for a in mm.stores.records.audit.list("*"))


@pytest.mark.slow
def test_a_failing_job_is_reported_and_the_scheduler_goes_on(served: Any) -> None:
    client, mm = served({"reconcile": "every 1s"})
    client.post("/v1/memories", params={"namespace": "alice"}, headers=A,
                json={"content": "Alice likes green tea."})
    table = AuditRow.__tablename__
    # a real failure: the audit table is gone, so the run cannot write its record
    with mm.stores.records.transaction() as s:
        s.execute(text(f"ALTER TABLE {table} RENAME TO {table}_away"))

    def last(status: str) -> dict[str, Any] | None:
        job = jobs_by_name(client)["reconcile"]
        return job if (job["last_result"] or {}).get("status") == status else None

    failed = wait_for(lambda: last("failed"))
    assert "RecordStoreError" in failed["last_result"]["error"]
    with mm.stores.records.transaction() as s:
        s.execute(text(f"ALTER TABLE {table}_away RENAME TO {table}"))
    ok = wait_for(lambda: last("ok"))
    assert ok["last_run"]["started"] > failed["last_run"]["started"]
    assert client.get("/v1/jobs", headers=ADMIN).json()["scheduler_running"] is True
    assert any(a["action"] == "job:reconcile" for a in mm.stores.records.audit.list("alice"))


@pytest.mark.slow
def test_shutdown_stops_the_scheduler(tmp_path: Path, embedder: Any) -> None:
    before = job_threads()
    settings = make_settings(tmp_path / "data", api={"api_keys": KEYS},
                             jobs={"schedule": {"forget": "every 1s", "reconcile": "every 1s"}})
    mm = make_manager(settings, embedder)
    try:
        app = create_app(settings, manager=mm, run_jobs=True)
        with TestClient(app) as client:
            assert client.get("/v1/jobs", headers=ADMIN).json()["scheduler_running"]
            wait_for(lambda: jobs_by_name(client)["forget"]["last_result"])
            assert len(job_threads()) > len(before)
        assert not app.state.jobs.running
        assert job_threads() == before
        # no schedule, or run_jobs not asked for: no scheduler thread at all
        for app in (create_app(settings, manager=mm),
                    create_app(make_settings(tmp_path / "data"), manager=mm, run_jobs=True)):
            with TestClient(app) as client:
                assert not app.state.jobs.running and job_threads() == before
    finally:
        mm.close()


def test_schedule_settings_are_checked_at_load_time() -> None:
    ok = load_settings(environ={}, jobs={"schedule": {
        "forget": "every 6h", "consolidate": "15 3 * * *", "optimize": "*/30 2-4 * * sun"}})
    assert ok.jobs.schedule["forget"] == "every 6h"
    assert load_settings(environ={}).jobs.schedule == {}
    env = load_settings(environ={"HELLO_MEMORY__JOBS__SCHEDULE__REINDEX": "every 1d"})
    assert env.jobs.schedule == {"reindex": "every 1d"}
    bad = {"forgett": "every 1h", "forget": "every 0s", "reconcile": "every soon",
           "consolidate": "61 * * * *", "optimize": "0 3 * *",
           "reindex": "0 3 1 * mon"}
    for job, value in bad.items():
        with pytest.raises(ConfigError, match=rf"jobs\.schedule\.{job}: "):
            load_settings(environ={}, jobs={"schedule": {job: value}})
    assert parse_schedule("*/20 * * * 1-5").cron == {
        "minute": "0,20,40", "hour": "*", "day": "*", "month": "*",
        "day_of_week": "mon,tue,wed,thu,fri"}
    assert parse_schedule("0 4 * * 0,7").cron["day_of_week"] == "sun"  # cron's Sunday
    assert parse_schedule("every 90s").seconds == 90
