"""The memory inspector end to end: a real server on loopback, headless Chromium
(Debian's) driven by Playwright, every request that is not to the server aborted and
recorded. Each page is screenshotted at 1280x800 and at phone width into
tests/artifacts/ui/; with HELLO_MEMORY_UI_README_SHOTS=1 the search and graph shots
also go to docs/images/ (the README's pictures)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from .conftest import ARTIFACTS, REPO, Seeded

pytestmark = pytest.mark.slow
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
README_SHOTS = os.environ.get("HELLO_MEMORY_UI_README_SHOTS") == "1"
LOCAL = {"127.0.0.1", "localhost"}


@dataclass
class Tab:
    """One browser page with the network fenced to the test server."""

    page: Any
    base: str
    outside: list[str] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def go(self, path: str) -> Any:
        return self.page.goto(self.base + path)

    def submit(self, selector: str) -> Any:
        """Click what submits a form and wait for the page it leads to."""
        with self.page.expect_navigation() as nav:
            self.page.click(selector)
        return nav.value

    def shot(self, name: str, *, readme: str | None = None, down_to: Any = None) -> None:
        """Screenshots at desktop and phone width; at phone width the page must not
        scroll sideways (tables scroll inside their own box)."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page = self.page
        page.screenshot(path=str(ARTIFACTS / f"{name}-desktop.png"), full_page=True)
        if readme and README_SHOTS:
            images = REPO / "docs" / "images"
            images.mkdir(parents=True, exist_ok=True)
            clip = None
            if down_to is not None:  # the page from its top to the end of this element
                box = down_to.bounding_box()
                clip = {"x": 0, "y": 0, "width": DESKTOP["width"],
                        "height": box["y"] + box["height"] + 24}
            page.screenshot(path=str(images / readme), full_page=True, clip=clip)
        page.set_viewport_size(PHONE)
        try:
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"] + 1, f"{name}: {width}px wide at phone width"
            page.screenshot(path=str(ARTIFACTS / f"{name}-phone.png"), full_page=True)
        finally:
            page.set_viewport_size(DESKTOP)


@pytest.fixture
def tab(browser: Any, server: str) -> Iterator[Tab]:
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    t = Tab(page, server + "/ui")

    def fence(route: Any) -> None:
        if urlsplit(route.request.url).hostname in LOCAL:
            route.continue_()
        else:
            t.outside.append(route.request.url)
            route.abort()

    context.route("**/*", fence)
    page.on("request", lambda r: t.requested.append(r.url))
    # script errors and policy violations; a 4xx page the test asks for is no error
    page.on("console", lambda m: t.errors.append(m.text) if m.type == "error"
            and not m.text.startswith("Failed to load resource") else None)
    page.on("pageerror", lambda e: t.errors.append(str(e)))
    try:
        yield t
    finally:
        context.close()
    assert t.outside == [], f"requests left localhost: {t.outside}"
    for url in t.requested:
        parts = urlsplit(url)
        assert parts.scheme in ("data", "blob") or parts.hostname in LOCAL, url


def login(t: Tab, key: str) -> None:
    t.go("/")
    t.page.wait_for_url(re.compile(r"/ui/login"))
    t.page.fill("#key", key)
    t.submit("button[type=submit]")


def test_login_search_explain_open_forget_restore(tab: Tab, seeded: Seeded,
                                                   server: str) -> None:
    page = tab.page
    tab.go("/")
    page.wait_for_url(re.compile(r"/ui/login"))
    assert "Berlin" not in page.content()
    tab.shot("login")
    page.fill("#key", "not-a-key")
    tab.submit("button[type=submit]")
    assert "unknown API key" in page.inner_text("main")
    page.fill("#key", "key-alice")
    tab.submit("button[type=submit]")
    page.wait_for_url(server + "/ui/")
    cards = page.locator("[data-testid=ns-card]")
    assert cards.count() == 1 and "alice" in cards.first.inner_text()
    assert "bob" not in page.inner_text("main")
    assert re.search(r"documents\s+1", cards.first.inner_text())
    tab.shot("namespaces")

    # search: the one engine, in the same order as the REST API answers
    tab.submit("text=Search")
    page.fill("#q", "Where does Alice live?")
    tab.submit(".search-form button[type=submit]")
    hits = page.locator("[data-testid=hit]")
    hits.first.wait_for()
    shown = [h.get_attribute("href").split("/memories/")[1].split("?")[0]
             for h in page.locator("[data-testid=open-memory]").all()]
    rest = httpx.post(server + "/v1/search", params={"namespace": "alice"},
                      headers={"Authorization": "Bearer key-alice"},
                      json={"query": "Where does Alice live?", "top_k": 10}).json()
    assert shown == [h["id"] for h in rest["hits"]]
    assert seeded.ids["berlin"] in shown
    plan = page.inner_text("[data-testid=plan]")
    assert "live" in plan and "Alice" in plan
    at = shown.index(seeded.ids["berlin"])
    hit = hits.nth(at)
    explanation = hit.locator("[data-testid=explanation]")
    assert not explanation.is_visible()
    hit.locator("summary").click()
    assert explanation.is_visible()
    text = explanation.inner_text()
    assert "semantic" in text and "similarity" in text and "fused" in text
    views = rest["hits"][at]["views"]
    for view, vh in views.items():
        assert re.search(rf"{view}\s+{vh['rank']}\s", text), (view, text)
    tab.shot("search", readme="ui-search.png", down_to=hit)

    # a memory's page, then forget and restore it (each confirmed first)
    hit.locator("[data-testid=open-memory]").click()
    page.wait_for_url(re.compile(r"/ui/memories/"))
    assert "Berlin" in page.inner_text("[data-testid=content]")
    fields = page.inner_text("[data-testid=fields]")
    assert seeded.ids["berlin"] in fields and "superseded_by" in fields
    assert page.locator("a.chip", has_text="Berlin").count() == 1
    tab.shot("memory")
    tab.submit("button:text-is('Forget')")
    assert "Forget this memory?" in page.inner_text("main")
    tab.shot("confirm")
    tab.submit("button:text-is('Forget')")
    assert page.inner_text("[data-testid=status]") == "forgotten"
    assert seeded.mm.get(seeded.ids["berlin"], namespace="alice").status.value == "forgotten"
    tab.submit("button:text-is('Restore')")
    tab.submit("button:text-is('Restore')")
    assert page.inner_text("[data-testid=status]") == "active"
    assert "Memory restored." in page.inner_text("[data-testid=flash]")

    # edit importance and metadata; bad JSON is refused with the reason
    page.fill("#importance", "0.95")
    page.fill("#metadata", '{"source": "inspector"}')
    tab.submit("button:text-is('Save')")
    assert "Memory saved." in page.inner_text("[data-testid=flash]")
    item = seeded.mm.get(seeded.ids["berlin"], namespace="alice")
    assert item.importance == 0.95 and item.metadata == {"source": "inspector"}
    page.fill("#metadata", "{not json")
    tab.submit("button:text-is('Save')")
    assert "metadata is not JSON" in page.inner_text("main")
    assert seeded.mm.get(seeded.ids["berlin"], namespace="alice").metadata == {
        "source": "inspector"}
    assert tab.errors == []


def test_foreign_namespace_is_refused(tab: Tab, seeded: Seeded, server: str) -> None:
    page = tab.page
    response = tab.go("/search?namespace=bob&q=cake")
    page.wait_for_url(re.compile(r"/ui/login"))  # nothing without a key
    assert "plum" not in page.content()
    login(tab, "key-alice")
    for path in ("/search?namespace=bob&q=cake", "/timeline?namespace=bob",
                 "/graph?namespace=bob", "/documents?namespace=bob",
                 f"/memories/{seeded.ids['bob']}?namespace=bob"):
        response = tab.go(path)
        assert response.status == 403, path
        assert "may not use namespace 'bob'" in page.inner_text("[data-testid=error-detail]")
        assert "plum" not in page.content()
    tab.shot("refused")
    # bob's memory asked for under alice's namespace does not exist there
    response = tab.go(f"/memories/{seeded.ids['bob']}?namespace=alice")
    assert response.status == 404 and "plum" not in page.content()
    response = tab.go("/jobs")
    assert response.status == 403 and "admin key" in page.inner_text("main")
    # a form without the session's CSRF token changes nothing
    r = page.request.post(tab.base + f"/memories/{seeded.ids['tea']}/delete?namespace=alice",
                          form={"csrf": "forged", "confirm": "yes"})
    assert r.status == 403
    assert seeded.mm.get(seeded.ids["tea"], namespace="alice").content
    # signing out ends the session
    tab.go("/")
    tab.submit("button:text-is('Sign out')")
    page.wait_for_url(re.compile(r"/ui/login"))
    tab.go("/timeline?namespace=alice")
    page.wait_for_url(re.compile(r"/ui/login"))
    assert tab.errors == []


def test_timeline_graph_documents_jobs(tab: Tab, seeded: Seeded, browser: Any) -> None:
    page = tab.page
    login(tab, "key-admin")
    page.wait_for_url(tab.base + "/")
    assert page.locator("[data-testid=ns-card]").count() == 2  # an admin sees both
    tab.go("/timeline?namespace=alice")
    buckets: Callable[[], list[str]] = lambda: page.locator(  # noqa: E731
        ".bucket h2 span").all_inner_texts()
    assert buckets()[0] == "Thu 03 Oct 2024" and len(buckets()) == 7
    tab.shot("timeline-day")
    page.check("input[name=zoom][value=week]")
    tab.submit("button:text-is('Show')")
    assert buckets()[0].startswith("Week 40, 2024") and len(buckets()) == 6
    page.check("input[name=zoom][value=month]")
    tab.submit("button:text-is('Show')")
    assert buckets() == ["October 2024", "September 2024", "July 2024", "June 2024",
                         "May 2024"]
    tab.shot("timeline-month")
    page.select_option("select[name=session]", "trip-planning")
    tab.submit("button:text-is('Show')")
    assert buckets() == ["September 2024"]
    assert page.locator(".bucket li").count() == 2

    # the graph, drawn by the bundled Cytoscape; an entity leads to its memories
    tab.go("/graph?namespace=alice")
    page.wait_for_selector("#graph[data-ready=true] canvas")
    names = page.locator(".cols a").all_inner_texts()
    assert {"Berlin", "Acme Robotics", "Priya Natarajan"} <= set(names)
    tab.go("/graph?namespace=alice&entity=Acme%20Robotics")
    page.wait_for_selector("#graph[data-ready=true] canvas")
    tab.shot("graph", readme="ui-graph.png")
    mentions = page.inner_text("[data-testid=entity-memories]")
    assert "Berlin" in mentions and "Priya Natarajan" in mentions
    tab.submit("[data-testid=entity-memories] a >> nth=0")
    page.wait_for_url(re.compile(r"/ui/memories/"))

    # documents: the list, one document's chunks with their headings, delete
    tab.go("/documents?namespace=alice")
    tab.shot("documents")
    tab.submit("[data-testid=documents] a")
    chunks = page.inner_text("[data-testid=chunks]")
    assert "Leave" in chunks and "Travel" in chunks
    tab.shot("document")
    tab.submit("button:text-is('Delete…')")
    tab.submit("button:text-is('Delete document')")
    page.wait_for_url(re.compile(r"/ui/documents\?"))
    assert "Document deleted." in page.inner_text("main")
    assert seeded.mm.stores.records.documents.list_documents("alice") == []

    # jobs: schedules and last results; a dry run now
    tab.go("/jobs")
    forget = page.locator("article", has=page.locator("h2", has_text="forget")).first
    with page.expect_navigation():
        forget.locator("button:text-is('Run now')").click()
    result = page.inner_text("[data-testid=job-result]")
    assert "forget: 2 runs" in result and "alice" in result and "bob" in result
    tab.shot("jobs")
    assert seeded.mm.get(seeded.ids["tea"], namespace="alice").status.value == "active"
    assert tab.errors == []


def test_docs_are_served_from_local_files(tab: Tab, server: str) -> None:
    html = httpx.get(server + "/docs").text
    assert "://" not in html, "the /docs page names an outside address"
    page = tab.page
    page.goto(server + "/docs")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "hello-memory" in page.inner_text(".swagger-ui .info .title")
    page.wait_for_selector(".opblock-summary-path[data-path='/v1/search']")
    tab.shot("docs")
    assert all(urlsplit(u).path != "/redoc" for u in tab.requested)
    assert httpx.get(server + "/redoc").status_code == 404
    assert tab.errors == []
