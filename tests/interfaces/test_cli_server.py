"""The CLI next to a running server (issue 14, part 2; README "Jobs" and "The CLI next
to a server").

A real ``hello-memory serve`` subprocess on an embedded data directory, with a 2-second
schedule for consolidate and forget: its scheduled runs show in ``GET /v1/jobs`` and in
the audit while ``hello-memory stats``, ``jobs reconcile`` and the other server-capable
commands (subprocesses too) run through it; the rest say so in one line and exit 4.
Plus: the info file's staleness rules, the scheduler's lifecycle defaults, and the CLI
items of issue 20 (``init``'s config picked up, one-line settings errors).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hello_memory.config import JobsSettings, load_settings
from hello_memory.errors import (
    BackendUnavailableError,
    ConfigError,
    InvalidInputError,
    NotFoundError,
)
from hello_memory.interfaces.remote import ServerClient, hit_from_json, job_run_from_json
from hello_memory.interfaces.scheduler import JobScheduler
from hello_memory.server_info import (
    ServerInfo,
    info_path,
    live_server,
    read_info,
    remove_info,
    write_info,
)

from .conftest import free_port, make_manager, make_settings

ADMIN_KEY = "key-admin"
KEYS = {ADMIN_KEY: ["*"], "key-a": ["alice"]}
EXE = shutil.which("hello-memory", path=str(Path(sys.executable).parent))


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: no config file, rules-based entities,
    and no HELLO_MEMORY_* setting of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELLO_MEMORY")}
    return {**env, "HELLO_MEMORY_CONFIG": "", "HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules",
            **extra}


def cli(*args: str, env: dict[str, str], cwd: Path | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    assert EXE is not None
    return subprocess.run([EXE, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def error_lines(out: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in out.stderr.splitlines() if line.strip()
            and not line.startswith("Opening stores")]


def wait_for(check: Callable[[], Any], timeout: float = 60.0, what: str = "it") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not seen within {timeout} s")
        time.sleep(0.3)


def audit_actions(data: Path, namespace: str) -> list[tuple[str, dict[str, Any]]]:
    """The audit rows of a namespace, read from the running server's SQLite file."""
    with sqlite3.connect(f"file:{data / 'records.db'}?mode=ro", uri=True, timeout=10) as db:
        rows = db.execute("SELECT action, details FROM hm_audit_log WHERE namespace = ? "
                          "ORDER BY id", (namespace,)).fetchall()
    return [(action, json.loads(details) if details else {}) for action, details in rows]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """``hello-memory serve --port 0`` on an embedded data directory, with consolidate
    and forget every 2 seconds and an admin key in the settings (which the CLI reads
    too, so it authenticates by itself); stopped with SIGTERM at the end."""
    data = tmp_path / "data"
    env = cli_env(HELLO_MEMORY__API__API_KEYS=json.dumps(KEYS),
                  HELLO_MEMORY__JOBS__SCHEDULE=json.dumps(
                      {"consolidate": "every 2s", "forget": "every 2s"}))
    log = (tmp_path / "serve.log").open("w")
    assert EXE is not None
    proc = subprocess.Popen([EXE, "--data-dir", str(data), "serve", "--port", "0"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        def started() -> ServerInfo | None:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            return read_info(data)

        info = wait_for(started, timeout=180, what="server.json")
        yield {"data": data, "env": env, "info": info, "proc": proc,
               "log": tmp_path / "serve.log"}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


@pytest.mark.slow
def test_cli_runs_through_the_server_that_holds_the_directory(server: dict[str, Any]
                                                               ) -> None:
    """The issue's "Done when": scheduled consolidate and forget runs appear in GET
    /v1/jobs and in the audit while `stats` and `jobs reconcile` on the same directory
    succeed through the server; a second server is one line, exit 4; SIGTERM is a
    clean exit that removes server.json."""
    data, env, info, proc = server["data"], server["env"], server["info"], server["proc"]
    assert info.pid == proc.pid and info.exclusive and info.url.startswith("http://127.0.0.1:")
    assert live_server(data) == info
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    http = httpx.Client(base_url=info.url, headers=admin, timeout=30)
    r = http.post("/v1/memories/batch", params={"namespace": "alice"}, json={"memories": [
        {"content": "Alice moved to Lisbon in May.", "memory_type": "episodic",
         "importance": 0.9},
        {"content": "The lift was slow this morning.", "memory_type": "episodic",
         "importance": 0.05},
        {"content": "Alice drinks green tea every afternoon.", "memory_type": "semantic",
         "importance": 0.6}]})
    assert r.status_code == 201, r.text
    low = r.json()["ids"][1]

    def ran_in_alice() -> dict[str, Any] | None:
        jobs = {j["name"]: j for j in http.get("/v1/jobs").json()["jobs"]}
        done = all((j["last_result"] or {}).get("status") == "ok"
                   and any(run["namespace"] == "alice" for run in j["last_result"]["runs"])
                   for j in (jobs["consolidate"], jobs["forget"]))
        return jobs if done else None

    jobs = wait_for(ran_in_alice, what="scheduled runs over alice")
    assert jobs["forget"]["last_run"]["trigger"] == "schedule"
    assert jobs["consolidate"]["schedule"] == "every 2s"

    # the CLI, a separate process, on the same directory: through the server (a proxy
    # of the environment is for other machines: this one nothing answers at)
    closed = f"http://127.0.0.1:{free_port()}"
    out = cli("--data-dir", str(data), "stats", "-n", "alice", "--json",
              env={**env, "HTTP_PROXY": closed, "http_proxy": closed, "ALL_PROXY": closed})
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    assert stats["namespace"] == "alice" and stats["total"] >= 2
    out = cli("--data-dir", str(data), "jobs", "reconcile", "-n", "alice", "--json",
              env=env)
    assert out.returncode == 0, out.stderr
    ran = json.loads(out.stdout.splitlines()[0])  # the JSON POST /v1/jobs/reconcile answers
    assert ran["job"] == "reconcile" and ran["runs"][0]["namespace"] == "alice"
    out = cli("--data-dir", str(data), "jobs", "forget", "--all-namespaces", "--dry-run",
              "--strategy", "importance", "--threshold", "0.7", env=env)
    assert out.returncode == 0 and out.stdout.startswith("forget [alice]:"), out.stderr

    audit = wait_for(lambda: [a for a, _ in audit_actions(data, "alice")
                              if a in ("job:consolidate", "job:forget")], what="audit")
    assert {"job:consolidate", "job:forget"} <= set(audit)
    assert "job:reconcile" in {a for a, _ in audit_actions(data, "alice")}
    forgotten = [i for a, d in audit_actions(data, "alice") if a == "job:forget"
                 for i in d["details"]["ids"]]
    assert low in forgotten

    # search, show and export give what the server has
    out = cli("--data-dir", str(data), "search", "where does Alice live", "-n", "alice",
              "--json", env=env)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)  # the search JSON of POST /v1/search
    hits = found["hits"]
    assert found["recipe"] == "hybrid" and hits and "Lisbon" in hits[0]["content"]
    first = hits[0]["id"]
    out = cli("--data-dir", str(data), "show", first, "-n", "alice", "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["content"] == hits[0]["content"]
    export = data.parent / "alice.jsonl"
    out = cli("--data-dir", str(data), "export", str(export), "-n", "alice", env=env)
    assert out.returncode == 0, out.stderr
    exported = [json.loads(line) for line in export.read_text().splitlines()]
    assert first in {m["id"] for m in exported} and low in {m["id"] for m in exported}

    # what cannot go through the server: one line naming it, exit 4
    for args in (["restore", low, "-n", "alice"], ["import", str(export)],
                 ["forget", low, "-n", "alice"]):
        out = cli("--data-dir", str(data), *args, env=env)
        lines = error_lines(out)
        assert out.returncode == 4, (args, out.stdout, out.stderr)
        assert len(lines) == 1 and info.url in lines[0] and args[0] in lines[0], lines
        # the job that does run through the server is named (README's table)
        assert ("hello-memory jobs forget" in lines[0]) == (args[0] == "forget"), lines
    # a second server on the held directory: one line, exit 4, and the first still holds
    out = cli("--data-dir", str(data), "serve", "--port", str(free_port()), env=env)
    assert out.returncode == 4 and len(error_lines(out)) == 1, out.stderr
    assert info.url in out.stderr and "Traceback" not in out.stderr
    assert read_info(data) == info and http.get("/healthz").status_code == 200

    # --server explicit, from a directory of its own, with a key granting alice only
    other = data.parent / "elsewhere"
    out = cli("--data-dir", str(other), "--server", info.url, "--api-key", "key-a",
              "stats", "-n", "alice", "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["total"] == stats["total"]
    assert not other.exists()  # nothing opened here
    out = cli("--data-dir", str(other), "--server", info.url, "--api-key", "key-a", "jobs",
              "reconcile", "-n", "alice", env=env)  # jobs need an admin key
    assert out.returncode == 2 and len(error_lines(out)) == 1, out.stderr
    assert "403" in out.stderr and "admin key" in out.stderr
    out = cli("--data-dir", str(other), "--server", info.url, "forget", "-n", "alice",
              env=env)
    assert out.returncode == 4 and len(error_lines(out)) == 1, out.stderr
    assert "--server" in out.stderr

    # clean exit: SIGTERM, status 0, server.json gone, the directory free again
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0, server["log"].read_text()
    assert not info_path(data).exists()
    out = cli("--data-dir", str(data), "stats", "-n", "alice", "--json", env=env)
    assert out.returncode == 0 and json.loads(out.stdout)["total"] == stats["total"]
    http.close()


@pytest.mark.slow
def test_the_server_proves_it_holds_its_directory_and_no_other(server: dict[str, Any]
                                                               ) -> None:
    """Issue 28, item 2: serve keeps a random token in a 0600 file of its data
    directory (not in server.json) and answers a challenge with an HMAC of it, bound to
    its own address; the token never crosses the wire. A copy of its server.json in
    another directory (same user, same process, same address) is not trusted there:
    the CLI on that directory sends the server no key and runs locally."""
    import secrets
    import stat

    from hello_memory.server_info import (
        PROOF_PATH,
        discover,
        proof,
        token_path,
        write_token,
    )

    data, env, info = server["data"], server["env"], server["info"]
    token_file = token_path(data)
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    assert token not in info_path(data).read_text()
    assert discover(data).info == info
    nonce = secrets.token_hex(16)
    answer = httpx.get(f"{info.url}{PROOF_PATH}", params={"nonce": nonce}, timeout=30)
    assert answer.status_code == 200 and token not in answer.text
    assert answer.json() == {"proof": proof(token, nonce, info.url)}
    assert httpx.get(f"{info.url}{PROOF_PATH}", params={"nonce": "x"},
                     timeout=30).status_code == 422
    # the same file, copied into another directory with a token of its own
    other = data.parent / "copy"
    write_info(other, ServerInfo(**{**info.__dict__, "data_dir": str(other.resolve())}))
    write_token(other)
    refused = discover(other).refused
    assert "did not prove that it holds this data directory" in refused
    out = cli("--data-dir", str(other), "stats", "-n", "alice", "--json",
              env={**env, "HELLO_MEMORY_API_KEY": ADMIN_KEY})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["total"] == 0  # ran on the copy's own (empty) stores
    assert "did not prove" in out.stderr and "running in this process" in out.stderr
    # the server saw the challenge only: no request of the CLI's carried the key
    log = server["log"].read_text()
    assert "/v1/stats" not in log


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_info_files_are_ignored(tmp_path: Path) -> None:
    data = tmp_path / "data"
    closed = f"http://127.0.0.1:{free_port()}"
    # process gone; then process alive (this one) but nothing answering at the address
    for pid in (dead_pid(), os.getpid()):
        write_info(data, ServerInfo(url=closed, pid=pid, started="2026-01-01T00:00:00+00:00",
                                    data_dir=str(data), exclusive=True))
        assert read_info(data) is not None and live_server(data) is None
        out = cli("--data-dir", str(data), "stats", "--json", env=cli_env())
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["total"] == 0
    # unreadable or half-written files are no server either
    info_path(data).write_text("{not json")
    assert read_info(data) is None and live_server(data) is None


def test_a_holder_that_does_not_answer_is_named(tmp_path: Path, embedder: Any) -> None:
    """server.json names a live process that holds the stores but does not answer
    (busy): the CLI cannot go through it and cannot open the stores; one line says so."""
    data = tmp_path / "data"
    closed = f"http://127.0.0.1:{free_port()}"
    with make_manager(make_settings(data), embedder):  # this process holds the directory
        write_info(data, ServerInfo(url=closed, pid=os.getpid(), started="now",
                                    data_dir=str(data), exclusive=True))
        out = cli("--data-dir", str(data), "stats", env=cli_env())
    lines = error_lines(out)
    assert out.returncode == 4 and len(lines) == 1, out.stderr
    # the held-directory message names the running server (issue 29)
    assert "holds the data directory" in lines[0] and closed in lines[0]
    assert "busy" in lines[0]


def test_info_file_is_written_atomically_and_removed_only_by_its_server(tmp_path: Path
                                                                       ) -> None:
    info = ServerInfo(url="http://127.0.0.1:9", pid=os.getpid(), started="now",
                      data_dir=str(tmp_path), exclusive=True, version="x")
    path = write_info(tmp_path, info)
    assert read_info(tmp_path) == info
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left
    remove_info(tmp_path, pid=os.getpid() + 1)  # another process's: left alone
    assert path.exists()
    remove_info(tmp_path)
    assert not path.exists()
    remove_info(tmp_path)  # nothing to remove: no error


def test_explicit_server_that_does_not_answer_is_exit_4(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    out = cli("--data-dir", str(tmp_path / "d"), "--server", url, "stats", env=cli_env())
    assert out.returncode == 4 and len(error_lines(out)) == 1, out.stderr
    assert url in out.stderr
    with ServerClient(url) as client, pytest.raises(BackendUnavailableError):
        client.invoke("stats", {}, namespace="alice")


def test_json_round_trips_render_the_same(manager: Any) -> None:
    """The renderers work on the JSON both paths give: a hit rebuilt from its JSON
    explains as the hit itself does, a job run rebuilt from its JSON is the same run."""
    from hello_memory.interfaces.jobs import run_job
    from hello_memory.memory.manager import hit_to_json
    from hello_memory.retrieval.fusion import explain

    manager.add("Alice moved to Lisbon in May.", "episodic", 0.9, namespace="alice")
    hits = manager.search("where does Alice live", namespace="alice")
    assert hits
    for hit in hits:
        rebuilt = hit_from_json(json.loads(json.dumps(hit_to_json(hit))))
        # the JSON rounds scores to 6 places and does not carry the sub-queries
        assert explain(rebuilt) == "\n".join(
            line for line in explain(hit).splitlines() if not line.startswith("  queries"))
    run = run_job(manager, "reconcile", namespace="alice")
    as_json = json.loads(json.dumps(run.as_dict()))
    back = job_run_from_json(as_json)
    assert back.as_dict() == as_json and back.summary() == run.summary()


def test_client_errors_keep_the_exit_codes(tmp_path: Path, embedder: Any) -> None:
    """Problem JSON back to the library's errors (404 -> NotFoundError: exit 3;
    400 -> InvalidInputError: exit 2), over the real app on a real socket."""
    import threading

    import uvicorn

    from hello_memory.interfaces.rest import create_app

    settings = make_settings(tmp_path / "d", api={"auth_disabled": True})
    mm = make_manager(settings, embedder)
    config = uvicorn.Config(create_app(settings, manager=mm), host="127.0.0.1",
                            port=free_port(), log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: srv.started, timeout=30, what="server")
        with ServerClient(f"http://127.0.0.1:{config.port}") as client:
            with pytest.raises(NotFoundError):
                client.invoke("get", {"memory_id": "nope"}, namespace="alice")
            with pytest.raises(InvalidInputError):
                client.run_job("reconcile", [], False, False)  # neither namespaces nor all
            item = client.invoke("add", {"content": "Bob likes chess.", "importance": 0.4,
                                         "metadata": {"k": "v"}, "user_id": "u1"},
                                 namespace="bob")
            got = client.invoke("get", {"memory_id": item["id"]}, namespace="bob")
            assert got["metadata"] == {"k": "v"} and got["user_id"] == "u1"
            assert client.invoke("stats", {}, namespace="bob")["total"] == 1
            path = tmp_path / "bob.jsonl"
            assert client.export_jsonl(path, namespace="bob") == 1
            assert json.loads(path.read_text())["id"] == item["id"]
            # every job name, with the CLI's option names (the progress bar stays here)
            for job, opts in (("consolidate", {"importance_threshold": 0.3,
                                               "min_access_count": 0}),
                              ("forget", {"strategy": "importance", "threshold": 0.2}),
                              ("reindex", {"progress": True}), ("reconcile", {})):
                [run] = client.run_job(job, ["bob"], False, True, **opts)
                assert (run.job, run.namespace, run.dry_run) == (job, "bob", True)
                for name in ("importance_threshold", "threshold"):
                    if name in opts:  # the server ran with the option given
                        assert run.details[name] == opts[name]
            assert client.run_job("forget", [], True, True)[0].namespace == "bob"
            assert client.optimize().job == "optimize"
    finally:
        srv.should_exit = True
        thread.join(timeout=30)
        mm.close()


def test_scheduler_reads_the_managers_lifecycle_defaults(tmp_path: Path,
                                                          embedder: Any) -> None:
    """The scheduler takes only its schedule from its settings: a run's thresholds come
    from ``manager.lifecycle`` (README "Lifecycle defaults")."""
    settings = make_settings(tmp_path / "d", jobs={"forget_threshold": 0.9})
    mm = make_manager(settings, embedder)
    try:
        assert mm.lifecycle.forget_threshold == 0.9
        mm.add("Alice moved to Lisbon in May.", "episodic", 0.5, namespace="alice")
        scheduler = JobScheduler(lambda: mm, JobsSettings())  # defaults: threshold 0.1
        [run] = scheduler.run("forget", namespaces=["alice"], dry_run=True)
        assert run.details["threshold"] == 0.9 and run.counts["forgotten"] == 1
    finally:
        mm.close()


# --- issue 20: the CLI's config and settings errors -------------------------------------
# In-process (typer's CliRunner): no model to load twice, no interpreter to start.
def run_here(*args: str, env: dict[str, str | None], code: int = 0) -> Any:
    from typer.testing import CliRunner

    from hello_memory.interfaces.cli import app

    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return result


def stderr_lines(result: Any) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


RULES = {"HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules"}


def test_init_writes_the_config_later_commands_read(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env: dict[str, str | None] = {**RULES, "HELLO_MEMORY_CONFIG": None}  # none named
    out = run_here("--data-dir", "my-store", "init", env=env)
    assert (tmp_path / "hello-memory.yaml").is_file()
    assert "read hello-memory.yaml" in " ".join(out.stdout.split())
    out = run_here("config", env=env)  # no --data-dir: the file's
    assert json.loads(out.stdout)["data_dir"] == "my-store"
    run_here("stats", "--json", env=env)
    assert (tmp_path / "my-store" / "records.db").exists()
    # an explicit $HELLO_MEMORY_CONFIG (empty: no file) wins over the file
    out = run_here("config", env={**env, "HELLO_MEMORY_CONFIG": ""})
    assert json.loads(out.stdout)["data_dir"] == ".hello_memory"


@pytest.mark.parametrize(("variable", "value", "names"), [
    ("HELLO_MEMORY__API__API_KEYS", "not json", "api.api_keys"),
    ("HELLO_MEMORY__API__API_KEYS", '{"key": "alice"}', "api.api_keys"),
    ("HELLO_MEMORY__API__PORT", "eighty", "api.port"),
    ("HELLO_MEMORY__JOBS__SCHEDULE", '{"forget": "often"}', "jobs.schedule.forget"),
])
def test_settings_errors_are_one_line_naming_the_setting(variable: str, value: str,
                                                         names: str) -> None:
    out = run_here("config", env={**RULES, "HELLO_MEMORY_CONFIG": "", variable: value},
                   code=2)
    lines = stderr_lines(out)
    assert len(lines) == 1 and lines[0].startswith("error: invalid settings:"), out.stderr
    assert names in lines[0] and variable in lines[0], lines[0]


def test_settings_errors_from_a_file_name_the_file(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("api:\n  port: 0\njobs:\n  forget_threshold: 2\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(config, environ={})
    message = str(caught.value)
    assert "\n" not in message and "api.port" in message and "jobs.forget_threshold" in message
    assert str(config) in message
    out = run_here("--config", str(config), "stats", env={**RULES, "HELLO_MEMORY_CONFIG": ""},
                   code=2)
    assert len(stderr_lines(out)) == 1, out.stderr


def test_load_settings_reads_the_environment_it_is_given_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``environ={}`` means no environment: the process's HELLO_MEMORY__* stay out."""
    monkeypatch.setenv("HELLO_MEMORY__DEFAULT_NAMESPACE", "from-process-env")
    assert load_settings(environ={}).default_namespace == "default"
    assert load_settings().default_namespace == "from-process-env"
