"""API keys, namespace access and request size limits for the REST API.

A key grants a list of namespace patterns: an exact name, ``prefix/*`` (the prefix
and everything below it) or ``*``. Keys arrive as ``Authorization: Bearer KEY`` or
``X-API-Key: KEY``. Without a known key a request is refused, unless auth is
explicitly disabled AND the request comes from a loopback address.

An *admin* key is one granted ``*`` (every namespace): only it may list namespaces
and run or inspect the server's maintenance jobs (``/v1/namespaces``, ``/v1/jobs``).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from hello_memory.api.problems import AccessDenied, problem
from hello_memory.config import ApiSettings
from hello_memory.errors import ConfigError, InvalidInputError
from hello_memory.validation import require_namespace

__all__ = ["Access", "BodyLimit", "check_bind", "confine_path", "is_loopback",
           "namespace_allowed"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def namespace_allowed(namespace: str, patterns: Sequence[str]) -> bool:
    for pattern in patterns:
        if pattern == "*" or pattern == namespace:
            return True
        if pattern.endswith("/*"):
            prefix = pattern[:-2]
            if namespace == prefix or namespace.startswith(prefix + "/"):
                return True
    return False


class Access:
    """Checks one request's key against the namespace it asks for."""

    def __init__(self, settings: ApiSettings) -> None:
        self.keys: Mapping[str, list[str]] = dict(settings.api_keys)
        self.auth_disabled = settings.auth_disabled

    @staticmethod
    def key_of(headers: Mapping[str, str]) -> str | None:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip() or None
        return headers.get("x-api-key") or None

    def _patterns(self, key: str) -> list[str] | None:
        # Compare every key in constant time: do not reveal a prefix match by timing.
        found: list[str] | None = None
        for known, patterns in self.keys.items():
            if hmac.compare_digest(known.encode(), key.encode()):
                found = patterns
        return found

    def _granted(self, key: str | None, client_host: str | None) -> list[str] | None:
        """The key's namespace patterns; None when auth is disabled for this loopback
        client; :class:`AccessDenied` (401) without a known key."""
        if key is None:
            if self.auth_disabled and is_loopback(client_host):
                return None
            hint = ("auth is disabled only for loopback clients" if self.auth_disabled
                    else "send Authorization: Bearer <key> (keys: api.api_keys)")
            raise AccessDenied(401, f"no API key: {hint}")
        patterns = self._patterns(key)
        if patterns is None:
            raise AccessDenied(401, "unknown API key")
        return list(patterns)

    def check(self, namespace: str, key: str | None, client_host: str | None) -> str:
        """The namespace when this request may use it; else :class:`AccessDenied`."""
        ns = require_namespace(namespace)
        patterns = self._granted(key, client_host)
        if patterns is not None and not namespace_allowed(ns, patterns):
            raise AccessDenied(403, f"this API key may not use namespace {ns!r}")
        return ns

    def check_admin(self, key: str | None, client_host: str | None) -> None:
        """Pass for an admin key (one granted ``*``), else :class:`AccessDenied`."""
        patterns = self._granted(key, client_host)
        if patterns is not None and "*" not in patterns:
            raise AccessDenied(403, "this route needs an admin key (one granted '*' in "
                                    "api.api_keys)")


def confine_path(raw: str, read_dirs: Sequence[str]) -> Path:
    """``raw`` resolved (links followed), when it lies under one of ``read_dirs``: a
    remote caller (REST or MCP) names paths on this machine only inside those."""
    roots = [Path(d).resolve() for d in read_dirs]
    if not roots:
        raise InvalidInputError("this server reads no paths (api.read_dirs is empty); "
                                "upload the file or send the text instead")
    path = Path(raw).resolve()
    if not any(path == r or r in path.parents for r in roots):
        raise InvalidInputError(f"path {raw!r} is outside api.read_dirs")
    if not path.exists():
        raise InvalidInputError(f"path {raw!r} does not exist")
    return path


def check_bind(settings: ApiSettings, host: str) -> None:
    """Refuse to serve with auth disabled on a non-loopback address."""
    if settings.auth_disabled and not is_loopback(host):
        raise ConfigError(f"api.auth_disabled is only allowed on a loopback address; refusing "
                          f"to serve without keys on {host!r} (set api.api_keys instead)")


class BodyLimit:
    """ASGI middleware: 413 for a body over the limit (multipart uploads get the upload
    limit), whether announced by Content-Length or streamed in chunks."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, max_upload_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_upload_bytes = max_upload_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        multipart = headers.get("content-type", "").startswith("multipart/")
        limit = self.max_upload_bytes if multipart else self.max_bytes
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._reject(send, limit)
            return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._reject(send, limit)

    @staticmethod
    async def _reject(send: Send, limit: int) -> None:
        body = json.dumps(problem(413, "too-large", "Request too large",
                                  f"the request body exceeds {limit} bytes")).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/problem+json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass
