"""The plumbing every route of the ``/ui`` dashboard shares: the security headers
(``CSP``), ``script_json``, who is looking (:class:`Viewer`, ``viewer_of`` and the
``ViewerDep`` / ``NamespaceQ`` parameters), page rendering and URLs, the session
cookie and the CSRF check, and the error pages (``HtmlErrors``, ``_error``).

:mod:`hello_memory.interfaces.ui.web` holds the routes and ``build_ui`` and re-exports every name
defined here.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hello_memory._version import __version__
from hello_memory.errors import HelloMemoryError
from hello_memory.interfaces.rest.problems import AccessDenied
from hello_memory.interfaces.rest.security import Access, namespace_allowed
from hello_memory.interfaces.ui import pages as P
from hello_memory.interfaces.ui.sessions import COOKIE, Session, Sessions

logger = logging.getLogger("hello_memory.ui")
# Pages load only the package's own scripts and styles, on every page, the graph's
# included: no inline script, no inline style (issue 28, item 6). The graph library
# draws on a canvas and sets element styles through the DOM (CSSOM), which this policy
# allows; the one <style> element it would add is supplied as a file (graph.html).
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
       "form-action 'self'")
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Frame-Options": "DENY",
                    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                    "Cache-Control": "no-store"}

# JSON inside <script type="application/json"> ends at the first "</script": every <, >
# and & is written as a JSON escape, and so are U+2028 / U+2029, so no value can close
# the element or open another (docs/RELIABILITY.md "The inspector").
_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
                   0x2028: "\\u2028", 0x2029: "\\u2029"}


def script_json(value: Any) -> Markup:
    """``value`` as JSON that is safe inside a ``<script type="application/json">``
    element: ``JSON.parse`` of the element's text gives ``value`` back."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return Markup(text.translate(_SCRIPT_ESCAPES))  # noqa: S704 - escaped above


class LoginRequired(Exception):
    """No valid dashboard session: the browser is sent to the login page."""


class BadForm(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass
class Viewer:
    """Who is looking: the session and the namespace patterns its key grants (None:
    auth is disabled for this loopback client, every namespace)."""

    token: str
    session: Session
    patterns: list[str] | None
    host: str | None
    access: Access

    @property
    def admin(self) -> bool:
        return self.patterns is None or "*" in self.patterns

    @property
    def anonymous(self) -> bool:
        return self.session.key is None

    def may(self, namespace: str) -> bool:
        return self.patterns is None or namespace_allowed(namespace, self.patterns)

    def namespace(self, namespace: str) -> str:
        """``namespace`` if this key may use it, else AccessDenied (403)."""
        return self.access.check(namespace, self.session.key, self.host)

    def require_admin(self) -> None:
        self.access.check_admin(self.session.key, self.host)


def _parent(request: Request) -> FastAPI:
    parent: FastAPI = request.app.state.parent
    return parent


def _base(request: Request) -> str:
    """The dashboard's URL prefix (``/ui`` behind whatever root path the app has)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def _host(request: Request) -> str | None:
    return request.client.host if request.client else None


def _manager(request: Request) -> Any:
    from hello_memory.interfaces.rest.deps import manager_of_app

    return manager_of_app(_parent(request))


def viewer_of(request: Request) -> Viewer:
    sessions: Sessions = request.app.state.sessions
    token = request.cookies.get(COOKIE)
    session = sessions.get(token)
    if session is None or token is None:
        raise LoginRequired
    access: Access = _parent(request).state.access
    host = _host(request)
    try:
        patterns = access._granted(session.key, host)
    except AccessDenied:  # the key is no longer known, or auth no longer disabled
        sessions.drop(token)
        raise LoginRequired from None
    return Viewer(token, session, patterns, host, access)


ViewerDep = Annotated[Viewer, Depends(viewer_of)]
NamespaceQ = Annotated[str, Query(min_length=1, max_length=512)]


def _check_csrf(viewer: Viewer, token: str | None) -> None:
    if not viewer.session.csrf_ok(token):
        raise BadForm(403, "this form is stale or did not come from the dashboard; reload "
                           "the page and try again")


def render(request: Request, template: str, viewer: Viewer | None, *, status: int = 200,
           namespace: str | None = None, headers: dict[str, str] | None = None,
           **context: Any) -> Response:
    base = _base(request)
    names: list[str] = []
    if viewer is not None:
        try:
            names = P.visible_namespaces(_manager(request), viewer)
        except HelloMemoryError:
            names = []
    ctx = {"base": base, "viewer": viewer, "namespace": namespace, "namespaces": names,
           "csrf": viewer.session.csrf if viewer else "", "version": __version__,
           "path": request.url.path, "url": _url_builder(base),
           "docs_url": base.rsplit("/ui", 1)[0] + "/docs", **context}
    templates: Jinja2Templates = request.app.state.templates
    return templates.TemplateResponse(request, template, ctx, status_code=status,
                                      headers={**SECURITY_HEADERS, **(headers or {})})


def _url_builder(base: str) -> Any:
    def url(page: str, **params: Any) -> str:
        query = urlencode([(k, v) for k, v in params.items() if v not in (None, "")],
                          doseq=True)
        return f"{base}/{page.lstrip('/')}" + (f"?{query}" if query else "")

    return url


def _redirect(request: Request, page: str, **params: Any) -> RedirectResponse:
    return RedirectResponse(_url_builder(_base(request))(page, **params), status_code=303)


def _safe_next(request: Request, target: str | None) -> str:
    base = _base(request)
    if target and target.startswith(base + "/") and not target.startswith("//") \
            and "\\" not in target:
        return target
    return base + "/"


def _set_cookie(request: Request, response: Response, token: str) -> None:
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path=_base(request) + "/")


def _error(request: Request, status: int, title: str, detail: str) -> Response:
    try:
        viewer: Viewer | None = viewer_of(request)
    except LoginRequired:
        viewer = None
    ns = request.query_params.get("namespace")
    if viewer is not None and ns and not viewer.may(ns):
        ns = None
    return render(request, "error.html", viewer, status=status, title=title, detail=detail,
                  namespace=ns if ns else None)


def _failure(exc: Exception) -> tuple[int, str, str]:
    """Status, title and detail for an exception no handler took. A date past year
    9999 or before year 1 and input nested past Python's recursion limit come from the
    request: 400. Anything else is a bug: 500, logged with its traceback."""
    if isinstance(exc, OverflowError):
        return 400, "Invalid request", "a date or number in the request is out of range"
    if isinstance(exc, RecursionError):
        return 400, "Invalid request", "the request is nested too deeply"
    return 500, "Internal error", f"{type(exc).__name__} (see the server log)"


class HtmlErrors:
    """Every error of the dashboard is an HTML page with a status, never Starlette's
    plain-text 500 nor a dropped connection (issue 28, item 9): an exception no
    handler took is rendered here, inside the app's server-error middleware, so it is
    not raised on to the parent app and the server (which would close the
    connection)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started:
                raise
            status, title, detail = _failure(exc)
            log = logger.error if status >= 500 else logger.info
            log("dashboard %s %s: %s", scope.get("method"), scope.get("path"),
                type(exc).__name__, exc_info=exc if status >= 500 else None)
            request = Request(scope, receive)
            try:
                response = _error(request, status, title, detail)
            except Exception:  # noqa: BLE001 - the page itself failed: the bare page
                logger.exception("dashboard error page failed")
                response = HTMLResponse(
                    f"<!doctype html><title>{escape(title)}</title><h1>{escape(title)}</h1>"
                    f"<p>{escape(detail)}</p>", status_code=status, headers=SECURITY_HEADERS)
            await response(scope, receive, send)
