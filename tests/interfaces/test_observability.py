"""Traces and metrics (docs/OBSERVABILITY.md): spans through the real OpenTelemetry SDK
with its in-memory exporter, and ``GET /metrics`` scraped and parsed with
prometheus-client's own parser, over a real manager on embedded stores."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from hello_memory import telemetry
from hello_memory.errors import InvalidInputError
from hello_memory.interfaces.rest import create_app
from hello_memory.memory.manager import MemoryManager

from .conftest import make_manager, make_settings

KEYS = {"key-admin": ["*"], "key-a": ["alice"]}
ADMIN = {"Authorization": "Bearer key-admin"}
A = {"Authorization": "Bearer key-a"}
NS = "alice-private-namespace"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert telemetry.configure(tracing=True, provider=provider)
    yield exporter
    telemetry.configure(tracing=False)


def by_name(finished: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name == name]


def test_tracing_is_off_by_default_and_costs_nothing(manager: MemoryManager) -> None:
    assert not telemetry.enabled()
    manager.add("Tea with Ana on Friday.", namespace=NS)
    assert manager.search("tea", namespace=NS)  # runs with no provider at all


def test_one_search_is_one_span_with_one_child_per_view(
        manager: MemoryManager, spans: InMemorySpanExporter) -> None:
    manager.add_many([{"content": c, "namespace": NS, "memory_type": "semantic"} for c in (
        "Ana works at the harbour office in Porto.",
        "Ana's brother Rui plays the cello.",
        "The harbour office closes at six.")])
    added = by_name(spans.get_finished_spans(), "create_memory hello-memory")
    assert len(added) == 1
    assert added[0].attributes["gen_ai.memory.record.count"] == 3
    spans.clear()

    hits = manager.search("Where does Ana work?", top_k=2, namespace=NS)
    finished = spans.get_finished_spans()
    [search] = by_name(finished, "search_memory hello-memory")
    attrs = dict(search.attributes or {})
    assert attrs["gen_ai.operation.name"] == "search_memory"
    assert attrs["gen_ai.retrieval.top_k"] == 2
    assert attrs["gen_ai.memory.record.count"] == len(hits) > 0
    assert attrs["hello_memory.namespace.hash"] == telemetry.namespace_hash(NS)
    assert "gen_ai.memory.query.text" not in attrs  # opt-in only
    views = [s for s in finished if s.name.startswith("hello_memory.view ")]
    # working memory votes through the same View protocol (retrieval/memory_views.py),
    # so it has its span too (perceptual memory is not searched here)
    assert sorted(s.attributes["hello_memory.view.name"] for s in views) == [
        "graph", "lexical", "semantic", "symbolic", "working"]
    for view in views:  # children of the search span, across the view threads
        assert view.parent is not None and view.parent.span_id == search.context.span_id
        assert view.context.trace_id == search.context.trace_id
        assert view.end_time is not None and view.end_time >= view.start_time
    # the namespace itself is in no attribute of any span
    for s in finished:
        assert all(NS not in str(v) for v in (s.attributes or {}).values())


def test_query_text_only_when_asked(manager: MemoryManager) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(tracing=True, capture_query=True, provider=provider)
    try:
        manager.add("Ana likes green tea.", namespace=NS)
        manager.search("what tea does Ana like", namespace=NS)
    finally:
        telemetry.configure(tracing=False)
    [search] = by_name(exporter.get_finished_spans(), "search_memory hello-memory")
    assert search.attributes["gen_ai.memory.query.text"] == "what tea does Ana like"


def test_forget_consolidate_and_jobs_have_spans(
        manager: MemoryManager, spans: InMemorySpanExporter) -> None:
    from hello_memory.interfaces.jobs import run_job

    manager.add("A passing remark about the weather.", namespace=NS, importance=0.05)
    manager.forget("importance", threshold=0.1, namespace=NS)
    manager.consolidate(namespace=NS)
    run_job(manager, "reconcile", namespace=NS, dry_run=True)
    names = {s.name for s in spans.get_finished_spans()}
    assert {"forget hello-memory", "consolidate hello-memory", "job reconcile"} <= names
    failed = [s for s in spans.get_finished_spans() if not s.status.is_ok]
    assert failed == []


def test_a_failing_call_marks_its_span(manager: MemoryManager,
                                       spans: InMemorySpanExporter) -> None:
    with pytest.raises(InvalidInputError):
        manager.search("", namespace=NS)
    [search] = by_name(spans.get_finished_spans(), "search_memory hello-memory")
    assert not search.status.is_ok
    assert any(e.name == "exception" for e in search.events)


def scrape(client: TestClient, headers: dict[str, str]) -> dict[str, Any]:
    r = client.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(r.text)}


def sample(families: dict[str, Any], family: str, **labels: str) -> float | None:
    for s in families[family].samples:
        if all(s.labels.get(k) == v for k, v in labels.items()) and (
                family != "hello_memory_http_requests" or s.name.endswith("_total")):
            return float(s.value)
    return None


def test_metrics_count_requests_memories_outbox_and_jobs(tmp_path: Any,
                                                          embedder: Any) -> None:
    settings = make_settings(tmp_path / "data", api={"api_keys": KEYS})
    mm = make_manager(settings, embedder)
    try:
        with TestClient(create_app(settings, manager=mm)) as client:
            ns = {"namespace": "alice"}
            for text in ("Alice moved to Lisbon.", "Alice's cat is called Miso."):
                r = client.post("/v1/memories", params=ns, headers=A,
                                json={"content": text, "memory_type": "semantic"})
                assert r.status_code == 201, r.text
            r = client.post("/v1/memories", params=ns, headers=A,
                            json={"content": "On Monday Alice flew home.",
                                  "memory_type": "episodic"})
            memory_id = r.json()["id"]
            assert client.get(f"/v1/memories/{memory_id}", params=ns,
                              headers=A).status_code == 200
            assert client.get("/v1/memories/nope", params=ns, headers=A).status_code == 404
            assert client.post("/v1/jobs/reconcile", headers=ADMIN,
                               json={"namespace": ["alice"]}).status_code == 200

            assert client.get("/metrics", headers=A).status_code == 403  # not an admin
            assert client.get("/metrics").status_code == 401
            m = scrape(client, ADMIN)
            assert sample(m, "hello_memory_http_requests", method="POST",
                          route="/v1/memories", status="201") == 3
            # one route template for every id, so the label set stays small
            assert sample(m, "hello_memory_http_requests", method="GET",
                          route="/v1/memories/{memory_id}", status="200") == 1
            assert sample(m, "hello_memory_http_requests", method="GET",
                          route="/v1/memories/{memory_id}", status="404") == 1
            assert sample(m, "hello_memory_memories", memory_type="semantic",
                          status="active") == 2
            assert sample(m, "hello_memory_memories", memory_type="episodic",
                          status="active") == 1
            assert sample(m, "hello_memory_outbox_pending", kind="memory") == 0
            assert sample(m, "hello_memory_outbox_pending", kind="chunk") == 0
            assert sample(m, "hello_memory_job_last_run_ok", job="reconcile") == 1
            assert (sample(m, "hello_memory_job_last_run_finished_seconds", job="reconcile")
                    or 0) > 0
            assert "alice" not in client.get("/metrics", headers=ADMIN).text
    finally:
        mm.close()


def test_metrics_can_be_turned_off(tmp_path: Any, embedder: Any) -> None:
    settings = make_settings(tmp_path / "data", observability={"metrics": False})
    mm = make_manager(settings, embedder)
    try:
        with TestClient(create_app(settings, manager=mm)) as client:
            assert client.get("/metrics").status_code == 404
    finally:
        mm.close()
