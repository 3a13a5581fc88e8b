"""The info file ``hello-memory serve`` keeps in its data directory (README "The CLI
next to a server").

While a server runs on a data directory it keeps ``<data_dir>/server.json``: its
address, process id, start time and whether it holds the directory's embedded stores
(an embedded vector directory opens in one process only). The CLI reads it to run its
commands through that server instead of opening the stores itself
(:mod:`hello_memory.remote`). The file is written atomically once the server listens
and removed when it exits cleanly; a file left by a server that died is *stale* and
ignored: its process is gone, or nothing answers at its address.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["INFO_NAME", "ServerInfo", "client_host", "info_path", "live_server",
           "loopback_url", "pid_alive", "read_info", "remove_info", "server_answers",
           "write_info"]

INFO_NAME = "server.json"


@dataclass(frozen=True)
class ServerInfo:
    """What ``server.json`` says: the server's base ``url`` (a loopback address when it
    listens on every interface), ``pid``, ``started`` (ISO 8601, UTC), its ``data_dir``
    and whether it holds the directory's embedded stores (``exclusive``)."""

    url: str
    pid: int
    started: str
    data_dir: str
    exclusive: bool
    version: str = ""

    def describe(self) -> str:
        return f"hello-memory serve at {self.url} (pid {self.pid})"


def info_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / INFO_NAME


def client_host(host: str) -> str:
    """The host a client on this machine dials for a server bound to ``host``: the
    loopback address of the same family for a wildcard bind; IPv6 in brackets."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def loopback_url(url: str) -> bool:
    """Whether ``url`` names this machine (then no proxy of the environment applies)."""
    import ipaddress
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def write_info(data_dir: str | os.PathLike[str], info: ServerInfo) -> Path:
    """Write ``server.json`` atomically (a temporary file in the same directory, then
    a rename), so a reader sees the old file, the new one or none, never half of one."""
    path = info_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".server.", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(asdict(info), fh, indent=2)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def read_info(data_dir: str | os.PathLike[str]) -> ServerInfo | None:
    """The info file's contents; None when there is none or it cannot be read."""
    try:
        raw: Any = json.loads(info_path(data_dir).read_text(encoding="utf-8"))
        return ServerInfo(url=str(raw["url"]).rstrip("/"), pid=int(raw["pid"]),
                          started=str(raw.get("started", "")),
                          data_dir=str(raw.get("data_dir", "")),
                          exclusive=bool(raw.get("exclusive", True)),
                          version=str(raw.get("version", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_info(data_dir: str | os.PathLike[str], pid: int | None = None) -> None:
    """Remove the info file if it is this process's (``pid``, default ours): a newer
    server's file is left alone."""
    info = read_info(data_dir)
    if info is not None and info.pid == (os.getpid() if pid is None else pid):
        with contextlib.suppress(OSError):
            info_path(data_dir).unlink()


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    except OSError:
        return False
    return True


def server_answers(url: str, timeout: float = 3.0) -> bool:
    """Whether a hello-memory server answers ``GET /healthz`` at ``url``."""
    import httpx

    try:
        response = httpx.get(f"{url}/healthz", timeout=timeout,
                             trust_env=not loopback_url(url))
    except httpx.HTTPError:
        return False
    if response.status_code != 200:
        return False
    try:
        return isinstance(response.json(), dict) and "status" in response.json()
    except ValueError:
        return False


def live_server(data_dir: str | os.PathLike[str]) -> ServerInfo | None:
    """The server that runs on ``data_dir`` now, from its info file; None when there is
    no file or it is stale (the process is gone, or nothing answers at the address)."""
    info = read_info(data_dir)
    if info is None or not pid_alive(info.pid) or not server_answers(info.url):
        return None
    return info
