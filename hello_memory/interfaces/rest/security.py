"""API keys, namespace access and request size limits for the REST API.

A key grants a list of namespace patterns: an exact name, ``prefix/*`` (the prefix
and everything below it) or ``*``. Keys arrive as ``Authorization: Bearer KEY`` or
``X-API-Key: KEY``. Without a known key a request is refused, unless auth is
explicitly disabled AND the request comes from a loopback address.

An *admin* key is one granted ``*`` (every namespace): only it may list namespaces
and run or inspect the server's maintenance jobs (``/v1/namespaces``, ``/v1/jobs``).

A key granted exactly one namespace (one exact name, no pattern) may leave the
``namespace`` out: that one is used (:func:`single_namespace`, the same rule as the MCP
server's default namespace). Any other key must name one (400 ``namespace-required``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import html
import ipaddress
import json
import logging
import re
import threading
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any

from hello_memory.config import ApiSettings
from hello_memory.errors import ConfigError, NamespaceRequiredError
from hello_memory.interfaces.rest.problems import AccessDenied, problem
from hello_memory.validation import require_namespace

__all__ = ["Access", "BodyLimit", "HostCheck", "SearchAdmission", "check_bind",
           "host_allowed", "is_loopback", "namespace_allowed", "safe_upload_name",
           "single_namespace"]

_log = logging.getLogger("hello_memory.api")
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


def single_namespace(grants: Sequence[str]) -> str | None:
    """The namespace of grants that hold exactly one (one exact name, no pattern): the
    default where a call names none (REST and MCP); else None (every call names one)."""
    if len(grants) == 1 and "*" not in grants[0]:
        return grants[0]
    return None


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

    def check(self, namespace: str | None, key: str | None, client_host: str | None
              ) -> str:
        """The namespace when this request may use it; else :class:`AccessDenied`.
        ``namespace`` None (left out): the key's one granted namespace, or
        NamespaceRequiredError when the key grants several, a pattern or (auth
        disabled) nothing in particular."""
        if namespace is None:
            return self.default_namespace(key, client_host)
        ns = require_namespace(namespace)
        patterns = self._granted(key, client_host)
        if patterns is not None and not namespace_allowed(ns, patterns):
            raise AccessDenied(403, f"this API key may not use namespace {ns!r}")
        return ns

    def default_namespace(self, key: str | None, client_host: str | None) -> str:
        """The namespace a request that names none acts in: its key's only grant (an
        exact name); else NamespaceRequiredError saying why. The key is checked first
        (401 before 400)."""
        patterns = self._granted(key, client_host)
        if patterns is None:
            raise NamespaceRequiredError(
                "namespace is required: auth is disabled, so no API key names a default "
                "namespace; add ?namespace=NAME")
        only = single_namespace(patterns)
        if only is None:
            granted = ", ".join(repr(p) for p in patterns) or "none"
            raise NamespaceRequiredError(
                "namespace is required: this API key grants more than one namespace "
                f"({granted}); add ?namespace=NAME (a key granted exactly one name may "
                "leave it out)")
        return require_namespace(only)

    def check_admin(self, key: str | None, client_host: str | None) -> None:
        """Pass for an admin key (one granted ``*``), else :class:`AccessDenied`."""
        patterns = self._granted(key, client_host)
        if patterns is not None and "*" not in patterns:
            raise AccessDenied(403, "this route needs an admin key (one granted '*' in "
                                    "api.api_keys)")


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,10}$")


def safe_upload_name(filename: str | None) -> str:
    """A file name to keep an upload under: ASCII letters, digits, ``._-`` only, at
    most ~110 bytes (a file system allows 255), and the extension of the name given
    (``会议记录.md`` becomes ``upload.md``, not ``md``), lower-cased."""
    base = re.split(r"[\\/]", filename or "")[-1]
    match = _SUFFIX.search(base)
    suffix = match.group(0).lower() if match else ""
    stem = base[: match.start()] if match else base
    stem = _UNSAFE_NAME.sub("_", stem).strip("._")[:100] or "upload"
    return stem + suffix


def check_bind(settings: ApiSettings, host: str) -> None:
    """Refuse to serve with auth disabled on a non-loopback address."""
    if settings.auth_disabled and not is_loopback(host):
        raise ConfigError(f"api.auth_disabled is only allowed on a loopback address; refusing "
                          f"to serve without keys on {host!r} (set api.api_keys instead)")


def _host_name(header: str) -> str:
    """The name of a Host header, lower case, without port and brackets."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header[1:]
    if header.count(":") == 1:
        return header.rsplit(":", 1)[0]
    return header


_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def host_allowed(header: str | None, server_host: str | None,
                 allowed_hosts: Sequence[str]) -> bool:
    """Whether a request whose ``Host`` is ``header`` may be answered by a server
    listening on ``server_host`` (the address the connection arrived on): that address,
    a name of ``allowed_hosts`` ("*": any), and the loopback names (localhost,
    127.0.0.1, ::1: a rebinding page sends its own domain, never these; and a port
    published by Docker arrives on the container's address while the client says
    localhost)."""
    if header is None:  # HTTP/1.0 without Host: no browser sends that
        return True
    name = _host_name(header)
    allowed = {h.strip().lower() for h in allowed_hosts}
    if "*" in allowed or name in allowed:
        return True
    bound = _host_name(server_host) if server_host else ""
    if name and name == bound:
        return True
    return name in _LOOPBACK_NAMES


class HostCheck:
    """ASGI middleware: 403 for a request whose ``Host`` names neither the address the
    server is bound to, a loopback name, nor one of ``api.allowed_hosts`` (DNS
    rebinding: a web page whose domain resolves to 127.0.0.1 sends its own name).
    Applies to every route, auth or not."""

    def __init__(self, app: ASGIApp, *, allowed_hosts: Sequence[str]) -> None:
        self.app = app
        self.allowed_hosts = list(allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers", [])
                       if k.lower() == b"host"), None)
        server = scope.get("server")
        if host_allowed(header, server[0] if server else None, self.allowed_hosts):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send_problem(scope, send, problem(
            403, "host-not-allowed", "Host not allowed",
            f"this server does not answer for Host {header!r}; add the name to "
            "api.allowed_hosts if it is yours", error="HostNotAllowed"))


async def send_problem(scope: Scope, send: Send, body: dict[str, Any]) -> None:
    """Answer a problem from a middleware: JSON (``application/problem+json``), or for the
    inspector's pages (``/ui``) a small HTML page, every value escaped (docs/RELIABILITY.md:
    every UI error is an HTML page)."""
    if str(scope.get("path", "")).startswith("/ui"):
        title, detail = html.escape(str(body["title"])), html.escape(str(body["detail"]))
        data = (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title>"
                f"</head><body><h1>{body['status']} {title}</h1><p>{detail}</p></body></html>"
                ).encode()
        kind = b"text/html; charset=utf-8"
    else:
        data, kind = json.dumps(body).encode(), b"application/problem+json"
    await send({"type": "http.response.start", "status": int(body["status"]),
                "headers": [(b"content-type", kind),
                            (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


class BodyLimit:
    """ASGI middleware: 413 for a body over the limit (multipart uploads get the upload
    limit), whether announced by Content-Length or streamed in chunks.

    The body is read here, whole, before the route runs (so a streamed body over the
    limit is a 413, not a parse error); then the connection is watched: when the client
    goes away, :data:`hello_memory.rag.safe_parse.client_gone` is set, and a document
    parse running for this request is stopped."""

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
            await self._reject(send, limit, scope)
            return
        whole = await self._read(scope, receive, send, limit)
        if whole is None:
            return
        await self._run_watched(scope, receive, send, whole)

    async def _read(self, scope: Scope, receive: Receive, send: Send, limit: int
                    ) -> bytes | None:
        """The request's whole body (``__call__``'s part); None when there is nobody to
        answer, or when the body ran over ``limit`` (answered here with a 413)."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None  # nobody to answer
            if message["type"] != "http.request":
                continue
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                await self._reject(send, limit, scope)
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def _run_watched(self, scope: Scope, receive: Receive, send: Send, whole: bytes
                           ) -> None:
        """Run the app on the body read, while the connection is watched (``__call__``'s
        part): a client that goes away sets ``client_gone``, and a bug below is answered
        with a 500 problem while no response has started."""
        from hello_memory.rag.safe_parse import client_gone

        gone = threading.Event()
        gone_async = asyncio.Event()
        body: bytes | None = whole

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone.set()
                    gone_async.set()
                    return

        async def replay() -> Message:
            nonlocal body
            if body is not None:
                data, body = body, None
                return {"type": "http.request", "body": data, "more_body": False}
            await gone_async.wait()
            return {"type": "http.disconnect"}

        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        watcher = asyncio.ensure_future(watch())
        token = client_gone.set(gone)
        try:
            await self.app(scope, replay, tracking_send)
        except Exception as exc:
            # A bug below: answer a problem here instead of letting it reach the server,
            # which would close the connection (a keep-alive client loses it).
            _log.error("unhandled error on %s %s", scope.get("method"), scope.get("path"),
                       exc_info=exc)
            if started:
                raise
            body = json.dumps(problem(500, "internal", "Internal error",
                                      f"{type(exc).__name__} (see the server log)",
                                      error=type(exc).__name__)).encode()
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"application/problem+json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
        finally:
            client_gone.reset(token)
            watcher.cancel()
            with contextlib.suppress(BaseException):
                await watcher

    @staticmethod
    async def _reject(send: Send, limit: int, scope: Scope | None = None) -> None:
        await send_problem(scope or {}, send, problem(
            413, "too-large", "Request too large", f"the request body exceeds {limit} bytes",
            error="PayloadTooLargeError"))



class SearchAdmission:
    """ASGI middleware: at most ``per_key`` searches of one API key in flight at once
    (issue 28, item 10; docs/RELIABILITY.md "Fair service under heavy queries").

    A search is a request to one of ``paths`` (POST: memory search, context, document
    search, ask, media search). One more from a key that already has ``per_key``
    running is answered at once with 429 ``too-many-searches`` and ``Retry-After``,
    before it takes a worker of the operation pool: one client's heavy queries then
    hold at most ``per_key`` of the pool's workers (``API_MAX_WORKERS``) and cannot
    make another tenant's small request wait for all of them. The key is the one the
    request presents (``Authorization: Bearer`` or ``X-API-Key``); an unknown key is
    counted like any other and refused by the route (401) as before. A request with no
    key is not counted: it is refused (401) before it takes a worker, or auth is
    disabled, which only a loopback client gets: one local user, no tenants to keep
    apart. Counts live on the event loop (no lock) and an entry is dropped when its
    key has nothing in flight."""

    def __init__(self, app: ASGIApp, *, paths: frozenset[str], per_key: int,
                 retry_after_s: int = 1) -> None:
        self.app = app
        self.paths = paths
        self.per_key = per_key
        self.retry_after_s = retry_after_s
        self.in_flight: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or self.per_key <= 0 or scope.get("method") != "POST"
                or scope.get("path") not in self.paths):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        who = Access.key_of(headers)
        if who is None:
            await self.app(scope, receive, send)
            return
        running = self.in_flight.get(who, 0)
        if running >= self.per_key:
            body = json.dumps(problem(
                429, "too-many-searches", "Too many searches in flight",
                f"this API key already has {running} searches running (at most "
                f"{self.per_key} at once); retry after {self.retry_after_s} s",
                error="TooManyRequests")).encode()
            await send({"type": "http.response.start", "status": 429,
                        "headers": [(b"content-type", b"application/problem+json"),
                                    (b"retry-after", str(self.retry_after_s).encode()),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        self.in_flight[who] = running + 1
        try:
            await self.app(scope, receive, send)
        finally:
            left = self.in_flight.get(who, 1) - 1
            if left > 0:
                self.in_flight[who] = left
            else:
                self.in_flight.pop(who, None)
