"""The dashboard under hostile input, over HTTP (issue 28, item 9; docs/RELIABILITY.md
"The inspector"): every error is an HTML page with a 4xx status and the connection
stays open; the sign-in form has its own CSRF token; failed keys back off per client;
sessions are capped per key, so one key signing in again and again never signs another
key out. The real app over the seeded manager; a live uvicorn for the connection."""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from hello_memory.interfaces.rest import create_app
from hello_memory.interfaces.ui.sessions import LoginThrottle, Sessions

from .conftest import Seeded
from .test_ui_http import LOOPBACK, client, csrf_of, sign_in

pytestmark = pytest.mark.slow


def ui_of(app: FastAPI) -> FastAPI:
    """The dashboard sub-application mounted at /ui."""
    mounted: FastAPI = next(r.app for r in app.routes if getattr(r, "path", None) == "/ui")
    return mounted


def is_html_page(r: Any, status: int) -> bool:
    return r.status_code == status and r.headers["content-type"].startswith("text/html") \
        and "<!doctype html>" in r.text and 'data-testid="error-detail"' in r.text


# --- errors are pages, the connection stays ---------------------------------------------
def exchange(sock: socket.socket, host: str, target: str, *, method: str = "GET",
             cookie: str = "", body: str = "") -> tuple[int, dict[str, str], str]:
    """One HTTP/1.1 request on an open connection, and its response (Content-Length
    framed, which is how the app answers)."""
    head = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Connection: keep-alive"]
    if cookie:
        head.append(f"Cookie: {cookie}")
    data = body.encode()
    if method == "POST":
        head += ["Content-Type: application/x-www-form-urlencoded",
                 f"Content-Length: {len(data)}"]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"the server closed the connection after {target[:80]}")
        raw += chunk
    header_bytes, rest = raw.split(b"\r\n\r\n", 1)
    lines = header_bytes.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"the server closed the connection in {target[:80]}")
        rest += chunk
    return status, headers, rest[:length].decode("utf-8", "replace")


def test_hostile_pages_answer_html_4xx_on_a_connection_that_stays_open(
        server: str, seeded: Seeded) -> None:
    host = urlsplit(server).netloc
    mid = seeded.ids["tea"]
    with socket.create_connection((urlsplit(server).hostname, urlsplit(server).port),
                                  timeout=60) as sock:
        status, headers, page = exchange(sock, host, "/ui/login")
        assert status == 200
        nonce = headers["set-cookie"].split(";", 1)[0]
        form = urlencode({"key": "key-alice", "csrf": csrf_of(page)})
        status, headers, _ = exchange(sock, host, "/ui/login", method="POST", cookie=nonce,
                                      body=form)
        assert status == 303
        cookie = f"{nonce}; {headers['set-cookie'].split(';', 1)[0]}"
        # the last day there is: a page of results, not a 500
        status, headers, page = exchange(
            sock, host, "/ui/search?namespace=alice&q=tea&since=0001-01-01&until=9999-12-31",
            cookie=cookie)
        assert status == 200 and headers["content-type"].startswith("text/html")
        assert "green tea" in page
        # metadata nested 30,000 deep: a 400 page naming the limit, nothing changed
        status, _, page = exchange(sock, host, f"/ui/memories/{mid}?namespace=alice",
                                   cookie=cookie)
        assert status == 200
        before = seeded.mm.get(mid, namespace="alice").metadata
        deep = '{"a":' * 30_000 + "1" + "}" * 30_000
        status, headers, page = exchange(
            sock, host, f"/ui/memories/{mid}/edit?namespace=alice", method="POST",
            cookie=cookie, body=urlencode({"csrf": csrf_of(page), "metadata": deep}))
        assert status == 400 and headers["content-type"].startswith("text/html")
        assert "limits.max_metadata_depth" in page
        assert seeded.mm.get(mid, namespace="alice").metadata == before
        # and the same connection still answers
        status, _, page = exchange(sock, host, "/ui/", cookie=cookie)
        assert status == 200 and "alice" in page


def test_bad_dates_and_deep_json_are_400_pages(seeded: Seeded) -> None:
    c = client(seeded)
    assert sign_in(c, "key-alice").status_code == 303
    r = c.get("/ui/search", params={"namespace": "alice", "q": "tea", "until": "10000-01-01"})
    assert is_html_page(r, 400) and "until must be a date" in r.text
    mid = seeded.ids["tea"]
    token = csrf_of(c.get(f"/ui/memories/{mid}?namespace=alice").text)
    for deep in ("[" * 30_000 + "]" * 30_000, '{"a": ' * 33 + "1" + "}" * 33,
                 '{"a": "' + "[" * 50_000 + '"' + "}"):
        r = c.post(f"/ui/memories/{mid}/edit?namespace=alice",
                   data={"csrf": token, "metadata": deep})
        if deep.startswith('{"a": "'):  # brackets inside a string are no nesting
            assert r.status_code == 303, r.text[:300]
        else:
            assert r.status_code == 400 and "max_metadata_depth" in r.text, r.text[:300]


def test_an_error_no_handler_takes_is_an_html_page(seeded: Seeded) -> None:
    # Fault injection: routes of the real dashboard that fail the way a bug would, and
    # the way an out-of-range date deep in a library does.
    app = create_app(seeded.settings, manager=seeded.mm)
    ui = ui_of(app)

    def bug() -> None:
        raise KeyError("a bug")

    def overflow() -> None:
        raise OverflowError("date value out of range")

    ui.router.add_api_route("/fault/bug", bug)
    ui.router.add_api_route("/fault/overflow", overflow)
    with TestClient(app, base_url="http://127.0.0.1:8765", client=LOOPBACK,
                    raise_server_exceptions=False, follow_redirects=False) as c:
        assert sign_in(c, "key-alice").status_code == 303
        r = c.get("/ui/fault/bug")
        assert is_html_page(r, 500) and "KeyError" in r.text and "a bug" not in r.text
        assert r.headers["content-security-policy"].startswith("default-src 'self'")
        r = c.get("/ui/fault/overflow")
        assert is_html_page(r, 400) and "out of range" in r.text
        assert c.get("/ui/").status_code == 200


# --- sign-in ---------------------------------------------------------------------------
def test_sign_in_needs_the_form_token_of_this_browser(seeded: Seeded) -> None:
    c = client(seeded)
    r = c.post("/ui/login", data={"key": "key-alice"})  # no token, no nonce cookie
    assert r.status_code == 403 and "hm_ui_session" not in r.headers.get("set-cookie", "")
    assert "did not come from this server" in r.text
    token = csrf_of(c.get("/ui/login").text)
    r = c.post("/ui/login", data={"key": "key-alice", "csrf": token + "x"})
    assert r.status_code == 403
    r = c.post("/ui/login", data={"key": "key-alice", "csrf": token},
               headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    other = client(seeded)  # another browser: the token is bound to the first's cookie
    other.get("/ui/login")
    r = other.post("/ui/login", data={"key": "key-alice", "csrf": token})
    assert r.status_code == 403
    r = c.post("/ui/login", data={"key": "key-alice", "csrf": token})
    assert r.status_code == 303 and "hm_ui_session=" in r.headers["set-cookie"]
    assert c.get("/ui/").status_code == 200


def test_failed_keys_back_off_per_client(seeded: Seeded) -> None:
    app = create_app(seeded.settings, manager=seeded.mm)
    here = TestClient(app, base_url="http://127.0.0.1:8765", client=("203.0.113.7", 4000),
                      follow_redirects=False)
    there = TestClient(app, base_url="http://127.0.0.1:8765", client=("203.0.113.8", 4000),
                       follow_redirects=False)
    for i in range(5):
        r = sign_in(here, f"wrong-{i}")
        assert r.status_code == 401 and "unknown API key" in r.text
    r = sign_in(here, "wrong-5")
    assert r.status_code == 429 and int(r.headers["retry-after"]) > 0
    assert r.headers["content-type"].startswith("text/html")
    assert "too many failed sign-ins" in r.text
    # while it backs off even the right key is not tried; another client signs in
    assert sign_in(here, "key-alice").status_code == 429
    assert sign_in(there, "key-alice").status_code == 303
    # an IPv6 client is counted by its /64
    throttle = LoginThrottle(max_failures=3)
    for n in range(3):
        throttle.failed(f"2001:db8:1:2::{n + 1}")
    assert throttle.retry_after("2001:db8:1:2:ffff::9") > 0
    assert throttle.retry_after("2001:db8:1:3::1") == 0


def test_the_failure_tracker_is_bounded() -> None:
    throttle = LoginThrottle(max_failures=5, max_clients=1_000)
    for n in range(20_000):
        throttle.failed(f"10.{n // 65536}.{n // 256 % 256}.{n % 256}")
    assert len(throttle) == 1_000
    for _ in range(5):
        throttle.failed("192.0.2.1")
    assert throttle.retry_after("192.0.2.1") > 0  # the newest are kept


def test_one_key_signing_in_1001_times_leaves_the_admin_signed_in(seeded: Seeded) -> None:
    app = create_app(seeded.settings, manager=seeded.mm)
    admin = TestClient(app, base_url="http://127.0.0.1:8765", client=LOOPBACK,
                       follow_redirects=False)
    assert sign_in(admin, "key-admin").status_code == 303
    assert admin.get("/ui/jobs").status_code == 200
    flood = TestClient(app, base_url="http://127.0.0.1:8765", client=LOOPBACK,
                       follow_redirects=False)
    token = csrf_of(flood.get("/ui/login").text)
    sessions: Sessions = ui_of(app).state.sessions
    first = ""
    for n in range(1_001):
        r = flood.post("/ui/login", data={"key": "key-alice", "csrf": token})
        assert r.status_code == 303
        if n == 0:
            first = flood.cookies["hm_ui_session"]
    assert admin.get("/ui/jobs").status_code == 200  # still signed in
    assert len(sessions) <= sessions.max_per_key + 1
    assert flood.get("/ui/").status_code == 200  # the newest alice session works
    flood.cookies.set("hm_ui_session", first, domain="127.0.0.1", path="/ui/")
    assert flood.get("/ui/").status_code == 303  # the oldest went


def test_the_session_cap_takes_from_the_key_holding_the_most() -> None:
    sessions = Sessions(max_sessions=50, max_per_key=20)
    admin, _ = sessions.create("key-admin")
    for key in ("k1", "k2", "k3", "k4"):
        for _ in range(20):
            sessions.create(key)
    assert len(sessions) == 50
    assert sessions.get(admin) is not None
    anonymous = [sessions.create(None)[0] for _ in range(25)]
    assert sessions.get(admin) is not None and sessions.get(anonymous[-1]) is not None
    assert json.dumps(len(sessions)) == "50"


def test_the_middlewares_answer_the_inspector_with_html_pages(seeded: Seeded) -> None:
    # a foreign Host and an oversized body are refused before any route runs: on /ui as
    # an HTML page, on /v1 as a problem with its error type like every other problem
    c = client(seeded, max_request_bytes=2048)
    r = c.get("/ui/", headers={"host": "evil.example"})
    assert r.status_code == 403 and r.headers["content-type"].startswith("text/html")
    assert "evil.example" in r.text and "<script" not in r.text
    r = c.post("/ui/login", content=b"k" * 5000, headers={"content-type": "text/plain"})
    assert r.status_code == 413 and r.headers["content-type"].startswith("text/html")
    r = c.get("/v1/stats", headers={"host": "evil.example"})
    assert r.status_code == 403 and r.json()["error"] == "HostNotAllowed"
    r = c.post("/v1/memories", content=b"k" * 5000, headers={"content-type": "text/plain"})
    assert r.status_code == 413 and r.json()["error"] == "PayloadTooLargeError"
