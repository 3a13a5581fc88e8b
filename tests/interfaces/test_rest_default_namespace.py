"""REST's default namespace (issue 29): a key granted exactly one namespace (an exact
name) may leave ``namespace`` out and acts in that one, as MCP does; a key granted
several, a pattern or ``*`` must name one (a 400 ``namespace-required`` problem that
says why); naming one keeps working and keeps its checks. The real app, over ASGI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path

from hello_memory.interfaces.rest import create_app

from .conftest import make_manager, make_settings

pytestmark = pytest.mark.slow
KEYS = {"one": ["alice"], "two": ["alice", "bob"], "team": ["team/*"], "admin": ["*"]}


def _key(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {name}"}


@pytest.fixture
def call(tmp_path: Path, embedder: Any) -> Iterator[AsgiApi]:
    settings = make_settings(tmp_path / "data", api={"api_keys": KEYS})
    mm = make_manager(settings, embedder)
    yield AsgiApi(create_app(settings, manager=mm))
    mm.close()


def _namespace_required(r: Any) -> str:
    assert r.status_code == 400, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["type"].endswith("/namespace-required")
    assert body["error"] == "NamespaceRequiredError"
    assert "?namespace=" in body["detail"]
    return str(body["detail"])


def test_a_key_granted_one_namespace_may_leave_it_out(call: AsgiApi) -> None:
    one = _key("one")
    added = call("POST", "/v1/memories", headers=one,
                 json={"content": "Alice keeps bees.", "memory_type": "semantic"})
    assert added.status_code == 201, added.text
    assert added.json()["namespace"] == "alice"
    found = call("POST", "/v1/search", headers=one, json={"query": "bees", "min_score": 0})
    assert found.status_code == 200, found.text
    assert [h["id"] for h in found.json()["hits"]] == [added.json()["id"]]
    # naming it explicitly gives the same answer; naming another is still refused
    named = call("POST", "/v1/search", params={"namespace": "alice"}, headers=one,
                 json={"query": "bees", "min_score": 0})
    assert [h["id"] for h in named.json()["hits"]] == [added.json()["id"]]
    assert call("GET", "/v1/stats", params={"namespace": "bob"}, headers=one
                ).status_code == 403
    # the memory landed in alice and only there
    stats = call("GET", "/v1/stats", headers=_key("admin"), params={"namespace": "alice"})
    assert stats.json()["total"] == 1
    assert call("GET", "/v1/stats", headers=_key("admin"),
                params={"namespace": "bob"}).json()["total"] == 0
    # the schema says the parameter is optional
    spec = call("GET", "/openapi.json").json()
    param = next(p for p in spec["paths"]["/v1/search"]["post"]["parameters"]
                 if p["name"] == "namespace")
    assert param["required"] is False and "exactly one" in param["description"]


def test_a_key_that_grants_more_must_name_one(call: AsgiApi) -> None:
    detail = _namespace_required(call("GET", "/v1/stats", headers=_key("two")))
    assert "'alice', 'bob'" in detail
    assert "'team/*'" in _namespace_required(call("POST", "/v1/search", headers=_key("team"),
                                                  json={"query": "anything"}))
    _namespace_required(call("POST", "/v1/memories", headers=_key("admin"),
                             json={"content": "Nowhere to go."}))
    # nothing was written anywhere by the refused add
    for ns in ("alice", "bob"):
        assert call("GET", "/v1/stats", params={"namespace": ns},
                    headers=_key("admin")).json()["total"] == 0
    # named, each works as before
    ok = call("POST", "/v1/memories", params={"namespace": "bob"}, headers=_key("two"),
              json={"content": "Bob plays the cello."})
    assert ok.status_code == 201 and ok.json()["namespace"] == "bob"
    assert call("GET", "/v1/stats", params={"namespace": "team/blue"},
                headers=_key("team")).status_code == 200
    # the key is checked before the namespace: no key is a 401, not a 400
    assert call("GET", "/v1/stats").status_code == 401
    assert call("GET", "/v1/stats", headers=_key("nope")).status_code == 401
