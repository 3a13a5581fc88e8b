"""Backends are chosen from a registry per kind (issue 31, item 1; factory.py): the
vector index and the graph by their ``provider`` setting, the records by the dialect
of ``records.url``. A new backend is one builder and one registry line: the tests swap
a registry entry and see every store opened through it."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest

from hello_memory import factory
from hello_memory.config import QdrantSettings, Settings, load_settings
from hello_memory.config_sections import Neo4jGraphSettings, SqliteGraphSettings
from hello_memory.errors import ConfigError
from hello_memory.memory.manager import MemoryManager


def _literals(model: Any, field: str) -> set[str]:
    return set(typing.get_args(model.model_fields[field].annotation))


def test_each_registry_covers_every_provider_the_settings_accept() -> None:
    assert set(factory.VECTOR_BACKENDS) == _literals(QdrantSettings, "provider")
    assert set(factory.GRAPH_BACKENDS) == (_literals(SqliteGraphSettings, "provider")
                                           | _literals(Neo4jGraphSettings, "provider"))
    assert {"sqlite", "postgresql"} <= set(factory.RECORD_BACKENDS)


def test_stores_are_opened_through_the_registries(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []

    def counted(kind: str, real: Any) -> Any:
        def build(*args: Any) -> Any:
            built.append(kind)
            return real(*args)
        return build

    monkeypatch.setitem(factory.VECTOR_BACKENDS, "qdrant",
                        counted("vector", factory.VECTOR_BACKENDS["qdrant"]))
    monkeypatch.setitem(factory.GRAPH_BACKENDS, "sqlite",
                        counted("graph", factory.GRAPH_BACKENDS["sqlite"]))
    monkeypatch.setitem(factory.RECORD_BACKENDS, "sqlite",
                        counted("records", factory.RECORD_BACKENDS["sqlite"]))
    with MemoryManager.open(load_settings(environ={}, data_dir=tmp_path)) as mm:
        mm.add("Anna works at the Rijksmuseum.", namespace="r", memory_type="semantic")
        assert mm.search("Where does Anna work?", namespace="r")[0].item.content.startswith(
            "Anna")
    assert sorted(built) == ["graph", "records", "vector"]


def test_a_records_url_no_backend_serves_is_refused_by_name(tmp_path: Path) -> None:
    settings: Settings = load_settings(environ={}, data_dir=tmp_path,
                                       records={"url": "mysql://db.example/memories"})
    with pytest.raises(ConfigError, match="no records backend for 'mysql'.*postgresql"):
        factory.build_record_store(settings)
