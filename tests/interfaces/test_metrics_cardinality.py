"""``/metrics`` stays small whatever clients send (issue 28, item 5; docs/OBSERVABILITY.md
"the label set stays small"): only the HTTP methods and route templates the app defines
become labels; a made-up method is counted as ``other`` and a path no route matches as
``unmatched``, so 1,000 requests with 1,000 made-up methods (and unknown paths) leave
the scrape the size it was. The real app over a real manager; sizes are compared, never
times."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from hello_memory.interfaces.rest import create_app

from .conftest import make_manager, make_settings

KEYS = {"key-admin": ["*"], "key-a": ["alice"]}
ADMIN = {"Authorization": "Bearer key-admin"}
A = {"Authorization": "Bearer key-a"}


def scrape(client: TestClient) -> str:
    r = client.get("/metrics", headers=ADMIN)
    assert r.status_code == 200, r.text
    return r.text


def label_values(text: str, label: str) -> set[str]:
    return {s.labels[label] for f in text_string_to_metric_families(text)
            if f.name.startswith("hello_memory_http_") for s in f.samples if label in s.labels}


def made_up_requests(client: TestClient, n: int, salt: str) -> None:
    """``n`` requests, each with its own made-up method, half on real routes, half on
    paths no route has, some on the dashboard; every one refused."""
    paths = ["/v1/memories", "/v1/search", "/healthz", "/ui/", "/ui/search"]
    for i in range(n):
        path = paths[i % len(paths)] if i % 2 else f"/no/such/{salt}{i}"
        r = client.request(f"X{salt}{i}", path, headers=A)
        assert 400 <= r.status_code < 500, (path, r.status_code)


def test_made_up_methods_and_paths_do_not_grow_the_scrape(tmp_path: Path,
                                                          embedder: Any) -> None:
    settings = make_settings(tmp_path / "data", api={"api_keys": KEYS})
    mm = make_manager(settings, embedder)
    try:
        with TestClient(create_app(settings, manager=mm)) as client:
            # the ordinary traffic first, so every label a real client can reach exists
            ns = {"namespace": "alice"}
            assert client.post("/v1/memories", params=ns, headers=A, json={
                "content": "Alice moved to Lisbon."}).status_code == 201
            assert client.get("/v1/memories/nope", params=ns, headers=A).status_code == 404
            assert client.get("/no/such/path").status_code == 404
            made_up_requests(client, 10, "warm")
            scrape(client)
            before = scrape(client)

            made_up_requests(client, 1000, "attack")
            after = scrape(client)
            # the counts grew, the label sets did not: the same lines, the same size
            # (give or take the digits of the counters that grew)
            assert len(after.splitlines()) == len(before.splitlines())
            assert len(after) <= len(before) + 2_000, (len(before), len(after))
            print(f"scrape: {len(before):,} bytes before, {len(after):,} after")
            methods = label_values(after, "method")
            assert methods <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "other"}
            assert {"GET", "POST", "other"} <= methods
            assert not any("attack" in r or "warm" in r
                           for r in label_values(after, "route"))
            assert "unmatched" in label_values(after, "route")
            # the dashboard's routes are labelled with their full template, its static
            # files by their mount; a request the Host check refuses is counted too
            assert client.get("/ui/login").status_code == 200
            assert client.get("/ui/static/ui.css").status_code == 200
            assert client.get("/healthz", headers={"Host": "evil.example"}).status_code == 403
            text = scrape(client)
            routes = label_values(text, "route")
            assert {"/ui/login", "/ui/static/*", "/v1/memories"} <= routes
            assert 'method="GET",route="unmatched",status="403"' in text
    finally:
        mm.close()
