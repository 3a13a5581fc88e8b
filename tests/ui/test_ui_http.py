"""The dashboard over HTTP without a browser: sessions, CSRF, auth disabled on loopback
only, security headers, and no page (nor /docs) naming an outside address."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from hello_memory.interfaces.rest import create_app

from .conftest import Seeded

pytestmark = pytest.mark.slow
LOOPBACK = ("127.0.0.1", 50123)
OUTSIDE_URL = re.compile(r"""(?:src|href|action|url)\s*[=(]\s*["']?\s*(?:https?:)?//""", re.I)


def client(seeded: Seeded, *, host: tuple[str, int] = LOOPBACK, **api: object) -> TestClient:
    settings = seeded.settings.model_copy(
        update={"api": seeded.settings.api.model_copy(update=api)}) if api else seeded.settings
    app = create_app(settings, manager=seeded.mm)
    return TestClient(app, base_url="http://127.0.0.1:8765", client=host,
                      follow_redirects=False)


def sign_in(c: TestClient, key: str, next: str = "") -> Any:  # noqa: A002
    """Post the sign-in form as a browser does: its page first (the CSRF token and the
    nonce cookie it is bound to), then the form."""
    page = c.get("/ui/login")
    assert page.status_code == 200, page.text[:300]
    return c.post("/ui/login", data={"key": key, "next": next, "csrf": csrf_of(page.text)})


@pytest.fixture
def alice(seeded: Seeded) -> Iterator[TestClient]:
    c = client(seeded)
    r = sign_in(c, "key-alice", next="/ui/")
    assert r.status_code == 303 and r.headers["location"] == "/ui/"
    yield c
    c.close()


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF field on the page"
    return found.group(1)


def test_nothing_without_a_session(seeded: Seeded) -> None:
    c = client(seeded)
    for path in ("/ui/", "/ui/search?namespace=alice&q=tea", "/ui/timeline?namespace=alice",
                 f"/ui/memories/{seeded.ids['tea']}?namespace=alice", "/ui/jobs"):
        r = c.get(path)
        assert r.status_code == 303, path
        assert r.headers["location"].startswith("/ui/login?next=")
        assert "tea" not in r.text
    r = c.post(f"/ui/memories/{seeded.ids['tea']}/delete?namespace=alice",
               data={"confirm": "yes"})
    assert r.status_code == 303 and "/ui/login" in r.headers["location"]
    assert seeded.mm.get(seeded.ids["tea"], namespace="alice")
    # a bearer header is the REST API's way in, not the dashboard's
    r = c.get("/ui/", headers={"Authorization": "Bearer key-alice"})
    assert r.status_code == 303


def test_session_cookie_never_carries_the_key(seeded: Seeded) -> None:
    c = client(seeded)
    r = sign_in(c, "key-alice", next="https://evil.example/")
    assert r.status_code == 303 and r.headers["location"] == "/ui/"  # no open redirect
    cookie = r.headers["set-cookie"]
    assert "key-alice" not in cookie
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert "Path=/ui/" in cookie
    r = sign_in(c, "wrong")
    assert r.status_code == 401 and "unknown API key" in r.text


def test_pages_name_no_outside_address_and_send_a_policy(alice: TestClient,
                                                          seeded: Seeded) -> None:
    doc = seeded.document_id
    for path in ("/ui/", "/ui/search?namespace=alice&q=where+does+Alice+live",
                 f"/ui/memories/{seeded.ids['berlin']}?namespace=alice",
                 "/ui/timeline?namespace=alice&zoom=week", "/ui/graph?namespace=alice",
                 "/ui/documents?namespace=alice", f"/ui/documents/{doc}?namespace=alice"):
        r = alice.get(path)
        assert r.status_code == 200, (path, r.text[:300])
        assert not OUTSIDE_URL.search(r.text), (path, OUTSIDE_URL.search(r.text))
        policy = r.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy
        assert r.headers["cache-control"] == "no-store"
    docs = alice.get("/docs")
    assert docs.status_code == 200 and "://" not in docs.text
    assert "script-src 'self'" in docs.headers["content-security-policy"]
    for asset in ("/ui/static/vendor/swagger-ui/swagger-ui-bundle.js",
                  "/ui/static/vendor/cytoscape/cytoscape.min.js", "/ui/static/ui.css"):
        assert alice.get(asset).status_code == 200, asset


def test_forms_need_the_session_token(alice: TestClient, seeded: Seeded) -> None:
    mid = seeded.ids["badge"]
    page = alice.get(f"/ui/memories/{mid}?namespace=alice").text
    r = alice.post(f"/ui/memories/{mid}/forget?namespace=alice", data={"confirm": "yes"})
    assert r.status_code == 403 and "stale" in r.text
    assert seeded.mm.get(mid, namespace="alice").status.value == "active"
    token = csrf_of(page)
    r = alice.post(f"/ui/memories/{mid}/forget?namespace=alice", data={"csrf": token})
    assert r.status_code == 200 and "Forget this memory?" in r.text  # asks first
    assert seeded.mm.get(mid, namespace="alice").status.value == "active"
    r = alice.post(f"/ui/memories/{mid}/forget?namespace=alice",
                   data={"csrf": token, "confirm": "yes"})
    assert r.status_code == 303 and "done=forgotten" in r.headers["location"]
    assert seeded.mm.get(mid, namespace="alice").status.value == "forgotten"
    alice.post(f"/ui/memories/{mid}/restore?namespace=alice",
               data={"csrf": token, "confirm": "yes"})
    assert seeded.mm.get(mid, namespace="alice").status.value == "active"
    # another namespace's memory through alice's namespace: not found there
    r = alice.post(f"/ui/memories/{seeded.ids['bob']}/delete?namespace=alice",
                   data={"csrf": token, "confirm": "yes"})
    assert r.status_code == 404
    assert seeded.mm.get(seeded.ids["bob"], namespace="bob")


def test_auth_disabled_only_for_loopback_clients(seeded: Seeded) -> None:
    local = client(seeded, auth_disabled=True)
    r = local.get("/ui/timeline?namespace=bob")
    assert r.status_code == 303
    r = local.get(r.headers["location"])  # the login page signs a loopback client in
    assert r.status_code == 303 and r.headers["location"] == "/ui/timeline?namespace=bob"
    r = local.get(r.headers["location"])
    assert r.status_code == 200 and "plum cake" in r.text and "no key (loopback)" in r.text
    remote = client(seeded, host=("203.0.113.7", 40000), auth_disabled=True)
    r = remote.get("/ui/login")
    assert r.status_code == 200 and "API key" in r.text
    assert remote.get("/ui/timeline?namespace=bob").status_code == 303
    r = sign_in(remote, "")
    assert r.status_code == 401 and "enter an API key" in r.text


def test_search_filters_reach_the_one_search(alice: TestClient, seeded: Seeded) -> None:
    def found(**params: str) -> tuple[set[str], set[str]]:
        r = alice.get("/ui/search", params={"namespace": "alice", **params})
        assert r.status_code == 200, r.text[:300]
        ids = set(re.findall(r'/ui/memories/([0-9a-f-]{36})\?namespace=alice', r.text))
        return ids, set(re.findall(r'<span class="type t-(\w+)">', r.text))

    ids, types = found(q="the Lisbon trip", type="episodic", session="trip-planning")
    assert ids == {seeded.ids["lisbon"], seeded.ids["hotel"]} and types == {"episodic"}
    ids, _ = found(q="what happened", since="2024-09-01", until="2024-09-30")
    assert ids == {seeded.ids["lisbon"], seeded.ids["hotel"]}
    ids, _ = found(q="Alice", min_importance="0.75", type="semantic")
    assert ids == {seeded.ids["berlin"]}
    r = alice.get("/ui/search", params={"namespace": "alice",
                                        "q": "What did Alice do in September 2024?"})
    assert "2024-09-01 00:00 UTC" in r.text  # the plan's resolved time range
    r = alice.get("/ui/search", params={"namespace": "alice", "q": "tea", "since": "May"})
    assert r.status_code == 400 and "since must be a date" in r.text


def test_a_superseded_memory_links_its_versions(seeded: Seeded) -> None:
    from .conftest import utc

    mm = seeded.mm
    old = mm.add("Tom Berg lives in Oslo.", "semantic", namespace="carol",
                 event_time=utc(2024, 3, 1))
    new = mm.add("Tom Berg moved to Bergen.", "semantic", namespace="carol",
                 event_time=utc(2024, 8, 1))
    assert mm.get(old.id, namespace="carol").superseded_by == new.id
    admin = client(seeded)
    sign_in(admin, "key-admin")
    page = admin.get(f"/ui/memories/{old.id}?namespace=carol").text
    versions = page[page.index('data-testid="versions"'):]
    assert f"/ui/memories/{new.id}?namespace=carol" in versions and "replaced by" in versions
    assert ">superseded<" in page
    page = admin.get(f"/ui/memories/{new.id}?namespace=carol").text
    versions = page[page.index('data-testid="versions"'):]
    assert f"/ui/memories/{old.id}?namespace=carol" in versions and "replaces" in versions
    timeline = admin.get("/ui/timeline?namespace=carol&zoom=month").text
    assert "Tom Berg lives in Oslo." in timeline and ">superseded<" in timeline


def test_forgetting_a_working_memory_drops_it(alice: TestClient, seeded: Seeded) -> None:
    mid = seeded.ids["now"]
    page = alice.get(f"/ui/memories/{mid}?namespace=alice").text
    assert "lives in this server process only" in page
    r = alice.post(f"/ui/memories/{mid}/forget?namespace=alice",
                   data={"csrf": csrf_of(page), "confirm": "yes"})
    assert r.status_code == 303
    assert r.headers["location"] == "/ui/timeline?namespace=alice&done=forgotten"
    assert alice.get(f"/ui/memories/{mid}?namespace=alice").status_code == 404
