"""The ``/ui`` dashboard: server-rendered pages over the REST app's memory manager.

A sub-application mounted at ``/ui`` by :func:`hello_memory.interfaces.ui.mount`; it reads the
parent app's state (the open :class:`MemoryManager`, the :class:`Access` rules built
from ``api.api_keys``, the job scheduler), so the same keys grant the same namespaces
here as on the REST API. Every page is thin over the facade: search is
``MemoryManager.search`` (the one engine; the dashboard ranks nothing itself), edits
are ``update`` / ``forget_ids`` / ``restore`` / ``remove``, jobs are the scheduler's
``run``. What each page computes lives in :mod:`hello_memory.interfaces.ui.pages`.

This module holds the routes and :func:`build_ui`; the plumbing they share (the
security headers, ``script_json``, the :class:`Viewer`, rendering, URLs, cookies, the
CSRF check and the error pages) lives in ``hello_memory/interfaces/ui/_web_base.py``, and every
name defined there can be imported from here as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Form, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException as StarletteHTTPException

from hello_memory.errors import HelloMemoryError, InvalidInputError
from hello_memory.interfaces.rest.problems import AccessDenied, status_for
from hello_memory.interfaces.rest.security import Access, is_loopback
from hello_memory.interfaces.ui import pages as P
from hello_memory.interfaces.ui._web_base import (
    _SCRIPT_ESCAPES as _SCRIPT_ESCAPES,
)
from hello_memory.interfaces.ui._web_base import (
    CSP,
    BadForm,
    HtmlErrors,
    LoginRequired,
    NamespaceQ,
    ViewerDep,
    _base,
    _check_csrf,
    _error,
    _host,
    _manager,
    _parent,
    _redirect,
    _safe_next,
    _set_cookie,
    _url_builder,
    render,
    script_json,
)
from hello_memory.interfaces.ui._web_base import (
    SECURITY_HEADERS as SECURITY_HEADERS,
)
from hello_memory.interfaces.ui._web_base import (
    Viewer as Viewer,
)
from hello_memory.interfaces.ui._web_base import (
    _failure as _failure,
)
from hello_memory.interfaces.ui._web_base import (
    logger as logger,
)
from hello_memory.interfaces.ui._web_base import (
    viewer_of as viewer_of,
)
from hello_memory.interfaces.ui.paths import STATIC_DIR
from hello_memory.interfaces.ui.sessions import (
    COOKIE,
    LOGIN_COOKIE,
    LoginForms,
    LoginThrottle,
    Sessions,
)

__all__ = ["CSP", "build_ui", "script_json"]

TEMPLATES = Path(__file__).parent / "templates"
router = APIRouter()


# --- login -----------------------------------------------------------------------------
def _login_form(request: Request, *, status: int = 200, next: str = "",  # noqa: A002
                error: str | None = None, headers: dict[str, str] | None = None
                ) -> Response:
    """The sign-in form with its CSRF token, and the nonce cookie the token is bound
    to (kept when the browser has one, so two tabs both work)."""
    forms: LoginForms = request.app.state.login_forms
    nonce = request.cookies.get(LOGIN_COOKIE) or ""
    if not (16 <= len(nonce) <= 64 and nonce.isascii()):
        nonce = forms.new_nonce()
    response = render(request, "login.html", None, status=status, next=next, error=error,
                      login_csrf=forms.token(nonce), headers=headers)
    response.set_cookie(LOGIN_COOKIE, nonce, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path=_base(request) + "/")
    return response


@router.get("/login")
def login_page(request: Request, next: str | None = None) -> Response:  # noqa: A002
    access: Access = _parent(request).state.access
    if access.auth_disabled and is_loopback(_host(request)):
        sessions: Sessions = request.app.state.sessions
        token, _ = sessions.create(None)
        response = RedirectResponse(_safe_next(request, next), status_code=303)
        _set_cookie(request, response, token)
        return response
    return _login_form(request, next=next or "")


@router.post("/login")
def login(request: Request, key: Annotated[str, Form(max_length=4096)] = "",
          next: Annotated[str, Form(max_length=4096)] = "",  # noqa: A002
          csrf: Annotated[str, Form(max_length=256)] = "") -> Response:
    # Login CSRF: only the form this server gave this browser signs it in; a post from
    # another site brings neither the SameSite=Strict nonce cookie nor its token.
    forms: LoginForms = request.app.state.login_forms
    if request.headers.get("sec-fetch-site") == "cross-site" or not forms.valid(
            request.cookies.get(LOGIN_COOKIE), csrf):
        return _login_form(request, status=403, next=next, error=(
            "this sign-in form is stale or did not come from this server; sign in again"))
    # Back-off per client after failed keys: refused before the key is even looked at.
    throttle: LoginThrottle = request.app.state.login_throttle
    host = _host(request)
    wait = throttle.retry_after(host)
    if wait:
        return _login_form(request, status=429, next=next, headers={"Retry-After": str(wait)},
                           error=f"too many failed sign-ins from this address; try again "
                                 f"in {wait} s")
    access: Access = _parent(request).state.access
    key = key.strip()
    try:
        if not key:
            raise AccessDenied(401, "enter an API key")
        access._granted(key, host)
    except AccessDenied as exc:
        if key:
            throttle.failed(host)
        return _login_form(request, status=401, next=next, error=exc.detail)
    sessions: Sessions = request.app.state.sessions
    token, _ = sessions.create(key)
    response = RedirectResponse(_safe_next(request, next), status_code=303)
    _set_cookie(request, response, token)
    return response


@router.post("/logout")
def logout(request: Request, viewer: ViewerDep,
           csrf: Annotated[str, Form()] = "") -> Response:
    _check_csrf(viewer, csrf)
    sessions: Sessions = request.app.state.sessions
    sessions.drop(viewer.token)
    response = _redirect(request, "login")
    response.delete_cookie(COOKIE, path=_base(request) + "/")
    return response


# --- namespaces ------------------------------------------------------------------------
@router.get("/")
def home(request: Request, viewer: ViewerDep) -> Response:
    mm = _manager(request)
    rows = P.namespace_overview(mm, viewer)
    return render(request, "namespaces.html", viewer, rows=rows)


@router.get("/go")
def go(request: Request, viewer: ViewerDep, namespace: NamespaceQ,
       page: str = "search") -> Response:
    """The namespace picker's target: the same page for another namespace."""
    ns = viewer.namespace(namespace)
    if page not in P.NAMESPACE_PAGES:
        page = "search"
    return _redirect(request, page, namespace=ns)


# --- search ----------------------------------------------------------------------------
@router.get("/search")
def search(request: Request, viewer: ViewerDep, namespace: NamespaceQ,
           q: Annotated[str, Query(max_length=4000)] = "",
           type: Annotated[list[str] | None, Query()] = None,  # noqa: A002
           since: str = "", until: str = "", session: str = "",
           min_importance: str = "", top_k: Annotated[int, Query(ge=1, le=100)] = 10,
           recipe: str = "hybrid") -> Response:
    ns = viewer.namespace(namespace)
    form = {"q": q, "types": type or [], "since": since, "until": until,
            "session": session, "min_importance": min_importance, "top_k": top_k,
            "recipe": recipe}
    result = P.run_search(_manager(request), ns, form) if q.strip() else None
    return render(request, "search.html", viewer, namespace=ns, form=form, result=result,
                  types=P.SEARCH_TYPES, recipes=P.recipe_names())


# --- one memory ------------------------------------------------------------------------
@router.get("/memories/{memory_id}")
def memory(request: Request, viewer: ViewerDep, memory_id: str, namespace: NamespaceQ,
           done: str = "") -> Response:
    ns = viewer.namespace(namespace)
    page = P.memory_page(_manager(request), ns, memory_id)
    return render(request, "memory.html", viewer, namespace=ns, m=page, done=done,
                  error=None)


@router.post("/memories/{memory_id}/edit")
def edit_memory(request: Request, viewer: ViewerDep, memory_id: str, namespace: NamespaceQ,
                csrf: Annotated[str, Form()] = "",
                importance: Annotated[str, Form(max_length=64)] = "",
                metadata: Annotated[str, Form(max_length=200_000)] = "") -> Response:
    ns = viewer.namespace(namespace)
    _check_csrf(viewer, csrf)
    mm = _manager(request)
    try:
        changes = P.parse_edit(importance, metadata, mm.limits)
        mm.update(memory_id, namespace=ns, **changes)
    except InvalidInputError as exc:
        page = P.memory_page(mm, ns, memory_id)
        return render(request, "memory.html", viewer, status=400, namespace=ns, m=page,
                      done="", error=str(exc))
    return _redirect(request, f"memories/{quote(memory_id, safe='')}", namespace=ns,
                     done="saved")


ACTIONS = {
    "forget": ("Forget this memory?", "It leaves search but stays stored; Restore "
               "brings it back.", "Forget"),
    "restore": ("Restore this memory?", "It comes back into search.", "Restore"),
    "delete": ("Delete this memory for good?", "Its record, vector and graph links are "
               "removed from every store. This cannot be undone.", "Delete for good"),
}


@router.post("/memories/{memory_id}/{action}")
def memory_action(request: Request, viewer: ViewerDep, memory_id: str, action: str,
                  namespace: NamespaceQ, csrf: Annotated[str, Form()] = "",
                  confirm: Annotated[str, Form()] = "") -> Response:
    ns = viewer.namespace(namespace)
    _check_csrf(viewer, csrf)
    if action not in ACTIONS:
        raise StarletteHTTPException(404, f"no action {action!r}")
    mm = _manager(request)
    item = mm.get(memory_id, namespace=ns)  # 404 before asking anything
    if confirm != "yes":
        title, text, button = ACTIONS[action]
        return render(request, "confirm.html", viewer, namespace=ns, title=title, text=text,
                      button=button, danger=action == "delete",
                      action=f"memories/{quote(memory_id, safe='')}/{action}",
                      params={"namespace": ns}, fields={},
                      back=_url_builder(_base(request))(
                          f"memories/{quote(memory_id, safe='')}", namespace=ns),
                      subject=item.content)
    page = f"memories/{quote(memory_id, safe='')}"
    if action == "forget":
        mm.forget_ids([memory_id], namespace=ns)
        if item.memory_type.value == "working":  # dropped, not kept as forgotten
            return _redirect(request, "timeline", namespace=ns, done="forgotten")
        return _redirect(request, page, namespace=ns, done="forgotten")
    if action == "restore":
        mm.restore([memory_id], namespace=ns)
        return _redirect(request, page, namespace=ns, done="restored")
    mm.remove(memory_id, namespace=ns)
    return _redirect(request, "timeline", namespace=ns, done="deleted")


# --- timeline and graph ------------------------------------------------------------------
@router.get("/timeline")
def timeline(request: Request, viewer: ViewerDep, namespace: NamespaceQ,
             zoom: str = "day", session: str = "", done: str = "") -> Response:
    ns = viewer.namespace(namespace)
    if zoom not in P.ZOOMS:
        zoom = "day"
    data = P.timeline(_manager(request), ns, zoom, session or None)
    return render(request, "timeline.html", viewer, namespace=ns, zoom=zoom,
                  zooms=P.ZOOMS, session=session, t=data, done=done)


@router.get("/graph")
def graph(request: Request, viewer: ViewerDep, namespace: NamespaceQ,
          entity: Annotated[str, Query(max_length=500)] = "") -> Response:
    ns = viewer.namespace(namespace)
    base = _base(request)
    data = P.graph(_manager(request), ns, entity.strip() or None,
                   lambda name: _url_builder(base)("graph", namespace=ns, entity=name))
    return render(request, "graph.html", viewer, namespace=ns, entity=entity, g=data)


# --- documents -------------------------------------------------------------------------
def _rag(request: Request) -> Any:
    from hello_memory.interfaces.rest.documents import pipeline_of

    return pipeline_of(_parent(request))()  # the REST document routes' one pipeline


@router.get("/documents")
def documents(request: Request, viewer: ViewerDep, namespace: NamespaceQ,
              done: str = "") -> Response:
    ns = viewer.namespace(namespace)
    data = P.documents(_manager(request), ns)
    return render(request, "documents.html", viewer, namespace=ns, d=data, done=done)


@router.get("/documents/{document_id}")
def document(request: Request, viewer: ViewerDep, document_id: str,
             namespace: NamespaceQ) -> Response:
    ns = viewer.namespace(namespace)
    data = P.document(_manager(request), ns, document_id)
    return render(request, "document.html", viewer, namespace=ns, doc=data)


@router.post("/documents/{document_id}/delete")
def delete_document(request: Request, viewer: ViewerDep, document_id: str,
                    namespace: NamespaceQ, csrf: Annotated[str, Form()] = "",
                    confirm: Annotated[str, Form()] = "") -> Response:
    ns = viewer.namespace(namespace)
    _check_csrf(viewer, csrf)
    data = P.document(_manager(request), ns, document_id)  # 404 before asking
    if confirm != "yes":
        page = f"documents/{quote(document_id, safe='')}"
        return render(request, "confirm.html", viewer, namespace=ns,
                      title="Delete this document?",
                      text=f"The document and its {len(data['chunks'])} chunks leave the "
                           "namespace's index. Ingest the file again to bring it back.",
                      button="Delete document", danger=True, action=page + "/delete",
                      params={"namespace": ns}, fields={},
                      back=_url_builder(_base(request))(page, namespace=ns),
                      subject=data["name"])
    _rag(request).delete_document(document_id, namespace=ns)
    return _redirect(request, "documents", namespace=ns, done="deleted")


# --- jobs ------------------------------------------------------------------------------
@router.get("/jobs")
def jobs(request: Request, viewer: ViewerDep) -> Response:
    viewer.require_admin()
    scheduler = _parent(request).state.jobs
    return render(request, "jobs.html", viewer, jobs=P.job_rows(scheduler),
                  scheduler_running=scheduler.running, result=None)


@router.post("/jobs/{name}")
def run_job(request: Request, viewer: ViewerDep, name: str,
            csrf: Annotated[str, Form()] = "", job_namespace: Annotated[str, Form()] = "",
            all_namespaces: Annotated[str, Form()] = "",
            dry_run: Annotated[str, Form()] = "", confirm: Annotated[str, Form()] = ""
            ) -> Response:
    viewer.require_admin()
    _check_csrf(viewer, csrf)
    scheduler = _parent(request).state.jobs
    fields = {"job_namespace": job_namespace, "all_namespaces": all_namespaces,
              "dry_run": dry_run}
    if not dry_run and confirm != "yes":
        where = ("every namespace" if all_namespaces else
                 (f"namespace {job_namespace!r}" if job_namespace else "the whole store"))
        return render(request, "confirm.html", viewer, title=f"Run {name} now?",
                      text=f"This runs {name} for real over {where}, not as a dry run.",
                      button=f"Run {name}", danger=True, action=f"jobs/{quote(name)}",
                      params={}, fields=fields, back=_url_builder(_base(request))("jobs"),
                      subject=None)
    namespaces = [job_namespace.strip()] if job_namespace.strip() and not all_namespaces \
        else []
    runs = scheduler.run(name, namespaces=namespaces, all_namespaces=bool(all_namespaces),
                         dry_run=bool(dry_run))
    result = {"job": name, "runs": [r.as_dict() for r in runs]}
    return render(request, "jobs.html", viewer, jobs=P.job_rows(scheduler),
                  scheduler_running=scheduler.running, result=result)


# --- the application -------------------------------------------------------------------
def build_ui(parent: FastAPI) -> FastAPI:
    """The dashboard app, to be mounted at ``/ui`` of ``parent`` (the REST app)."""
    ui = FastAPI(openapi_url=None, docs_url=None, redoc_url=None, title="hello-memory ui")
    ui.state.parent = parent
    ui.state.sessions = Sessions()
    ui.state.login_forms = LoginForms()
    ui.state.login_throttle = LoginThrottle()
    templates = Jinja2Templates(directory=str(TEMPLATES))
    templates.env.filters["when"] = P.when
    templates.env.filters["pretty"] = P.pretty
    templates.env.filters["short"] = P.short
    templates.env.filters["script_json"] = script_json
    templates.env.globals["PAGES"] = P.NAMESPACE_PAGES
    ui.state.templates = templates
    ui.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")
    ui.include_router(router)
    ui.add_middleware(HtmlErrors)

    @ui.exception_handler(LoginRequired)
    async def _login(request: Request, exc: LoginRequired) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        if request.method != "GET":
            target = _base(request) + "/"
        return _redirect(request, "login", next=target)

    @ui.exception_handler(AccessDenied)
    async def _denied(request: Request, exc: AccessDenied) -> Response:
        title = "Not signed in" if exc.status == 401 else "Not allowed"
        return _error(request, exc.status, title, exc.detail)

    @ui.exception_handler(BadForm)
    async def _bad_form(request: Request, exc: BadForm) -> Response:
        return _error(request, exc.status, "Form refused", exc.detail)

    @ui.exception_handler(HelloMemoryError)
    async def _hm(request: Request, exc: HelloMemoryError) -> Response:
        status, _, title = status_for(exc)
        return _error(request, status, title, str(exc))

    @ui.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        title = {404: "Not found", 405: "Method not allowed"}.get(exc.status_code, "Error")
        detail = ("no such page: " + request.url.path
                  if exc.status_code == 404 and exc.detail == "Not Found" else str(exc.detail))
        return _error(request, exc.status_code, title, detail)

    @ui.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        errs = "; ".join(f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg', '')}"
                         for e in exc.errors())
        return _error(request, 422, "Invalid request", errs)

    return ui

