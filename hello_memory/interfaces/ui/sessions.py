"""Dashboard sessions: an API key entered once, kept server-side behind a random
cookie (the key itself never goes back to the browser), with a CSRF token per session;
the sign-in form's own CSRF token; and the back-off after failed sign-ins.

Sessions live in the server process: a restart logs everyone out. A session unused for
``idle_seconds`` ends. Each key holds at most ``max_per_key`` sessions (its least
recently used goes), and when all keys together hold ``max_sessions`` the least
recently used session of the key holding the most goes: signing in over and over with
one key never signs another key out (issue 28, item 9; docs/RELIABILITY.md "The
inspector").
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import secrets
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

__all__ = ["COOKIE", "LOGIN_COOKIE", "LoginForms", "LoginThrottle", "Session", "Sessions"]

COOKIE = "hm_ui_session"
LOGIN_COOKIE = "hm_ui_login"


@dataclass
class Session:
    """One browser's login: the API key (None when auth is disabled for loopback)."""

    key: str | None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    seen: float = field(default_factory=time.monotonic)

    def csrf_ok(self, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(self.csrf.encode(), str(token).encode())


def _key_id(key: str | None) -> str:
    """Which key a session belongs to, without keeping a second copy of the key."""
    return "" if key is None else hashlib.sha256(key.encode("utf-8", "surrogatepass")
                                                 ).hexdigest()


class Sessions:
    def __init__(self, *, idle_seconds: float = 8 * 3600, max_sessions: int = 1000,
                 max_per_key: int = 20) -> None:
        self.idle_seconds = idle_seconds
        self.max_sessions = max_sessions
        self.max_per_key = max_per_key
        self._by_token: dict[str, Session] = {}
        # per key, its sessions' tokens, least recently used first
        self._by_key: dict[str, OrderedDict[str, None]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._by_token)

    def create(self, key: str | None) -> tuple[str, Session]:
        token = secrets.token_urlsafe(32)
        session = Session(key)
        with self._lock:
            own = self._by_key.setdefault(_key_id(key), OrderedDict())
            while len(own) >= self.max_per_key:
                self._by_token.pop(own.popitem(last=False)[0], None)
            self._by_token[token] = session
            own[token] = None
            while len(self._by_token) > self.max_sessions:
                heaviest = max(self._by_key.values(), key=len)
                self._by_token.pop(heaviest.popitem(last=False)[0], None)
        return token, session

    def get(self, token: str | None) -> Session | None:
        if not token:
            return None
        now = time.monotonic()
        with self._lock:
            session = self._by_token.get(token)
            if session is None:
                return None
            if now - session.seen > self.idle_seconds:
                self._forget(token)
                return None
            session.seen = now
            self._by_key[_key_id(session.key)].move_to_end(token)
            return session

    def drop(self, token: str | None) -> None:
        if token:
            with self._lock:
                self._forget(token)

    def _forget(self, token: str) -> None:
        """Remove a session from both indexes (the lock held)."""
        session = self._by_token.pop(token, None)
        if session is None:
            return
        kid = _key_id(session.key)
        own = self._by_key.get(kid)
        if own is not None:
            own.pop(token, None)
            if not own:
                del self._by_key[kid]


class LoginForms:
    """The sign-in form's CSRF token (login CSRF: a foreign page must not sign a
    browser in with the attacker's key). The browser gets a random nonce in a
    ``SameSite=Strict`` cookie with the form, and the form carries an HMAC of that
    nonce under a secret of this process: a cross-site post brings neither the cookie
    nor a token that matches one."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)

    @staticmethod
    def new_nonce() -> str:
        return secrets.token_urlsafe(24)

    def token(self, nonce: str) -> str:
        return hmac.new(self._secret, nonce.encode("utf-8", "surrogatepass"),
                        hashlib.sha256).hexdigest()

    def valid(self, nonce: str | None, token: str | None) -> bool:
        if not nonce or not token:
            return False
        return hmac.compare_digest(self.token(nonce).encode(),
                                   str(token).encode("utf-8", "surrogatepass"))


def client_bucket(host: str | None) -> str:
    """Who failed a sign-in: the client's IP address, an IPv6 client by its /64 (one
    host usually holds a whole /64, so counting single addresses would not hold it)."""
    if not host:
        return "?"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:100]
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


class LoginThrottle:
    """Back-off after failed sign-ins: a client (IP address, IPv6 /64) with
    ``max_failures`` failures within ``window_seconds`` is refused (HTTP 429 with
    Retry-After) until the oldest of them is ``window_seconds`` old; its attempts in
    that time are not tried. A successful sign-in does not wipe the count (a valid key
    must not buy more guesses). At most ``max_clients`` clients are tracked, the least
    recently failed forgotten first, so the tracker's memory is bounded."""

    def __init__(self, *, max_failures: int = 5, window_seconds: float = 300.0,
                 max_clients: int = 10_000) -> None:
        self.max_failures = max_failures
        self.window_seconds = window_seconds
        self.max_clients = max_clients
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._failures)

    def retry_after(self, host: str | None) -> int:
        """Seconds until ``host`` may try again; 0 when it may now."""
        now = time.monotonic()
        with self._lock:
            times = self._failures.get(client_bucket(host))
            if times is None or len(times) < self.max_failures:
                return 0
            wait = times[0] + self.window_seconds - now
            return max(0, math.ceil(wait))

    def failed(self, host: str | None) -> None:
        bucket = client_bucket(host)
        with self._lock:
            times = self._failures.pop(bucket, None)
            if times is None:
                times = deque(maxlen=self.max_failures)
            times.append(time.monotonic())
            self._failures[bucket] = times  # now the most recent
            while len(self._failures) > self.max_clients:
                self._failures.popitem(last=False)
