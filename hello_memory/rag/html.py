"""The content of a web page, without its chrome.

A saved page carries navigation, a site header and footer, sidebars, menus, cookie
banners and share buttons around the text it is about; converted whole, those become
passages of their own ("Home | Products | About us | Contact") that a search returns.
:func:`strip_boilerplate` removes them before MarkItDown converts the page:

* ``script``, ``style``, ``noscript``, ``template``, ``iframe``, ``svg``, buttons,
  and anything hidden (``hidden``, ``aria-hidden="true"``, ``display:none``);
* when the page has a ``<main>`` (or ``role="main"``), or else exactly one
  ``<article>``, only that part is kept (the page's ``<title>`` stays the title);
* ``nav``, ``aside`` and ``dialog`` anywhere; ``header`` and ``footer`` that are not
  inside an ``article`` or ``section`` (an article's own header holds its title);
  landmark roles ``navigation``, ``banner``, ``contentinfo``, ``complementary``,
  ``search``;
* elements whose id or class names a chrome part (``menu``, ``navbar``,
  ``breadcrumb``, ``sidebar``, ``cookie...``, ``consent``, ``share``, ``social``,
  ``skip-link``, ``advert``, ``newsletter``, ...);
* outside ``main`` / ``article``, a list or block that is nothing but links (at least
  four, 80 % of its text): a menu by another name.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["strip_boilerplate"]

_DROP_TAGS = ("script", "style", "noscript", "template", "iframe", "svg", "canvas", "button",
              "select", "nav", "aside", "dialog", "menu")
_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "menu",
          "menubar", "dialog", "alertdialog"}
_CHROME = re.compile(
    r"^(nav|navbar|navigation|menu|menus|menubar|main-menu|site-menu|breadcrumbs?|sidebar|"
    r"side-bar|site-header|site-footer|masthead|skip|skip-link|skiplink|social|"
    r"social-links|share|sharing|share-buttons|advert|adverts|advertisement|ads|ad-banner|"
    r"promo|newsletter|subscribe|pagination|pager|related-posts|cookies?|"
    r"cookie[-_].*|.*[-_]cookies?|.*consent.*|gdpr.*|search-form|searchform)$", re.IGNORECASE)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
LINK_SHARE = 0.8
MIN_LINKS = 4


def _names(el: Any) -> list[str]:
    classes = el.get("class") or []
    if isinstance(classes, str):
        classes = classes.split()
    return [*classes, el.get("id") or ""]


def _is_chrome(el: Any) -> bool:
    if (el.get("role") or "").strip().lower() in _ROLES:
        return True
    if el.has_attr("hidden") or (el.get("aria-hidden") or "").lower() == "true":
        return True
    if _HIDDEN_STYLE.search(el.get("style") or ""):
        return True
    return any(_CHROME.match(n) for n in _names(el) if n)


def _link_block(el: Any) -> bool:
    links = el.find_all("a")
    if len(links) < MIN_LINKS:
        return False
    text = len(" ".join(el.get_text(" ").split()))
    linked = sum(len(" ".join(a.get_text(" ").split())) for a in links)
    return text > 0 and linked >= LINK_SHARE * text


def strip_boilerplate(data: bytes) -> bytes:
    """The page's bytes without navigation, header, footer, sidebars, menus and banners
    (UTF-8, whatever the page's own encoding was). Unparseable input is returned as is."""
    try:
        from bs4 import BeautifulSoup
    except ImportError:  # MarkItDown brings bs4; without it converting fails on its own
        return data
    try:
        soup = BeautifulSoup(data, "html.parser")
    except Exception:  # noqa: BLE001 - let the converter report the page
        return data
    for el in soup.find_all(_DROP_TAGS):
        el.decompose()
    for el in soup.find_all(True):
        if not el.decomposed and el.attrs is not None and _is_chrome(el):
            el.decompose()
    body: Any = soup.body or soup
    main = body.find("main") or body.find(attrs={"role": "main"})
    if main is None:
        articles = body.find_all("article")
        main = articles[0] if len(articles) == 1 else None
    if main is not None:
        main.extract()
        body.clear()
        body.append(main)
    for el in body.find_all(["header", "footer"]):
        if not el.decomposed and el.find_parent(["article", "section"]) is None:
            el.decompose()
    for el in body.find_all(["ul", "ol", "div", "p", "table", "section"]):
        if el.decomposed or el.find_parent(["main", "article"]) is not None \
                or el.name == "main":
            continue
        if _link_block(el):
            el.decompose()
    if not body.get_text(" ").strip():  # nothing but chrome? then the page as it was
        return data
    return soup.encode("utf-8")
