"""The README's relative links (issue 29: its sections moved to docs/ pages) lead to
files that exist, and a link's ``#anchor`` to a heading of that file. The site's own
links are checked by ``make docs`` (mkdocs --strict); the README is not part of it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _slug(heading: str) -> str:
    """GitHub's and Python-Markdown's anchor of a heading: lower case, punctuation
    dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def test_readme_links_resolve() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(local) >= 15
    for link in local:
        path, _, anchor = link.partition("#")
        target = REPO / path
        assert target.exists(), f"README links to {path}, which does not exist"
        if anchor:
            assert anchor in _anchors(target), f"{path} has no heading for #{anchor}"


def test_readme_stays_short() -> None:
    assert (REPO / "README.md").stat().st_size < 15_000
