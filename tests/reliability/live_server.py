"""A live ``hello-memory serve`` subprocess for the hostile-input suite: start, stop,
restart with other settings, its RSS, and a content hash of everything it stored."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

KEY = "hostile-admin-key"
AUTH = {"Authorization": f"Bearer {KEY}"}

# Tables whose rows change on reads or bookkeeping, not on a write a request asked for.
_VOLATILE = {"hm_audit_log", "hm_schema_meta"}
# What a search records about its hits (access_count, last_access): written in the
# background after the search answered (stores/records/access.py), so an earlier
# search's accesses may land while a later request is checked for writing nothing.
_READ_BOOKKEEPING = {"access_count", "last_access"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """``hello-memory serve`` on ``data_dir``; ``env`` adds HELLO_MEMORY__* settings."""

    def __init__(self, data_dir: Path, env: Mapping[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.extra_env = dict(env or {})
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir.parent / f"{data_dir.name}-serve.log"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environ(self, **more: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HELLO_MEMORY")}
        env.update({"HELLO_MEMORY__API__API_KEYS": json.dumps({KEY: ["*"]}),
                    "HELLO_MEMORY_CONFIG": "", **self.extra_env, **more})
        return env

    def start(self, timeout: float = 180, **env: str) -> None:
        self.stop()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "hello_memory.interfaces.cli", "--data-dir",
                 str(self.data_dir), "serve", "--port", str(self.port)],
                env=self.environ(**env), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).json()["status"] == "ok":
                    return
            except (httpx.TransportError, ValueError):
                pass
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited {self.proc.returncode}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"serve did not start:\n{self.tail()}")
            time.sleep(0.3)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def rss_bytes(self) -> int:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers=AUTH, timeout=120, **kwargs)

    def store_hash(self) -> str:
        """SHA-256 over every row of every table of the record store (read-only, while
        the server runs), bookkeeping tables and the read bookkeeping columns left
        out."""
        db = self.data_dir / "records.db"
        if not db.exists():
            return "empty"
        digest = hashlib.sha256()
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            tables = [r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
            for table in tables:
                if table in _VOLATILE or table.startswith("sqlite_"):
                    continue
                columns = [c[1] for c in con.execute(f'PRAGMA table_info("{table}")')
                           if c[1] not in _READ_BOOKKEEPING]
                listed = ", ".join(f'"{c}"' for c in columns)
                rows = con.execute(f'SELECT {listed} FROM "{table}"').fetchall()
                digest.update(table.encode())
                for row in sorted(repr(r) for r in rows):
                    digest.update(row.encode("utf-8", "surrogatepass"))
        finally:
            con.close()
        return digest.hexdigest()
