"""``GET /metrics``: the server's Prometheus metrics (docs/OBSERVABILITY.md).

Request counts and latency by route template (``/v1/memories/{memory_id}``, never the
raw path, so the label set stays small), memories by type and status, the outbox
backlog per kind of indexed thing, and each maintenance job's last result. The counts
come from the record store at scrape time (one grouped query each), the job results
from the scheduler; no namespace appears in any label. The route needs an admin key
(one granted ``*``) unless auth is disabled, like ``/v1/jobs``.

Labels come only from what the app defines, never from what a client sends (issue 28,
item 5): a method no route of the app takes is counted as ``other``, a path no route
matches as ``unmatched`` (under a mount such as ``/ui``: ``/ui/*``). Every request is
counted, those the Host check or the body limit refuse included: the counter wraps the
whole middleware stack.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["install_metrics"]

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
OTHER_METHOD = "other"
UNMATCHED = "unmatched"


def defined_methods(routes: Iterable[Any]) -> frozenset[str]:
    """Every HTTP method a route of ``routes`` takes, the routes of included routers
    and mounted apps included (a GET route takes HEAD too). Walked without recursion."""
    methods: set[str] = set()
    stack = list(routes)
    while stack:
        route = stack.pop()
        methods.update(getattr(route, "methods", None) or ())
        for inner in (getattr(route, "app", None), getattr(route, "original_router", None)):
            stack.extend(getattr(inner, "routes", None) or ())
    if "GET" in methods:
        methods.add("HEAD")  # static files and Starlette's GET routes answer HEAD
    return frozenset(methods)


def route_label(scope: Scope, outer_root: str) -> str:
    """The template of the route that handled the request, from the app's root: a
    mounted app's route under its mount (``/ui/search``), ``/ui/*`` for a path only a
    mount matched (static files, a page the dashboard does not have), else
    ``unmatched``. The raw path never becomes a label."""
    root = str(scope.get("root_path", ""))
    mount = root[len(outer_root):] if root.startswith(outer_root) else ""
    template = getattr(scope.get("route"), "path", None)
    if isinstance(template, str) and template:
        return mount + template
    return f"{mount}/*" if mount else UNMATCHED


class _Counted:
    """Pure ASGI wrapper around the app's whole middleware stack: counts and times
    every HTTP request by defined method, route template and status."""

    def __init__(self, app: ASGIApp, methods: Callable[[], frozenset[str]],
                 record: Callable[[str, str, int, float], None]) -> None:
        self.app, self.methods, self.record = app, methods, record

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        outer_root = str(scope.get("root_path", ""))
        status = 500  # an exception before the response started

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            method = scope.get("method", "")
            method = method if method in self.methods() else OTHER_METHOD
            self.record(method, route_label(scope, outer_root), status,
                        time.perf_counter() - start)


class _StoreCollector(Collector):
    """Gauges read when Prometheus scrapes: memories, outbox backlog, job results."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def collect(self) -> Iterator[GaugeMetricFamily]:
        manager = self.app.state.manager
        if manager is not None:
            gauges = manager.browse.gauges()
            memories = GaugeMetricFamily("hello_memory_memories",
                                         "Memories in the record store by type and status",
                                         labels=["memory_type", "status"])
            for (mtype, status), n in sorted(gauges["memories"].items()):
                memories.add_metric([mtype, status], n)
            yield memories
            outbox = GaugeMetricFamily("hello_memory_outbox_pending",
                                       "Index work written but not applied yet, by kind",
                                       labels=["kind"])
            for kind, n in sorted(gauges["outbox"].items()):
                outbox.add_metric([kind], n)
            yield outbox
        ok = GaugeMetricFamily("hello_memory_job_last_run_ok",
                               "1 when the job's last run succeeded, 0 when it failed",
                               labels=["job"])
        finished = GaugeMetricFamily("hello_memory_job_last_run_finished_seconds",
                                     "When the job's last run finished (Unix time)",
                                     labels=["job"])
        for entry in self.app.state.jobs.status():
            last, result = entry["last_run"], entry["last_result"]
            if last is None or result is None or result["status"] == "running":
                continue
            ok.add_metric([entry["name"]], 1.0 if result["status"] == "ok" else 0.0)
            if last["finished"]:
                finished.add_metric([entry["name"]],
                                    datetime.fromisoformat(last["finished"]).timestamp())
        yield ok
        yield finished


def install_metrics(app: FastAPI, admin: Any) -> None:
    """Count every request of ``app`` and serve ``GET /metrics`` behind ``admin`` (the
    admin-key dependency)."""
    registry = CollectorRegistry(auto_describe=True)
    requests = Counter("hello_memory_http_requests", "HTTP requests by route and status",
                       ["method", "route", "status"], registry=registry)
    latency = Histogram("hello_memory_http_request_seconds",
                        "HTTP request latency by route", ["method", "route"],
                        buckets=_BUCKETS, registry=registry)
    registry.register(_StoreCollector(app))

    known: list[frozenset[str]] = []

    def methods() -> frozenset[str]:
        # the routes are all added by the time the first request arrives
        if not known:
            known.append(defined_methods(app.routes))
        return known[0]

    def record(method: str, route: str, status: int, seconds: float) -> None:
        requests.labels(method, route, str(status)).inc()
        latency.labels(method, route).observe(seconds)

    # The counter wraps the stack Starlette builds at the first request, so it sees the
    # middlewares added after this call too (the Host check, the body limit).
    build = app.build_middleware_stack

    def build_counted() -> ASGIApp:
        return _Counted(build(), methods, record)

    app.build_middleware_stack = build_counted  # type: ignore[method-assign]

    router = APIRouter(tags=["meta"])

    @router.get("/metrics", dependencies=[admin], response_class=Response,
                responses={200: {"content": {CONTENT_TYPE_LATEST: {}},
                                 "description": "Prometheus text format"}})
    def metrics() -> Response:
        """Prometheus metrics of this server (admin key)."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    app.include_router(router)
