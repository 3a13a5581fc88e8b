"""The CLI trusts no file (issue 28, item 2; README "The CLI next to a server").

A real HTTP server on 127.0.0.1 stands in for whatever a forged or stale
``server.json`` points at: it answers ``/healthz`` like hello-memory, answers the
challenge with a made-up proof, answers every other request with a made-up result,
and records every request it gets. Whatever the forgery (a symbolic link, a file
writable by others, a token readable by others, no token, an address that is not
loopback, a process that does not listen there, another data directory, or simply a
server that does not know the token), the CLI sends it no key and no content, says
in one line why it did not use it, and runs the command in its own process. A key
goes to a ``--server`` URL only over HTTPS or to loopback, unless
``--allow-insecure-key``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hello_memory.errors import ConfigError
from hello_memory.interfaces.remote import ServerClient
from hello_memory.server_info import (
    Discovery,
    ServerInfo,
    discover,
    info_path,
    token_path,
    write_info,
    write_token,
)

SECRET_KEY = "sekrit-admin-key-0123456789"
SECRET_TEXT = "my private diary entry about the orchid"
SECRET_QUERY = "which orchid did I write about"
INJECTED_TOTAL = 4242  # what the fake server claims as the namespace's total


class Recorder(BaseHTTPRequestHandler):
    """Answers like a hello-memory server would, and records each request."""

    seen: list[dict[str, Any]]

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        self.server.seen.append({"method": self.command, "path": self.path,  # type: ignore[attr-defined]
                                 "headers": dict(self.headers), "body": body})
        if self.path.startswith("/healthz/proof"):
            data: dict[str, Any] = {"proof": "0" * 64}
        elif self.path.startswith("/healthz"):
            data = {"status": "ok", "version": "0"}
        else:  # an injected result: stats, search, add
            data = {"namespace": "default", "total": INJECTED_TOTAL, "hits": [],
                    "recipe": "hybrid", "id": "injected", "content": "injected"}
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:  # quiet
        pass


@pytest.fixture
def fake() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    httpd.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def url_of(httpd: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}"


def seen(httpd: ThreadingHTTPServer) -> list[dict[str, Any]]:
    return list(httpd.seen)  # type: ignore[attr-defined]


def leaked(httpd: ThreadingHTTPServer) -> list[dict[str, Any]]:
    """The requests that carried a key or any content, or asked for anything but the
    challenge."""
    out = []
    for r in seen(httpd):
        text = json.dumps(r).lower()
        if (SECRET_KEY.lower() in text or "orchid" in text or "authorization" in text
                or "x-api-key" in text or not r["path"].startswith("/healthz/proof")):
            out.append(r)
    return out


def forge(data: Path, url: str, *, pid: int | None = None, data_dir: Path | None = None,
          token: bool = True) -> Path:
    """A server.json as a server would write it (mode 0600, ours) naming ``url``, and
    a token file the fake server does not know."""
    data.mkdir(parents=True, exist_ok=True)
    if token:
        write_token(data)
    return write_info(data, ServerInfo(
        url=url, pid=os.getpid() if pid is None else pid, started="2026-01-01T00:00:00+00:00",
        data_dir=str((data_dir or data).resolve()), exclusive=True))


def run_cli(data: Path, *args: str, key: str | None = SECRET_KEY) -> Any:
    from hello_memory.interfaces.cli import app

    env: dict[str, str | None] = {"HELLO_MEMORY_CONFIG": "", "HELLO_MEMORY_SERVER": None,
                                  "HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules",
                                  "HELLO_MEMORY_API_KEY": key}
    return CliRunner().invoke(app, ["--data-dir", str(data), *args], env=env)


def warning_lines(result: Any) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("warning:")]


@pytest.mark.slow  # add and search load the embedding model here
def test_a_server_that_cannot_answer_the_challenge_gets_no_key_and_no_content(
        tmp_path: Path, fake: ThreadingHTTPServer) -> None:
    """The issue's case: a well-formed server.json, our own, with a live pid (this
    process, which does listen at the address) and a server that answers /healthz,
    but does not know the directory's token."""
    data = tmp_path / "data"
    forge(data, url_of(fake))
    assert discover(data).info is None
    for args in (["stats", "--json"], ["add", SECRET_TEXT, "--json"],
                 ["search", SECRET_QUERY, "--json"], ["stats", "--json"]):
        result = run_cli(data, *args)
        assert result.exit_code == 0, (args, result.stdout, result.stderr)
        [line] = warning_lines(result)
        assert "did not prove that it holds this data directory" in line, line
        assert str(info_path(data)) in line
    # it ran here: the memory added is in this directory, nothing was injected
    assert json.loads(result.stdout)["total"] == 1
    assert seen(fake), "the challenge was never sent"
    assert leaked(fake) == []


@pytest.mark.parametrize("forgery, reason", [
    ("symlink", "is a symbolic link"),
    ("writable", "is writable by group or others"),
    ("token-readable", "readable by group or others"),
    ("token-symlink", "is a symbolic link"),
    ("no-token", "server.token to check the server against"),
    ("not-loopback", "is not an http(s) address on this machine"),
    ("not-listening", "does not listen at"),
    ("other-directory", "names another data directory"),
])
def test_a_forged_server_json_gets_nothing(tmp_path: Path, fake: ThreadingHTTPServer,
                                           forgery: str, reason: str) -> None:
    data = tmp_path / "data"
    url = url_of(fake)
    sleeper = None
    if forgery == "symlink":  # a good-looking file elsewhere, linked in
        elsewhere = tmp_path / "elsewhere"
        forge(elsewhere, url, data_dir=data)
        write_token(data)
        info_path(data).symlink_to(info_path(elsewhere))
    elif forgery == "writable":
        forge(data, url).chmod(0o666)
    elif forgery == "token-readable":  # what a cloned repository's checkout looks like
        forge(data, url)
        token_path(data).chmod(0o644)
    elif forgery == "token-symlink":
        forge(data, url, token=False)
        write_token(tmp_path)
        token_path(data).symlink_to(token_path(tmp_path))
    elif forgery == "no-token":
        forge(data, url, token=False)
    elif forgery == "not-loopback":  # the fake's port, on an address that is not ours
        forge(data, f"http://192.0.2.1:{fake.server_address[1]}")
    elif forgery == "not-listening":  # a live process of ours that listens nowhere
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        forge(data, url, pid=sleeper.pid)
    elif forgery == "other-directory":
        other = tmp_path / "other"
        other.mkdir()
        forge(data, url, data_dir=other)
    try:
        found = discover(data)
        assert found.info is None and reason in found.refused, found
        result = run_cli(data, "stats", "--json")
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
    assert result.exit_code == 0, (result.stdout, result.stderr)
    [line] = warning_lines(result)
    assert reason in line and "running in this process" in line, line
    assert json.loads(result.stdout)["total"] == 0  # the local store, nothing injected
    assert seen(fake) == []  # not even the challenge: the file failed before it


def test_a_stale_file_is_ignored_silently(tmp_path: Path) -> None:
    """A server that died: its process is gone (or nothing listens at its address):
    no warning, the command runs here."""
    from .conftest import free_port

    data = tmp_path / "data"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for pid in (dead.pid, os.getpid()):
        forge(data, f"http://127.0.0.1:{free_port()}", pid=pid)
        assert discover(data) == Discovery()  # no server, nothing refused
        result = run_cli(data, "stats", "--json")
        assert result.exit_code == 0 and warning_lines(result) == [], result.stderr


def test_a_key_goes_only_over_https_or_to_loopback(tmp_path: Path,
                                                   fake: ThreadingHTTPServer) -> None:
    data = tmp_path / "data"
    # plain http to another machine with a key: refused before anything is sent
    result = run_cli(data, "--server", "http://192.0.2.1:9", "stats")
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.stderr
    assert "refusing to send the API key" in lines[0] and "--allow-insecure-key" in lines[0]
    assert not data.exists()  # and nothing opened here either
    with pytest.raises(ConfigError, match="plain text"):
        ServerClient("http://192.0.2.1:9", api_key=SECRET_KEY)
    with pytest.raises(ConfigError, match="not an http"):
        ServerClient("file:///etc/passwd", api_key=SECRET_KEY)
    # https elsewhere, no key, or the explicit flag: allowed (built, nothing sent yet)
    for client in (ServerClient("https://192.0.2.1:9", api_key=SECRET_KEY),
                   ServerClient("http://192.0.2.1:9"),
                   ServerClient("http://192.0.2.1:9", api_key=SECRET_KEY,
                                allow_insecure_key=True)):
        client.close()
    # loopback over plain http is this machine: the key the user chose goes there
    for host in ("127.0.0.1", "localhost", "[::ffff:127.0.0.1]"):
        ServerClient(f"http://{host}:9", api_key=SECRET_KEY).close()
    result = run_cli(data, "--server", url_of(fake), "stats", "--json")
    assert result.exit_code == 0, result.stderr
    assert [r["headers"].get("Authorization") for r in seen(fake)] == [
        f"Bearer {SECRET_KEY}"]
