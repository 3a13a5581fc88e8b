"""Every error of the REST API is a problem object (issue 20): routing's own 404 and
405, an unknown document, a clear without confirm said in HTTP's words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path

from hello_memory.interfaces.rest import create_app

from .conftest import make_manager, make_settings

pytestmark = pytest.mark.slow
H = {"Authorization": "Bearer k"}


@pytest.fixture
def call(tmp_path: Path, embedder: Any) -> Iterator[AsgiApi]:
    settings = make_settings(tmp_path / "data", api={"api_keys": {"k": ["*"]}})
    mm = make_manager(settings, embedder)
    yield AsgiApi(create_app(settings, manager=mm))
    mm.close()


def _problem(r: Any, status: int, slug: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = r.json()
    assert body["status"] == status and body["type"].endswith("/" + slug) and body["detail"]
    assert body["error"] and body["title"]  # the fields README's REST section lists
    return body


def test_unknown_route_and_wrong_method_are_problems(call: AsgiApi) -> None:
    body = _problem(call("GET", "/v1/nope", headers=H), 404, "not-found")
    assert "/v1/nope" in body["detail"]
    r = call("GET", "/v1/search", params={"namespace": "a"}, headers=H)
    _problem(r, 405, "method-not-allowed")
    assert "POST" in r.headers["allow"]


def test_deleting_an_unknown_document_is_404(call: AsgiApi) -> None:
    _problem(call("DELETE", "/v1/documents/~nosuchdoc", params={"namespace": "a"}, headers=H),
             404, "not-found")


def test_clear_without_confirm_speaks_http(call: AsgiApi) -> None:
    body = _problem(call("DELETE", "/v1/namespace", params={"namespace": "a"}, headers=H),
                    400, "invalid-input")
    assert "confirm=true" in body["detail"] and "confirm=True" not in body["detail"]


def test_an_age_no_date_can_hold_is_400_not_500(call: AsgiApi) -> None:
    r = call("POST", "/v1/forget", params={"namespace": "a"}, headers=H,
             json={"strategy": "time", "max_age_days": 1e10})
    assert "max_age_days" in _problem(r, 400, "invalid-input")["detail"]
    ok = call("POST", "/v1/forget", params={"namespace": "a"}, headers=H,
              json={"strategy": "time", "max_age_days": 36500, "dry_run": True})
    assert ok.status_code == 200, ok.text


def test_auth_and_schema_errors_are_full_problems(call: AsgiApi) -> None:
    assert _problem(call("GET", "/v1/stats", params={"namespace": "a"}), 401,
                    "unauthorized")["error"] == "AccessDenied"
    assert _problem(call("GET", "/v1/stats", params={"namespace": "a"},
                         headers={"Authorization": "Bearer nope"}), 401,
                    "unauthorized")["error"] == "AccessDenied"
    body = _problem(call("POST", "/v1/memories", params={"namespace": "a"}, headers=H,
                         json={"importance": "high"}), 422, "validation")
    assert body["error"] == "RequestValidationError" and body["errors"]

