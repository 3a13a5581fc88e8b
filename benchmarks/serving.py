"""A real ``hello-memory serve`` started from a checkout, for the benchmarks that measure
through it (:mod:`benchmarks.drift`, :mod:`benchmarks.startup`,
:mod:`benchmarks.serve_load`, :mod:`benchmarks.serve_ab`, :mod:`benchmarks.pgvector`)."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

__all__ = ["free_port", "server_stack", "start_serve"]


def server_stack(without: Sequence[str] = ()) -> str:
    """What uvicorn serves with in this interpreter, which :func:`start_serve` runs the
    server in: its C parser and event loop (httptools, uvloop: the ``server`` extra
    installs both) where installed and not in ``without`` (modules a server is started
    without, benchmarks/serve_ab.py), else h11 and asyncio's loop."""
    import uvicorn

    def present(name: str) -> bool:
        return name not in without and importlib.util.find_spec(name) is not None

    loop = "uvloop" if present("uvloop") else "asyncio's loop"
    http = "httptools" if present("httptools") else "h11"
    return f"uvicorn {uvicorn.__version__} on {loop} and {http}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serve(src: Path, data: Path, port: int, env: dict[str, str], *,
                timeout: float = 180.0, poll: float = 0.2) -> subprocess.Popen[bytes]:
    """``hello-memory serve`` of checkout ``src`` on ``data`` at ``127.0.0.1:port``,
    returned once ``/healthz`` answers 200 (checked every ``poll`` seconds); a
    RuntimeError when it exits first or does not answer within ``timeout``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hello_memory.interfaces.cli", "--data-dir", str(data), "serve",
         "--host", "127.0.0.1", "--port", str(port)],
        cwd=src, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve from {src} exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(poll)
    proc.kill()
    proc.wait(timeout=60)
    raise RuntimeError(f"serve from {src} did not answer /healthz within {timeout:.0f} s")
