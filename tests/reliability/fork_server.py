"""The fork server of crash_worker.py, seen from a test: one child per trial, forked
from a process that loaded torch and the model once, SIGKILLed by the test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

__all__ = ["ForkServer"]

WORKER = Path(__file__).with_name("crash_worker.py")


class ForkServer:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        assert self._read() == "ready"

    def _read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"fork server exited with {self.proc.wait()}")
        return line.strip()

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def trial(self, spec: dict[str, Any], delay: float, after_open: bool) -> tuple[list[Any], bool]:
        """Run one child; SIGKILL it ``delay`` s after it opened its stores (or after
        the fork); returns its journal and whether the kill landed before it finished."""
        log = Path(spec["log"])
        pid = self.start(spec)
        if after_open:
            deadline = time.monotonic() + 120
            while '"open"' not in (log.read_text() if log.exists() else ""):
                failed = Path(spec["log"] + ".stderr")
                if failed.exists() and "trial failed" in failed.read_text():
                    break
                assert time.monotonic() < deadline, "child never opened its stores"
                time.sleep(0.005)
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)  # not reaped yet: the pid is still this child's
        status = self.reap()
        stderr = Path(spec["log"] + ".stderr")
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
            pytest.fail(f"trial child failed:\n{stderr.read_text()}")
        journal = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        return journal, os.WIFSIGNALED(status)

    def start(self, spec: dict[str, Any]) -> int:
        """Fork a child for ``spec`` and return its pid; :meth:`reap` it after killing."""
        self._send(json.dumps(spec))
        return int(self._read().split()[1])

    def reap(self) -> int:
        """The raw wait status of the child last started (after the test killed it)."""
        self._send("reap")
        return int(self._read().split()[1])

    def close(self) -> None:
        self._send("quit")
        self.proc.wait(timeout=30)
