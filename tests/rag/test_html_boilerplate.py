"""A web page's chrome (navigation, site header and footer, sidebars, menus, cookie
banners) stays out of its chunks (issue 20); the article's text, headings and links
inside it stay in."""

from __future__ import annotations

from pathlib import Path

import pytest

from hello_memory.rag import RAGPipeline
from hello_memory.rag.html import strip_boilerplate
from hello_memory.rag.loaders import to_markdown

pytestmark = pytest.mark.slow

CHROME = ["Home", "Products", "Pricing", "About us", "Contact", "We use cookies",
          "Accept all", "Privacy policy", "Imprint", "Subscribe to our newsletter",
          "Popular posts", "Skip to content", "Share on"]
NAV = """<a href="#c" class="skip-link">Skip to content</a>
<header class="site-header"><a href="/">Acme</a>
  <nav><ul><li><a href="/">Home</a></li><li><a href="/p">Products</a></li>
  <li><a href="/pr">Pricing</a></li><li><a href="/a">About us</a></li>
  <li><a href="/c">Contact</a></li></ul></nav></header>
<div id="cookie-banner">We use cookies to improve your experience.
  <button>Accept all</button></div>"""
FOOT = """<aside><h3>Popular posts</h3><ul><li><a href="/1">Ten tips</a></li></ul></aside>
<div class="newsletter">Subscribe to our newsletter</div>
<footer><a href="/privacy">Privacy policy</a> | <a href="/imprint">Imprint</a></footer>"""
ARTICLE = """<h1>Repotting orchids</h1>
<p>Repot an orchid every two years, just after it has finished flowering.</p>
<h2>Choosing a pot</h2>
<p>Use a clear plastic pot with drainage holes, so you can see the roots. See the
<a href="/guide">watering guide</a> for the next steps.</p>
<div class="share">Share on <a href="/x">X</a> <a href="/f">Facebook</a></div>"""


def page(with_main: bool) -> str:
    content = f"<main>{ARTICLE}</main>" if with_main else (
        f'<div class="content">{ARTICLE}</div>'
        '<div class="links"><a href="/a">Home</a> <a href="/b">Products</a> '
        '<a href="/c">Pricing</a> <a href="/d">Contact</a></div>')
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Orchids - Acme</title>"
            f"</head><body>{NAV}{content}{FOOT}</body></html>")


@pytest.mark.parametrize("with_main", [True, False], ids=["main", "no-main"])
def test_chrome_is_left_out_of_the_markdown(with_main: bool) -> None:
    markdown, title = to_markdown("orchids.html", ".html", page(with_main).encode())
    assert title == "Orchids - Acme"
    assert "# Repotting orchids" in markdown and "## Choosing a pot" in markdown
    assert "Repot an orchid every two years" in markdown
    assert "[watering guide](/guide)" in markdown  # links in the text stay
    for text in CHROME:
        assert text not in markdown, text


def test_chunks_of_a_page_hold_only_its_content(rag: RAGPipeline, tmp_path: Path) -> None:
    (tmp_path / "orchids.html").write_text(page(False), encoding="utf-8")
    assert rag.ingest([tmp_path / "orchids.html"], namespace="kb").files == 1
    [doc] = rag.documents("kb")
    chunks = rag.index.records.documents.document_chunks("kb", doc.id)
    assert [c.heading_path for c in chunks] == [
        "Repotting orchids", "Repotting orchids > Choosing a pot"]
    text = " ".join(c.content for c in chunks)
    assert not [t for t in CHROME if t in text]
    hits = rag.search("navigation menu home products pricing contact", namespace="kb")
    assert all("Pricing" not in h.content for h in hits)


def test_a_page_that_is_only_links_is_kept() -> None:
    links = "".join(f'<li><a href="/{i}">Link {i}</a></li>' for i in range(6))
    data = f"<html><body><ul>{links}</ul></body></html>".encode()
    assert strip_boilerplate(data) == data  # nothing else to keep: the page as it was
