"""Dashboard sessions: an API key entered once, kept server-side behind a random
cookie (the key itself never goes back to the browser), with a CSRF token per session.

Sessions live in the server process: a restart logs everyone out. A session unused for
``idle_seconds`` ends; at most ``max_sessions`` are kept (the least recently used goes).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

__all__ = ["COOKIE", "Session", "Sessions"]

COOKIE = "hm_ui_session"


@dataclass
class Session:
    """One browser's login: the API key (None when auth is disabled for loopback)."""

    key: str | None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    seen: float = field(default_factory=time.monotonic)

    def csrf_ok(self, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(self.csrf.encode(), str(token).encode())


class Sessions:
    def __init__(self, *, idle_seconds: float = 8 * 3600, max_sessions: int = 1000) -> None:
        self.idle_seconds = idle_seconds
        self.max_sessions = max_sessions
        self._by_token: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def create(self, key: str | None) -> tuple[str, Session]:
        token = secrets.token_urlsafe(32)
        session = Session(key)
        with self._lock:
            self._by_token[token] = session
            while len(self._by_token) > self.max_sessions:
                self._by_token.popitem(last=False)
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
                del self._by_token[token]
                return None
            session.seen = now
            self._by_token.move_to_end(token)
            return session

    def drop(self, token: str | None) -> None:
        if token:
            with self._lock:
                self._by_token.pop(token, None)
