"""``GET /metrics``: the server's Prometheus metrics (docs/OBSERVABILITY.md).

Request counts and latency by route template (``/v1/memories/{memory_id}``, never the
raw path, so the label set stays small), memories by type and status, the outbox
backlog per kind of indexed thing, and each maintenance job's last result. The counts
come from the record store at scrape time (one grouped query each), the job results
from the scheduler; no namespace appears in any label. The route needs an admin key
(one granted ``*``) unless auth is disabled, like ``/v1/jobs``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["install_metrics"]

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class _StoreCollector(Collector):
    """Gauges read when Prometheus scrapes: memories, outbox backlog, job results."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def collect(self) -> Iterator[GaugeMetricFamily]:
        manager = self.app.state.manager
        if manager is not None:
            gauges = manager.stores.records.memories.gauges()
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

    @app.middleware("http")
    async def _count(request: Request,
                     call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        start = time.perf_counter()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            return response
        finally:
            route = request.scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            requests.labels(request.method, template, str(status)).inc()
            latency.labels(request.method, template).observe(time.perf_counter() - start)

    router = APIRouter(tags=["meta"])

    @router.get("/metrics", dependencies=[admin], response_class=Response,
                responses={200: {"content": {CONTENT_TYPE_LATEST: {}},
                                 "description": "Prometheus text format"}})
    def metrics() -> Response:
        """Prometheus metrics of this server (admin key)."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    app.include_router(router)
