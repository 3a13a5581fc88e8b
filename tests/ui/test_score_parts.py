"""The inspector's search page shows every part of a hit's score (issue 26: every factor
that changes a rank appears in the inspector too)."""

from __future__ import annotations

import re

import pytest

from .conftest import Seeded
from .test_ui_http import client, sign_in

pytestmark = pytest.mark.slow


def test_the_search_page_shows_the_parts_of_each_score(seeded: Seeded) -> None:
    c = client(seeded)
    assert sign_in(c, "key-alice").status_code == 303
    page = c.get("/ui/search", params={"namespace": "alice", "q": "tea"})
    assert page.status_code == 200
    parts = page.text[page.text.index('data-testid="score-parts"'):]
    for name in ("profile", "evidence", "time", "when", "subject"):
        assert re.search(rf"<dt>{name}</dt>", parts), name
