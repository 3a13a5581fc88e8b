"""The REST API over HTTP: the real app through httpx's ASGI transport, and one live
uvicorn server started by ``hello-memory serve``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path

from hello_memory.interfaces.rest import create_app
from hello_memory.memory.manager import MemoryManager

from .conftest import free_port, make_manager, make_settings

pytestmark = pytest.mark.slow
KEYS = {"key-a": ["alice", "team/*"], "key-all": ["*"]}
A = {"Authorization": "Bearer key-a"}


@pytest.fixture
def api(tmp_path: Path, embedder: Any) -> Iterator[tuple[AsgiApi, MemoryManager]]:
    settings = make_settings(tmp_path / "data", api={"api_keys": KEYS})
    mm = make_manager(settings, embedder)
    yield AsgiApi(create_app(settings, manager=mm)), mm
    mm.close()


def is_problem(r: httpx.Response, status: int, slug: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["status"] == status and body["type"].endswith("/" + slug)
    assert body["title"] and body["detail"]
    return body


def test_memory_crud_round_trip(api: tuple[AsgiApi, MemoryManager]) -> None:
    call, mm = api
    ns = {"namespace": "alice"}
    r = call("POST", "/v1/memories", params=ns, headers=A,
             json={"content": "Alice prefers green tea.", "memory_type": "semantic"})
    assert r.status_code == 201
    mid = r.json()["id"]
    call("POST", "/v1/memories/batch", params=ns, headers=A, json={"memories": [
        {"content": "Alice visited Kyoto in April.", "memory_type": "episodic"},
        {"content": "Alice is drafting the Q3 plan now.", "memory_type": "working"}]})
    hits = call("POST", "/v1/search", params=ns, headers=A,
                json={"query": "what does Alice like to drink?", "top_k": 3}).json()["hits"]
    assert hits[0]["id"] == mid and {h["memory_type"] for h in hits} == {
        "semantic", "episodic", "working"}
    assert set(hits[0]["breakdown"]) >= {"similarity", "recency", "importance"}
    r = call("PATCH", f"/v1/memories/{mid}", params=ns, headers=A, json={"importance": 0.95})
    assert r.json()["importance"] == 0.95
    assert call("GET", f"/v1/memories/{mid}", params=ns, headers=A).json()["content"] == (
        "Alice prefers green tea.")
    assert call("GET", "/v1/stats", params=ns, headers=A).json()["total"] == 3
    assert call("DELETE", f"/v1/memories/{mid}", params=ns, headers=A).status_code == 204
    is_problem(call("GET", f"/v1/memories/{mid}", params=ns, headers=A), 404, "not-found")
    is_problem(call("DELETE", f"/v1/memories/{mid}", params=ns, headers=A), 404, "not-found")


def test_forget_restore_consolidate_clear_context(api: tuple[AsgiApi, MemoryManager]) -> None:
    call, mm = api
    ns = {"namespace": "team/red"}
    low = call("POST", "/v1/memories", params=ns, headers=A,
               json={"content": "The plant by the door was watered.", "importance": 0.05,
                     "memory_type": "episodic"}).json()["id"]
    call("POST", "/v1/memories", params=ns, headers=A,
         json={"content": "Release 4.2 ships on Thursday.", "importance": 0.9,
               "memory_type": "episodic"})
    assert call("POST", "/v1/forget", params=ns, headers=A,
                json={"threshold": 0.1}).json()["ids"] == [low]
    assert call("POST", "/v1/restore", params=ns, headers=A,
                json={"ids": [low]}).json() == {"restored": 1}
    # by ids: exactly those, restorable; an unknown id (or another namespace's) changes
    # nothing; hard needs a strategy
    other = call("POST", "/v1/memories", params={"namespace": "team/blue"}, headers=A,
                 json={"content": "Blue team notes."}).json()["id"]
    is_problem(call("POST", "/v1/forget", params=ns, headers=A,
                    json={"ids": [low, other]}), 404, "not-found")
    assert mm.get(low, namespace="team/red").status.value == "active"
    is_problem(call("POST", "/v1/forget", params=ns, headers=A,
                    json={"ids": [low], "hard": True}), 400, "invalid-input")
    by_ids = call("POST", "/v1/forget", params=ns, headers=A, json={"ids": [low]}).json()
    assert by_ids["ids"] == [low] and by_ids["strategy"] == "ids" and not by_ids["hard"]
    assert call("POST", "/v1/restore", params=ns, headers=A,
                json={"ids": [low]}).json() == {"restored": 1}
    rep = call("POST", "/v1/consolidate", params=ns, headers=A,
               json={"from_type": "episodic", "to_type": "semantic"}).json()
    assert len(rep["promoted"]) == 1 and rep["from_type"] == "episodic"
    ctx = call("POST", "/v1/context", params=ns, headers=A,
               json={"query": "when does release 4.2 ship?", "max_tokens": 100}).json()
    assert "Thursday" in ctx["context"] and ctx["tokens"] <= 100
    is_problem(call("DELETE", "/v1/namespace", params=ns, headers=A), 400, "invalid-input")
    assert call("DELETE", "/v1/namespace", params={**ns, "confirm": "true"},
                headers=A).json()["records"] == 2
    assert mm.stats("team/red")["total"] == 0


def test_keys_namespaces_and_problems(api: tuple[AsgiApi, MemoryManager]) -> None:
    call, mm = api
    body = {"content": "secret"}
    is_problem(call("POST", "/v1/memories", params={"namespace": "alice"}, json=body),
               401, "unauthorized")
    is_problem(call("POST", "/v1/memories", params={"namespace": "alice"}, json=body,
                    headers={"Authorization": "Bearer wrong"}), 401, "unauthorized")
    is_problem(call("POST", "/v1/memories", params={"namespace": "bob"}, json=body,
                    headers=A), 403, "forbidden")
    sub = call("POST", "/v1/memories", params={"namespace": "team/blue/x"}, json=body,
               headers=A)
    assert sub.status_code == 201  # "team/*" grants the whole subtree
    is_problem(call("POST", "/v1/memories", params={"namespace": "teams"}, json=body,
                    headers=A), 403, "forbidden")
    ok = call("POST", "/v1/memories", params={"namespace": "bob"}, json=body,
              headers={"X-API-Key": "key-all"})
    assert ok.status_code == 201
    # this key grants two patterns: it must name one (a key granted one exact name may
    # leave it out, tests/interfaces/test_rest_default_namespace.py)
    missing = is_problem(call("POST", "/v1/memories", json=body, headers=A), 400,
                         "namespace-required")
    assert "namespace" in missing["detail"]
    bad = is_problem(call("POST", "/v1/memories", params={"namespace": "alice"}, headers=A,
                          json={"content": "   "}), 400, "invalid-input")
    assert bad["error"] == "EmptyContentError"
    is_problem(call("POST", "/v1/memories", params={"namespace": "alice"}, headers=A,
                    json={"content": "x", "importance": 2}), 422, "validation")
    big = {"content": "x" * 1_100_000}
    is_problem(call("POST", "/v1/memories", params={"namespace": "alice"}, headers=A,
                    json=big), 413, "too-large")
    assert mm.stats("alice")["total"] == 0 and mm.stats("bob")["total"] == 1


def test_openapi_and_multimodal_without_the_extra(api: tuple[AsgiApi, MemoryManager]) -> None:
    call, _ = api
    schema = call("GET", "/openapi.json").json()
    paths = schema["paths"]
    for path in ("/v1/memories", "/v1/search", "/v1/forget", "/v1/consolidate", "/v1/stats",
                 "/v1/media", "/v1/media/search", "/v1/media/search/file", "/v1/documents",
                 "/v1/ask"):
        assert path in paths, path
    params = {p["name"]: p for p in paths["/v1/search"]["post"]["parameters"]}
    assert params["namespace"]["required"] is False  # the key's one namespace, if one
    assert schema["components"]["securitySchemes"]
    ns = {"namespace": "alice"}
    p = is_problem(call("POST", "/v1/media/search", params=ns, headers=A,
                        json={"query": "a red logo", "target_modality": "image"}),
                   501, "not-configured")
    assert "perceptual" in p["detail"]
    is_problem(call("POST", "/v1/media", params=ns, headers=A,
                    files={"file": ("a.png", b"\x89PNG....", "image/png")},
                    data={"modality": "image"}), 501, "not-configured")


def test_documents_ingest_and_ask(api: tuple[AsgiApi, MemoryManager], tmp_path: Path) -> None:
    call, _ = api
    ns = {"namespace": "alice"}
    doc = ("# Office guide\n\nThe office wifi network is called Harbor and the password "
           "changes every quarter.\n\n## Parking\n\nVisitors park on level -2.\n")
    r = call("POST", "/v1/documents", params=ns, headers=A,
             files=[("files", ("guide.md", doc.encode(), "text/markdown"))])
    assert r.status_code == 201, r.text
    assert r.json()["files"] == 1 and r.json()["chunks"] >= 1
    hits = call("POST", "/v1/documents/search", params=ns, headers=A,
                json={"query": "where do visitors park?"}).json()["hits"]
    assert "level -2" in hits[0]["content"]
    answer = call("POST", "/v1/ask", params=ns, headers=A,
                  json={"question": "What is the wifi network called?"}).json()
    assert "Harbor" in answer["text"] and answer["used_llm"] is False
    is_problem(call("POST", "/v1/documents/paths", params=ns, headers=A,
                    json={"paths": [str(tmp_path)]}), 400, "invalid-input")


def test_live_server_from_the_cli(tmp_path: Path) -> None:
    """`hello-memory serve` on a free port; auth off is accepted on loopback only."""
    port = free_port()
    env = {**os.environ, "HELLO_MEMORY__API__AUTH_DISABLED": "true",
           "HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules"}
    refused = subprocess.run(
        [sys.executable, "-m", "hello_memory.interfaces.cli", "--data-dir", str(tmp_path / "d"),
         "serve", "--host", "0.0.0.0", "--port", str(port)], env=env, capture_output=True,
        text=True, timeout=120)
    assert refused.returncode == 2 and "loopback" in refused.stderr
    assert "Traceback" not in refused.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "hello_memory.interfaces.cli", "--data-dir", str(tmp_path / "d"),
         "serve", "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).json()["status"] == "ok":
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.5)
        with httpx.Client(base_url=base, timeout=60) as c:
            mid = c.post("/v1/memories", params={"namespace": "live"},
                         json={"content": "The live server stores this."}).json()["id"]
            hits = c.post("/v1/search", params={"namespace": "live"},
                          json={"query": "what does the live server store?"}).json()["hits"]
            assert hits[0]["id"] == mid
            assert c.get("/openapi.json").json()["info"]["title"] == "hello-memory"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
