"""The info file ``hello-memory serve`` keeps in its data directory, and how the CLI
proves that the server it names is the one holding that directory (docs/CLI.md "The
CLI next to a server").

While a server runs on a data directory it keeps ``<data_dir>/server.json``: its
address, process id, start time and whether it holds the directory's embedded stores
(an embedded vector directory opens in one process only). The CLI reads it to run its
commands through that server instead of opening the stores itself
(:mod:`hello_memory.interfaces.remote`). The file is written atomically once the server listens
and removed when it exits cleanly; a file left by a server that died is *stale* and
ignored: its process is gone, or nothing listens at its address.

The file alone is not trusted (issue 28, item 2): whatever it names would receive the
API key and the text of every command. :func:`discover` sends nothing but a random
nonce until all of these hold:

- ``server.json`` is a regular file (not a symbolic link, opened with ``O_NOFOLLOW``),
  owned by the current user and not writable by group or others;
- its URL is ``http`` or ``https`` on a loopback address;
- its process is alive and the current user's, and (where ``/proc`` says) that process
  listens on the URL's port;
- the server answers the challenge ``GET /healthz/proof?nonce=N`` with
  HMAC-SHA256(token, N and its URL), where the token is a random secret ``serve``
  writes at start into ``<data_dir>/server.token`` (mode 0600, never sent anywhere):
  only a process that could read this directory's token file can answer.

Otherwise the reason is one line (:attr:`Discovery.refused`) and the CLI runs the
command in its own process, as it does for a stale file.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["INFO_NAME", "PROOF_PATH", "TOKEN_NAME", "Discovery", "ServerInfo",
           "client_host", "discover", "info_path", "install_proof", "live_server",
           "loopback_url", "pid_alive", "proof", "read_info", "remove_info",
           "remove_token", "server_answers", "token_path", "write_info", "write_token"]

INFO_NAME = "server.json"
TOKEN_NAME = "server.token"
PROOF_PATH = "/healthz/proof"
_MAX_FILE_BYTES = 64 * 1024  # server.json and the token are a few hundred bytes
_PROOF_CONTEXT = b"hello-memory server proof v1"


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


@dataclass(frozen=True)
class Discovery:
    """What :func:`discover` found: ``info``, the server proven to hold the directory
    (None when there is none); ``refused``, why a live-looking ``server.json`` was not
    trusted (empty when there was nothing to refuse: no file, or a stale one)."""

    info: ServerInfo | None = None
    refused: str = ""


class _Untrusted(Exception):
    """A reason not to trust the info file (becomes :attr:`Discovery.refused`)."""


def info_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / INFO_NAME


def token_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / TOKEN_NAME


def client_host(host: str) -> str:
    """The host a client on this machine dials for a server bound to ``host``: the
    loopback address of the same family for a wildcard bind; IPv6 in brackets."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def loopback_url(url: str) -> bool:
    """Whether ``url`` names this machine (then no proxy of the environment applies):
    ``localhost`` or a loopback address (an IPv4-mapped IPv6 one too)."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def write_private(path: Path, text: str) -> None:
    """Write ``path`` atomically (a temporary file in the same directory, mode 0600,
    then a rename), so a reader sees the old file, the new one or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_info(data_dir: str | os.PathLike[str], info: ServerInfo) -> Path:
    """Write ``server.json`` atomically (mode 0600)."""
    path = info_path(data_dir)
    write_private(path, json.dumps(asdict(info), indent=2) + "\n")
    return path


def _parse_info(raw: Any) -> ServerInfo:
    return ServerInfo(url=str(raw["url"]).rstrip("/"), pid=int(raw["pid"]),
                      started=str(raw.get("started", "")),
                      data_dir=str(raw.get("data_dir", "")),
                      exclusive=bool(raw.get("exclusive", True)),
                      version=str(raw.get("version", "")))


def read_info(data_dir: str | os.PathLike[str]) -> ServerInfo | None:
    """The info file's contents, unchecked (for messages; :func:`discover` decides
    whether to trust it); None when there is none or it cannot be read."""
    try:
        return _parse_info(json.loads(info_path(data_dir).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def remove_info(data_dir: str | os.PathLike[str], pid: int | None = None) -> None:
    """Remove the info file if it is this process's (``pid``, default ours): a newer
    server's file is left alone."""
    info = read_info(data_dir)
    if info is not None and info.pid == (os.getpid() if pid is None else pid):
        with contextlib.suppress(OSError):
            info_path(data_dir).unlink()


# --- the token and the proof ------------------------------------------------------------
def write_token(data_dir: str | os.PathLike[str], token: str | None = None) -> str:
    """``token`` (default: a fresh random one) in ``<data_dir>/server.token``, mode 0600;
    ``serve`` writes it once it holds the directory's stores, before ``server.json``."""
    token = token or secrets.token_hex(32)
    write_private(token_path(data_dir), token + "\n")
    return token


def remove_token(data_dir: str | os.PathLike[str], token: str) -> None:
    """Remove the token file if it still holds ``token`` (this server's)."""
    path = token_path(data_dir)
    with contextlib.suppress(OSError):
        if path.read_text(encoding="utf-8").strip() == token:
            path.unlink()


def proof(token: str, nonce: str, url: str) -> str:
    """The answer to a challenge: HMAC-SHA256 keyed by the token over the nonce and the
    server's own URL (the one in ``server.json``), so an answer is good for one
    challenge and one address only, and the token itself never crosses the wire."""
    message = b"\0".join((_PROOF_CONTEXT, nonce.encode("ascii"), url.encode("utf-8")))
    return hmac.new(token.encode("utf-8"), message, hashlib.sha256).hexdigest()


def install_proof(app: FastAPI, token: str, url: Callable[[], str]) -> None:
    """Add ``GET /healthz/proof?nonce=N`` to ``app`` (no key needed: it reveals nothing
    but an HMAC): ``{"proof": proof(token, N, url())}``; ``url`` gives the address the
    server wrote into ``server.json`` (known once it listens)."""
    from typing import Annotated

    from fastapi import Query

    def answer(nonce: str) -> dict[str, str]:
        return {"proof": proof(token, nonce, url())}

    # evaluated here, not as strings: this module postpones annotations
    answer.__annotations__ = {"nonce": Annotated[str, Query(
        min_length=32, max_length=128, pattern="^[0-9a-f]+$")], "return": dict[str, str]}
    app.add_api_route(PROOF_PATH, answer, methods=["GET"], include_in_schema=False)


# --- trusting a server.json ---------------------------------------------------------------
def _read_checked(path: Path, what: str, *, private: bool) -> str:
    """``path``'s text when it is a regular file (not a link), owned by this user and
    not writable by others (``private``: not readable by them either); FileNotFoundError
    when there is none; :class:`_Untrusted` otherwise."""
    flags = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
             | getattr(os, "O_CLOEXEC", 0))
    if not getattr(os, "O_NOFOLLOW", 0) and path.is_symlink():  # no O_NOFOLLOW here
        raise _Untrusted(f"{what} is a symbolic link")
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise FileNotFoundError(path) from None
        if exc.errno == errno.ELOOP:
            raise _Untrusted(f"{what} is a symbolic link") from None
        raise _Untrusted(f"{what} cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Untrusted(f"{what} is not a regular file")
        uid = _uid()
        if uid is not None and st.st_uid != uid:
            raise _Untrusted(f"{what} belongs to uid {st.st_uid}, not to this user "
                             f"(uid {uid})")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o022:
            raise _Untrusted(f"{what} is writable by group or others (mode {mode:04o})")
        if private and mode & 0o077:
            raise _Untrusted(f"{what} is readable by group or others (mode {mode:04o}; "
                             "serve writes it 0600)")
        data = os.read(fd, _MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > _MAX_FILE_BYTES:
        raise _Untrusted(f"{what} is larger than {_MAX_FILE_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Untrusted(f"{what} is not UTF-8") from None


def _uid() -> int | None:
    """This process's effective uid (None where the platform has none)."""
    geteuid = getattr(os, "geteuid", None)
    return int(geteuid()) if geteuid is not None else None


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


def _pid_owner(pid: int) -> int | None:
    """The uid of process ``pid`` (None where ``/proc`` does not say)."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _listening_inodes(port: int) -> set[str] | None:
    """The socket inodes listening on TCP ``port`` on this machine (None where
    ``/proc/net`` does not say)."""
    found: set[str] = set()
    seen = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        seen = True
        for line in lines:
            cols = line.split()
            # sl local_address rem_address st ... inode (column 9); st 0A: LISTEN
            if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                found.add(cols[9])
    return found if seen else None


def _pid_sockets(pid: int) -> set[str] | None:
    """The socket inodes process ``pid`` has open (None where ``/proc`` does not say)."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    inodes: set[str] = set()
    for name in names:
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{name}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


def _port_of(url: str) -> int:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def _challenge(url: str, token: str, timeout: float) -> bool | None:
    """Whether the server at ``url`` answers a fresh challenge with the proof for
    ``token``; None when nothing answers at all (a stale file). Nothing but the nonce
    is sent: no key, no content."""
    import httpx

    nonce = secrets.token_hex(16)
    try:
        response = httpx.get(f"{url}{PROOF_PATH}", params={"nonce": nonce}, timeout=timeout,
                             trust_env=False, follow_redirects=False)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    answer = body.get("proof") if isinstance(body, dict) else None
    return isinstance(answer, str) and hmac.compare_digest(answer, proof(token, nonce, url))


def _same_directory(named: str, data_dir: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(named, data_dir)
    except (OSError, ValueError):
        return False


def discover(data_dir: str | os.PathLike[str], timeout: float = 3.0) -> Discovery:
    """The server that holds ``data_dir`` now, proven as the module doc says; no file or
    a stale one is ``Discovery()``, an untrusted one says why in ``refused``."""
    path = info_path(data_dir)
    try:
        text = _read_checked(path, str(path), private=False)
        try:
            info = _parse_info(json.loads(text))
        except (ValueError, KeyError, TypeError, AttributeError):
            return Discovery()  # half-written or not ours to read: no server
        if not pid_alive(info.pid):
            return Discovery()  # stale: the process is gone
        from urllib.parse import urlsplit

        if urlsplit(info.url).scheme not in ("http", "https") or not loopback_url(info.url):
            raise _Untrusted(f"its URL {info.url!r} is not an http(s) address on this "
                             "machine (loopback); give --server URL to go through it")
        owner, uid = _pid_owner(info.pid), _uid()
        if owner is not None and uid is not None and owner != uid:
            raise _Untrusted(f"its process {info.pid} belongs to uid {owner}, not to this "
                             "user")
        listening = _listening_inodes(_port_of(info.url))
        if listening is not None and not listening:
            return Discovery()  # stale: nothing listens at the address
        sockets = _pid_sockets(info.pid)
        if listening and sockets is not None and not listening & sockets:
            raise _Untrusted(f"process {info.pid} does not listen at {info.url}")
        if info.data_dir and not _same_directory(info.data_dir, data_dir):
            raise _Untrusted(f"it names another data directory ({info.data_dir})")
        tokens = token_path(data_dir)
        try:
            token = _read_checked(tokens, str(tokens), private=True).strip()
        except FileNotFoundError:
            raise _Untrusted(f"there is no {tokens} to check the server against") from None
        if not token:
            raise _Untrusted(f"{tokens} is empty")
        answered = _challenge(info.url, token, timeout)
        if answered is None:
            return Discovery()  # stale: nothing answers at the address
        if not answered:
            raise _Untrusted(f"the server at {info.url} did not prove that it holds this "
                             f"data directory (no valid answer to {PROOF_PATH})")
        return Discovery(info)
    except FileNotFoundError:
        return Discovery()
    except _Untrusted as exc:
        return Discovery(refused=str(exc))


def live_server(data_dir: str | os.PathLike[str]) -> ServerInfo | None:
    """The server proven to hold ``data_dir`` now (:func:`discover`); None when there is
    none, its file is stale, or it could not prove itself."""
    return discover(data_dir).info


def server_answers(url: str, timeout: float = 3.0) -> bool:
    """Whether a hello-memory server answers ``GET /healthz`` at ``url`` (nothing else
    is sent)."""
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
