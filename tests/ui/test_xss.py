"""An XSS corpus over every inspector page, in Debian's Chromium (issue 28, item 6;
docs/RELIABILITY.md "The inspector"): memories, metadata keys and values, session and
user ids, entity names (quoted terms of semantic memories), a namespace, a document's
name, headings and text, search queries, filters and URL paths all hold payloads that
close a script element, open a <meta refresh>, an <img onerror>, a <style> or an <svg
onload>. On every page: no navigation away, no outside request, no script ran (a
window flag), no policy violation (an injected inline style or script would report
one) and no injected element in the DOM; the payloads are shown as text. A foreign
site's auto-submitted sign-in form signs the browser in with nobody's key."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import pytest

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.text.entities import RuleExtractor

from .conftest import KEYS, Seeded

pytestmark = pytest.mark.slow

PAYLOADS = [
    '</script><meta http-equiv="refresh" content="0;url=http://example.invalid/" data-xss>',
    '"><img src=x onerror="window.__xss=1" data-xss>',
    "'><svg data-xss onload=window.__xss=1>",
    "<style data-xss>body{display:none}</style>",
    "<script data-xss>window.__xss=1</script>",
    "</SCRIPT ><!-- \u2028\u2029 {{7*7}} ${7*7} &lt;b&gt;",
]
ALL = " ".join(PAYLOADS)
# Entity names come from quoted terms (at most 60 characters inside the quotes).
ENTITY = "</script><meta http-equiv=refresh content=0;url=//x.invalid>"
ENTITY_IMG = "<img src=x data-xss onerror=window.__xss=1>"
HOSTILE_NS = 'ns"><img src=x data-xss onerror=window.__xss=1>'
NAMESPACES = ("alice", HOSTILE_NS)
LOCAL = {"127.0.0.1", "localhost"}
ATTACKER = "http://attacker.invalid/"

WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__violations.push(e.violatedDirective + " " + e.blockedURI + " " + (e.sample || ""));
});
"""
INJECTED = """() => ({
  flagged: document.querySelectorAll("[data-xss]").length,
  metas: document.querySelectorAll("meta[http-equiv]").length,
  styles: document.querySelectorAll("style").length,
  inlineScripts: Array.from(document.scripts).filter(
      (s) => !s.src && s.type !== "application/json").length,
  svgs: document.querySelectorAll("svg").length,
  images: Array.from(document.images).map((i) => i.getAttribute("src")),
  flag: window.__xss === undefined ? null : String(window.__xss),
  violations: window.__violations || [],
})"""
CLEAN = {"flagged": 0, "metas": 0, "styles": 0, "inlineScripts": 0, "svgs": 0,
         "images": [], "flag": None, "violations": []}


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)  # type: ignore[misc]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Seeded]:
    """The hostile corpus, in alice's namespace and in a namespace whose name is a
    payload (the ui conftest's server serves this module's ``seeded``)."""
    from hello_memory.interfaces.tools.rag_access import build_rag

    data = tmp_path_factory.mktemp("xss") / "data"
    settings = load_settings(environ={}, data_dir=data, api={"api_keys": KEYS})
    mm = MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor(),
                       default_namespace=settings.default_namespace)
    rag = build_rag(mm, settings)
    ids: dict[str, str] = {}
    try:
        for ns in NAMESPACES:
            ids[f"{ns}/semantic"] = mm.add(
                f"Alice quoted “{ENTITY}” and “{ENTITY_IMG}” at Acme Robotics.",
                "semantic", namespace=ns, event_time=utc(2024, 5, 6, 9),
                metadata={PAYLOADS[0]: PAYLOADS[1], "nested": {PAYLOADS[2]: [PAYLOADS[3]]},
                          "note": ALL},
                user_id=PAYLOADS[2], agent_id=PAYLOADS[4]).id
            ids[f"{ns}/episodic"] = mm.add(
                ALL, "episodic", namespace=ns, event_time=utc(2024, 9, 12, 15),
                session_id=PAYLOADS[1], metadata={"source": PAYLOADS[0]}).id
            ids[f"{ns}/working"] = mm.add(PAYLOADS[4], "working", namespace=ns,
                                          event_time=utc(2024, 10, 3, 7)).id
            ids[f"{ns}/document"] = str(rag.add_text(
                f"# {PAYLOADS[0]}\n\n## {PAYLOADS[1]}\n\n{ALL}\n", namespace=ns,
                source=f"{PAYLOADS[1]}.md"))
        yield Seeded(settings, mm, ids, ids["alice/document"])
    finally:
        mm.close()


@dataclass
class Browser:
    """One page with the network fenced to the test server (and the attacker's page,
    answered here), every main-frame navigation recorded."""

    page: Any
    server: str
    outside: list[str] = field(default_factory=list)
    navigations: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def visit(self, path: str) -> Any:
        response = self.page.goto(self.server + "/ui" + path)
        self.page.wait_for_load_state("load")
        return response

    def injected(self) -> dict[str, Any]:
        found: dict[str, Any] = self.page.evaluate(INJECTED)
        return found


@pytest.fixture
def browser_tab(browser: Any, server: str) -> Iterator[Browser]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(WATCH)
    page = context.new_page()
    tab = Browser(page, server)

    def fence(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).hostname in LOCAL:
            route.continue_()
        elif url.startswith(ATTACKER):
            route.fulfill(status=200, content_type="text/html", body=attacker_page(server))
        else:
            tab.outside.append(url)
            route.abort()

    context.route("**/*", fence)
    page.on("framenavigated", lambda frame: tab.navigations.append(frame.url)
            if frame == page.main_frame else None)
    page.on("console", lambda m: tab.errors.append(m.text) if m.type == "error"
            and not m.text.startswith("Failed to load resource") else None)
    page.on("pageerror", lambda e: tab.errors.append(str(e)))
    try:
        yield tab
    finally:
        context.close()


def attacker_page(server: str) -> str:
    return (f'<!doctype html><form method="post" action="{server}/ui/login">'
            '<input name="key" value="key-alice"><input name="next" value="/ui/">'
            '<input name="csrf" value="guess"></form>'
            "<script>document.forms[0].submit()</script>")


def sign_in(tab: Browser, key: str) -> None:
    tab.visit("/login")
    tab.page.fill("#key", key)
    with tab.page.expect_navigation():
        tab.page.click("button[type=submit]")


def q(**params: str) -> str:
    return "?" + urlencode(params)


def test_every_page_shows_the_payloads_as_text(browser_tab: Browser, seeded: Seeded,
                                                server: str) -> None:
    tab, page = browser_tab, browser_tab.page
    pages_seen: list[tuple[str, int]] = []

    def check(path: str, *, status: int | None = 200, visit: bool = True) -> None:
        if visit:
            response = tab.visit(path)
            got = response.status if response else 0
            assert status is None or got == status, (path, got)
            pages_seen.append((path, got))
        assert urlsplit(page.url).hostname in LOCAL, (path, page.url)
        assert tab.injected() == CLEAN, path

    # signed out: the sign-in page with a hostile next, and a refused hostile key
    check(q(next=ALL).join(["/login", ""]))
    page.fill("#key", ALL)
    with page.expect_navigation():
        page.click("button[type=submit]")
    check("/login", status=None, visit=False)
    sign_in(tab, "key-admin")

    check("/")
    main = page.inner_text("main")
    assert HOSTILE_NS in main  # the namespace's name, shown as text
    for ns in NAMESPACES:
        n = {"namespace": ns}
        check("/search" + q(q=ALL, **n))
        assert page.locator("[data-testid=hit]").count() >= 1
        check("/search" + q(q="Acme", session=PAYLOADS[1], **n))
        check("/search" + q(q="Acme", since=PAYLOADS[0], **n), status=400)
        assert PAYLOADS[0] in page.inner_text("[data-testid=error-detail]")
        for zoom in ("day", "week", "month"):
            check("/timeline" + q(zoom=zoom, **n))
        check("/timeline" + q(session=PAYLOADS[1], **n))
        assert ALL.split(" ")[0] in page.inner_text("[data-testid=timeline]")

        # the graph: the payload entity names reach Cytoscape as data, intact
        for entity in ("", ENTITY):
            check("/graph" + q(entity=entity, **n))
            page.wait_for_selector("#graph[data-ready=true] canvas", timeout=15_000)
            labels = page.evaluate("JSON.parse(document.getElementById('graph-data')"
                                   ".textContent).nodes.map((n) => n.data.label)")
            assert ENTITY in labels and ENTITY_IMG in labels, labels
            assert page.evaluate("getComputedStyle(document.getElementById('graph'))"
                                 ".position") == "relative"
            assert ENTITY in page.inner_text("main")
            check("/graph" + q(entity=entity, **n), visit=False)  # after drawing too
        check("/graph" + q(entity=ENTITY_IMG + "?", **n), status=404)

        for kind in ("semantic", "episodic", "working"):
            mid = seeded.ids[f"{ns}/{kind}"]
            check(f"/memories/{mid}" + q(**n))
            content = page.inner_text("[data-testid=content]")
            assert content == seeded.mm.get(mid, namespace=ns).content
        assert PAYLOADS[1] in page.inner_text("main") or kind == "working"
        mid = seeded.ids[f"{ns}/semantic"]
        check(f"/memories/{mid}" + q(**n))
        assert ENTITY in page.inner_text("main") and PAYLOADS[2] in page.inner_text(
            "[data-testid=fields]")
        assert PAYLOADS[3] in page.input_value("#metadata")
        # the confirm page quotes the memory
        with page.expect_navigation():
            page.click("button:text-is('Forget')")
        assert "Forget this memory?" in page.inner_text("main")
        check("", visit=False)

        doc = seeded.ids[f"{ns}/document"]
        check("/documents" + q(**n))
        assert PAYLOADS[1] + ".md" in page.inner_text("[data-testid=documents]")
        check(f"/documents/{doc}" + q(**n))
        assert PAYLOADS[1] in page.inner_text("[data-testid=chunks]")
        check(f"/memories/{quote(ALL, safe='')}" + q(**n), status=404)

    check("/" + quote(PAYLOADS[1], safe=""), status=404)
    check("/jobs")
    forget = page.locator("article", has=page.locator("h2", has_text="forget")).first
    with page.expect_navigation():
        forget.locator("button:text-is('Run now')").click()
    assert HOSTILE_NS in page.inner_text("[data-testid=job-result]")
    check("", visit=False)

    assert tab.outside == [], tab.outside
    assert all(urlsplit(u).hostname in LOCAL for u in tab.navigations), tab.navigations
    assert tab.errors == [], tab.errors
    assert len(pages_seen) >= 30, pages_seen


def test_a_cross_site_sign_in_form_signs_nobody_in(browser_tab: Browser, server: str
                                                  ) -> None:
    tab, page = browser_tab, browser_tab.page
    tab.visit("/login")  # the browser has the sign-in form's nonce cookie already
    with page.expect_response(lambda r: r.request.method == "POST"
                              and urlsplit(r.url).path == "/ui/login") as posted:
        page.goto(ATTACKER)
    assert posted.value.status == 403
    page.wait_for_url(re.compile(r"/ui/login$"))
    assert "did not come from this server" in page.inner_text("main")
    assert not any(c["name"] == "hm_ui_session" for c in page.context.cookies())
    tab.visit("/")
    assert urlsplit(page.url).path == "/ui/login"  # not signed in as anybody
    assert tab.outside == []
