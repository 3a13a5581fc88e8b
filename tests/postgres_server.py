"""A throwaway PostgreSQL server from Debian's ``postgresql`` packages, for the tests.

``initdb`` makes a cluster in a temporary directory and the ``postgres`` server runs
on it, listening on a free port of 127.0.0.1 and on a unix socket in the same
directory. The server is started as this fixture's own child process (not daemonised
through ``pg_ctl start``) so that the kernel stops it if the test process dies
without running its finalizers; ``stop()`` asks it for a fast shutdown.

PostgreSQL refuses to run as root. Tests run as root here and in CI, so when this
process is root the cluster belongs to an unprivileged account: ``postgres`` (which
the Debian package creates) when it exists, else ``nobody``. The cluster trusts local
connections (it is never reachable from outside 127.0.0.1) and is tuned for speed,
not durability (``fsync=off``): crash tests kill clients, never the server.

Two settings make it less forgiving than a default cluster, like the servers users
run: the server's time zone is not UTC (America/Los_Angeles), so a client that reads
times in the session's zone is caught; and the test database sorts text with an ICU
collation that ignores spaces and punctuation at the first level (``en-US-u-ka-shifted``,
as glibc's en_US.UTF-8 does), so a query that relies on code-point order is caught.

Each test gets its own empty schema in one shared database (``create_schema``): the
URL's ``search_path`` option points every unqualified table name there, so the store
sees an empty database. A schema costs a millisecond; a database, even copied from
``template0``, ~200 ms on a loaded machine. ``create_database`` makes a real one.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["PostgresServer", "find_bindir"]

SUPERUSER = "hm"


def find_bindir() -> Path:
    """The newest ``/usr/lib/postgresql/<major>/bin`` holding initdb and postgres (or
    ``$HM_TEST_PG_BINDIR``); RuntimeError naming the package when there is none."""
    given = os.environ.get("HM_TEST_PG_BINDIR")
    candidates = [given] if given else glob.glob("/usr/lib/postgresql/*/bin")

    def major(path: str) -> int:
        found = re.search(r"/(\d+)/bin$", path)
        return int(found.group(1)) if found else 0

    for path in sorted(candidates, key=major, reverse=True):
        if all(os.access(Path(path, tool), os.X_OK) for tool in ("initdb", "postgres")):
            return Path(path)
    raise RuntimeError(
        "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin; install the "
        "Debian package 'postgresql' (scripts/system-deps.sh, run by 'make test', does)")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: have the kernel ask the server for a fast shutdown
    (SIGINT) if the test process dies first (Linux only)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes
            import signal

            ctypes.CDLL(None).prctl(1, signal.SIGINT)  # 1 = PR_SET_PDEATHSIG


def _run_as() -> pwd.struct_passwd | None:
    """The unprivileged account to run the cluster as, or None to run as ourselves."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' account exists")


class PostgresServer:
    """Start a PostgreSQL cluster in a temporary directory; stop it for sure.

    Usage::

        with PostgresServer() as server:
            url = server.create_database()   # postgresql+psycopg://hm@127.0.0.1:PORT/hm_1
    """

    def __init__(self, startup_timeout: float = 60.0) -> None:
        self.startup_timeout = startup_timeout
        self.port = 0
        self.bindir: Path | None = None
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._names = itertools.count(1)
        self._shared: str | None = None  # the URL of the database create_schema uses

    # --- lifecycle -------------------------------------------------------------------
    def start(self) -> PostgresServer:
        self.bindir = find_bindir()
        account = _run_as()
        # /tmp, not $TMPDIR: the account must reach the directory (a root-only TMPDIR
        # would not let it), and the socket path must stay under the kernel's 107 bytes
        self._dir = Path(tempfile.mkdtemp(prefix="hm-pg-", dir="/tmp" if os.path.isdir("/tmp")
                                          else None))
        as_user: dict[str, Any] = {}
        if account is not None:
            os.chown(self._dir, account.pw_uid, account.pw_gid)
            as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": [],
                       "env": {**os.environ, "HOME": str(self._dir), "USER": account.pw_name}}
        data = self._dir / "data"
        init = subprocess.run(
            [str(self.bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust",
             "-E", "UTF8", f"--locale={self._locale()}", "--no-sync", "--no-instructions"],
            cwd=self._dir, capture_output=True, text=True, timeout=120, **as_user)
        if init.returncode != 0:
            self.stop()
            raise RuntimeError(f"initdb failed ({init.returncode}):\n{init.stdout}{init.stderr}")
        log = self._dir / "server.log"
        for _ in range(3):  # a port picked free can be taken before the bind
            self.port = _free_port()
            args = [str(self.bindir / "postgres"), "-D", str(data), "-p", str(self.port),
                    "-c", "listen_addresses=127.0.0.1",
                    "-c", f"unix_socket_directories={self._dir}",
                    "-c", "fsync=off", "-c", "synchronous_commit=off",
                    "-c", "TimeZone=America/Los_Angeles",
                    "-c", "full_page_writes=off", "-c", "max_connections=300",
                    "-c", "shared_buffers=64MB", "-c", "log_min_messages=warning"]  # fmt: skip
            with log.open("ab") as out:
                self._proc = subprocess.Popen(args, cwd=self._dir, stdout=out,
                                              stderr=subprocess.STDOUT,
                                              preexec_fn=_die_with_parent, **as_user)
            if self._wait_ready():
                return self
        tail = self._tail(log)
        self.stop()
        raise RuntimeError(f"PostgreSQL did not start; last log lines:\n{tail}")

    @staticmethod
    def _locale() -> str:
        """C.UTF-8 where the system has it (Unicode-aware case mapping, as production
        clusters have), else C."""
        try:
            names = subprocess.run(["locale", "-a"], capture_output=True, text=True,
                                   timeout=10).stdout.split()
        except (OSError, subprocess.SubprocessError):
            return "C"
        return "C.UTF-8" if {"C.UTF-8", "C.utf8"} & set(names) else "C"

    def _wait_ready(self) -> bool:
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False  # exited (e.g. port taken): the caller retries on a new port
            with contextlib.suppress(Exception):
                with self.connect() as conn:
                    conn.execute("SELECT 1")
                return True
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        """Fast shutdown (SIGINT: disconnect clients, then stop), kill after 20 s;
        remove the cluster's files."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            import signal

            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- databases -------------------------------------------------------------------
    def connect(self, dbname: str = "postgres") -> Any:
        """An autocommit psycopg connection (administration: CREATE/DROP DATABASE)."""
        import psycopg  # the dev extra installs it; a missing driver fails the test

        return psycopg.connect(host="127.0.0.1", port=self.port, user=SUPERUSER,
                               dbname=dbname, autocommit=True, connect_timeout=5)

    def url(self, dbname: str, schema: str | None = None) -> str:
        """The SQLAlchemy URL of ``dbname`` through psycopg 3 (``schema`` first on the
        search path when given)."""
        url = f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"
        return f"{url}?options=-csearch_path%3D{schema}" if schema else url

    def create_schema(self) -> str:
        """A new, empty schema in the shared test database; returns the URL that
        works in it (see the module docstring)."""
        if self._shared is None:
            self._shared = self.create_database()
        name = f"t_{next(self._names)}"
        dbname = self._shared.rsplit("/", 1)[1]
        with self.connect(dbname) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return self.url(dbname, name)

    def drop_schema(self, url: str) -> None:
        """Drop the schema of ``url`` (made by ``create_schema``) with its tables."""
        dbname, _, schema = url.rsplit("/", 1)[1].partition("?options=-csearch_path%3D")
        with self.connect(dbname) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")

    def create_database(self) -> str:
        """A new, empty database with the ICU collation of the module docstring where
        the server has ICU (PostgreSQL 15+), else the cluster's; returns its URL. The
        pgvector extension is created in its ``public`` schema when the server has it
        (``scripts/system-deps.sh`` builds it): the per-test schemas then share one
        ``vector`` type, and dropping a schema never drops the extension."""
        name = f"hm_{os.getpid()}_{next(self._names)}"
        with self.connect() as conn:
            base = f'CREATE DATABASE "{name}" TEMPLATE template0'
            made = False
            if conn.info.server_version >= 150000:
                try:
                    conn.execute(f"{base} LOCALE_PROVIDER icu ICU_LOCALE 'en-US-u-ka-shifted'")
                    made = True
                except Exception:  # built without ICU: the cluster's collation
                    pass
            if not made:
                conn.execute(base)
        if self.has_pgvector():
            with self.connect(name) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        return self.url(name)

    def has_pgvector(self) -> bool:
        """Whether the server can create the ``vector`` extension (pgvector)."""
        with self.connect() as conn:
            row = conn.execute("SELECT 1 FROM pg_available_extensions "
                               "WHERE name = 'vector'").fetchone()
        return row is not None

    def drop_database(self, url: str) -> None:
        """Drop the database of ``url`` (made by ``create_database``), closing any
        connection a test left open on it."""
        name = url.rsplit("/", 1)[1].partition("?")[0]
        with self.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    @staticmethod
    def _tail(log: Path, lines: int = 20) -> str:
        try:
            return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


if __name__ == "__main__":  # manual check: python tests/postgres_server.py
    with PostgresServer() as srv:
        started = time.monotonic()
        print(srv.create_database(), file=sys.stderr)
        print(f"create_database: {time.monotonic() - started:.3f}s", file=sys.stderr)
