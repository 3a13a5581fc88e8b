"""The FastAPI application: ``create_app(settings)`` or ``create_app(manager=...)``.

Every memory route takes a ``namespace`` query parameter, checked against the
caller's API key (:mod:`hello_memory.interfaces.rest.security`); a key granted exactly one
namespace (an exact name) may leave it out, any other must name one (400
``namespace-required``); errors are JSON problem
objects (:mod:`hello_memory.interfaces.rest.problems`); the OpenAPI schema is served at
``/openapi.json`` (interactive docs at ``/docs``). ``hello-memory serve`` runs it
with uvicorn, and with ``run_jobs=True``: the maintenance jobs of ``jobs.schedule`` then
run in a scheduler thread from startup to shutdown (:mod:`hello_memory.interfaces.scheduler`;
routes ``/v1/jobs`` and ``/v1/namespaces`` for an admin key, from the catalogue's admin
operations, :mod:`hello_memory.interfaces.catalogue.admin`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from hello_memory._version import __version__
from hello_memory.config import Settings, load_settings
from hello_memory.errors import HelloMemoryError

# the routes' dependencies and the app's managers (rest/deps.py), re-exported here
from hello_memory.interfaces.rest.deps import (
    Admin,
    Namespace,
    async_manager_of,
    manager_of,
    manager_of_app,
)
from hello_memory.interfaces.rest.deps import admin_dependency as admin_dependency
from hello_memory.interfaces.rest.deps import namespace_dependency as namespace_dependency
from hello_memory.interfaces.rest.problems import (
    AccessDenied,
    add_problem_responses,
    problem,
    problem_for,
)
from hello_memory.interfaces.rest.security import Access, BodyLimit, HostCheck, SearchAdmission

if TYPE_CHECKING:
    from hello_memory.interfaces.catalogue import Catalogue
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.memory.write_batching import CoalescingWriter

__all__ = ["API_MAX_WORKERS", "SEARCH_PATHS", "Admin", "Namespace", "async_manager_of",
           "create_app", "manager_of"]

# How many catalogue operations the app runs at once (its AsyncMemoryManager's pool;
# the rest wait their turn).
API_MAX_WORKERS = 8
# Admission control (issue 28, docs/RELIABILITY.md "Fair service under heavy queries"):
# by default (``api.searches_per_key``) at most 2 searches of one API key run at once;
# one more is a 429 with Retry-After, so one key holds at most a quarter of the pool.
# The routes that search (the work of one grows with its query: retrieval/bounds.py).
SEARCH_PATHS = frozenset({"/v1/search", "/v1/context", "/v1/documents/search", "/v1/ask",
                          "/v1/media/search", "/v1/media/search/file"})

PROBLEM_JSON = "application/problem+json"
def _problem_response(body: dict[str, Any], headers: dict[str, str] | None = None
                      ) -> JSONResponse:
    return JSONResponse(body, status_code=int(body["status"]), media_type=PROBLEM_JSON,
                        headers=headers)


def content_type_hint(request: Request, errs: list[dict[str, Any]]) -> str | None:
    """Why a body was not read: a JSON body sent without ``Content-Type:
    application/json`` (``curl -d`` sends a form type) is not parsed, and the route
    sees no JSON object; the hint says what to send."""
    if request.method not in ("POST", "PATCH", "PUT"):
        return None
    if not any(e["loc"][:1] == ["body"] for e in errs):
        return None
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json") or kind.startswith("multipart/"):
        return None
    sent = f"it was sent as {kind}" if kind else "it was sent without a Content-Type"
    return (f"the body is read as JSON only with Content-Type: application/json; {sent}: "
            "add -H 'Content-Type: application/json' to curl")


def create_app(settings: Settings | None = None, *, manager: MemoryManager | None = None,
               run_jobs: bool = False, catalogue: Catalogue | None = None,
               max_workers: int = API_MAX_WORKERS,
               searches_per_key: int | None = None) -> FastAPI:
    """The REST API over ``manager`` (opened from ``settings`` at startup and closed at
    shutdown when not given; a given manager stays the caller's to close). With
    ``run_jobs`` the jobs of ``settings.jobs.schedule`` run on their schedules while the
    app runs (its lifespan starts and stops them; nothing starts if it is empty).

    The routes are those of ``catalogue`` (default: every operation: memories,
    media, documents, admin);
    they run through an :class:`~hello_memory.interfaces.aio.AsyncMemoryManager` over the manager,
    at most ``max_workers`` at once, and at most ``searches_per_key`` searches of one
    API key (default ``api.searches_per_key``; 0: no limit; more are a 429,
    :class:`SearchAdmission`). The lifespan owns
    that facade: it closes its pool at shutdown (and the manager, when it opened it)."""
    from hello_memory.interfaces.aio import AsyncMemoryManager

    settings = settings or load_settings()
    owned = manager is None
    writer_for = _writer_factory(settings)
    lifespan = _lifespan(settings, owned=owned, run_jobs=run_jobs, max_workers=max_workers,
                         writer_for=writer_for)
    # /docs is Swagger UI from the package's own files (hello_memory.interfaces.ui, no CDN)
    app = FastAPI(title="hello-memory", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None,
                  description="Long-term memory for LLM agents: working, episodic, semantic "
                  "and perceptual memory, document RAG. Every call names its namespace.")
    app.state.manager = manager
    # A given manager serves at once, lifespan or not (an ASGI transport without one).
    app.state.amm = (AsyncMemoryManager(manager, max_workers=max_workers)
                     if manager is not None else None)
    app.state.writer = writer_for(manager) if manager is not None else None
    app.state.settings = settings
    app.state.access = Access(settings.api)
    app.state.rag = None
    from hello_memory.interfaces.scheduler import JobScheduler

    app.state.jobs = JobScheduler(lambda: manager_of_app(app), settings.jobs)
    _add_problem_handlers(app)
    _add_routes(app, settings, catalogue)
    _add_middleware(app, settings, searches_per_key)
    _add_problems_to_openapi(app)
    return app


def _writer_factory(settings: Settings) -> Callable[[MemoryManager], CoalescingWriter | None]:
    """What builds the app's writer for a manager (``create_app``'s part)."""
    from hello_memory.memory.write_batching import CoalescingWriter

    # concurrent adds stored together (api.write_batching; memory/write_batching.py)
    def writer_for(mm: MemoryManager) -> CoalescingWriter | None:
        return (CoalescingWriter(mm, embed=mm.embed)
                if settings.api.write_batching else None)

    return writer_for


def _lifespan(settings: Settings, *, owned: bool, run_jobs: bool, max_workers: int,
              writer_for: Callable[[MemoryManager], CoalescingWriter | None]
              ) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan (``create_app``'s part): it opens what the app was not given,
    starts the jobs with ``run_jobs``, and closes all of it at shutdown (the manager
    only when ``owned``: the app opened it)."""
    from hello_memory.interfaces.aio import AsyncMemoryManager

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if app.state.manager is None:
            from hello_memory.memory.manager import MemoryManager

            app.state.manager = MemoryManager.open(settings)
        if app.state.amm is None:
            app.state.amm = AsyncMemoryManager(app.state.manager, max_workers=max_workers)
        if app.state.writer is None:
            app.state.writer = writer_for(app.state.manager)
        try:
            if run_jobs:
                app.state.jobs.start()
            yield
        finally:
            # let a running job finish (off the event loop), wait for the operations in
            # flight (the pool), then close the manager
            await run_in_threadpool(app.state.jobs.shutdown)
            if app.state.amm is not None:
                await app.state.amm.close()
                app.state.amm = None
            if app.state.writer is not None:  # after the calls in flight: none queue now
                await run_in_threadpool(app.state.writer.close)
                app.state.writer = None
            if owned and app.state.manager is not None:
                app.state.manager.close()
                app.state.manager = None

    return lifespan


def _add_problem_handlers(app: FastAPI) -> None:
    """Every error of the API as a JSON problem (``create_app``'s part)."""

    @app.exception_handler(HelloMemoryError)
    async def _hm_error(request: Request, exc: HelloMemoryError) -> JSONResponse:
        return _problem_response(problem_for(exc))

    @app.exception_handler(AccessDenied)
    async def _denied(request: Request, exc: AccessDenied) -> JSONResponse:
        title = "Unauthorized" if exc.status == 401 else "Forbidden"
        slug = "unauthorized" if exc.status == 401 else "forbidden"
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return _problem_response(problem(exc.status, slug, title, exc.detail,
                                         error="AccessDenied"), headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Routing's own errors (an unknown route, a method a route does not take) as
        # problems too, like every other error of the API.
        known = {404: ("not-found", "Not found"), 405: ("method-not-allowed",
                                                         "Method not allowed")}
        slug, title = known.get(exc.status_code, ("http-error", "HTTP error"))
        detail = ("no such route: " + request.url.path if exc.status_code == 404
                  and exc.detail == "Not Found" else str(exc.detail))
        error = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
        return _problem_response(problem(exc.status_code, slug, title, detail, error=error),
                                 dict(exc.headers) if exc.headers else None)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errs = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors()]
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errs)
        extra: dict[str, Any] = {}
        hint = content_type_hint(request, errs)
        if hint:
            detail = f"{detail} ({hint})"
            extra["hint"] = hint
        return _problem_response(problem(422, "validation", "Invalid request", detail,
                                         error="RequestValidationError", errors=errs,
                                         **extra))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # A bug, still as a problem (logged with its traceback by the server); the
        # connection stays usable.
        import logging

        logging.getLogger("hello_memory.api").error("unhandled error on %s %s",
                                                    request.method, request.url.path,
                                                    exc_info=exc)
        return _problem_response(problem(500, "internal", "Internal error",
                                         f"{type(exc).__name__} (see the server log)",
                                         error=type(exc).__name__))


def _add_routes(app: FastAPI, settings: Settings, catalogue: Catalogue | None) -> None:
    """/healthz, the catalogue's routes, the UI and the metrics (``create_app``'s part)."""

    @app.get("/healthz", tags=["meta"])
    def healthz() -> dict[str, Any]:
        """Liveness: the server answers and its memory manager is open."""
        return {"status": "ok" if app.state.manager is not None else "starting",
                "version": __version__}

    from hello_memory.interfaces.rest import routes

    app.include_router(routes.build_router(catalogue))  # memories, media, documents, admin
    from hello_memory.interfaces.ui import mount as mount_ui

    mount_ui(app)  # /docs and the /ui dashboard (same keys and namespace grants)
    if settings.observability.metrics:
        from hello_memory.interfaces.rest.metrics import install_metrics

        install_metrics(app, Admin)


def _add_middleware(app: FastAPI, settings: Settings, searches_per_key: int | None) -> None:
    """The middleware around every route (``create_app``'s part): each one added runs
    before those added earlier."""
    # before a search takes a worker: one key's searches in flight are bounded
    app.add_middleware(SearchAdmission, paths=SEARCH_PATHS,
                       per_key=(settings.api.searches_per_key if searches_per_key is None
                                else searches_per_key))
    app.add_middleware(BodyLimit, max_bytes=settings.api.max_request_bytes,
                       max_upload_bytes=settings.api.max_upload_bytes)
    # outermost: the Host check runs before anything else, for every route (/docs too)
    app.add_middleware(HostCheck, allowed_hosts=settings.api.allowed_hosts)


def _add_problems_to_openapi(app: FastAPI) -> None:
    """The OpenAPI schema names the problem responses too (``create_app``'s part)."""
    plain_openapi = app.openapi

    def openapi_with_problems() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = add_problem_responses(plain_openapi())
        return app.openapi_schema

    app.openapi = openapi_with_problems  # type: ignore[method-assign]
