"""Settings: layering, validation, and no I/O at import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pydantic
import pytest

from hello_memory.config import Neo4jGraphSettings, Settings, SqliteGraphSettings, load_settings
from hello_memory.errors import ConfigError, UnknownConfigKeyError

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "cfg.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def test_defaults_are_embedded() -> None:
    s = load_settings(environ={})
    assert isinstance(s.graph, SqliteGraphSettings)
    assert s.records_url() == "sqlite:///.hello_memory/records.db"
    assert s.qdrant_path() == ".hello_memory/qdrant"
    assert s.embedding.model == "all-MiniLM-L6-v2"
    assert s.working.capacity == 50 and s.working.ttl_minutes == 60
    assert s.llm.provider == "none"


def test_shipped_config_files_validate() -> None:
    default = load_settings(REPO / "configs" / "default.yaml", environ={})
    assert default == load_settings(environ={})
    docker = load_settings(REPO / "configs" / "docker.yaml", environ={})
    assert isinstance(docker.graph, Neo4jGraphSettings)
    assert docker.vector.url == "http://localhost:6333"
    assert docker.qdrant_path() is None


def test_priority_args_over_env_over_file_over_defaults(tmp_path: Path) -> None:
    cfg = write(tmp_path, "embedding:\n  batch_size: 8\n  device: cpu\nworking:\n  capacity: 7\n")
    env = {"HELLO_MEMORY__EMBEDDING__BATCH_SIZE": "16", "HELLO_MEMORY__WORKING__TTL_MINUTES": "5"}
    s = load_settings(cfg, environ=env, embedding={"batch_size": 32})
    assert s.embedding.batch_size == 32   # argument
    assert s.working.ttl_minutes == 5     # env
    assert s.working.capacity == 7        # file
    assert s.embedding.device == "cpu"    # file, sibling of an overridden key
    assert s.embedding.normalize is True  # default
    s = load_settings(cfg, environ=env)
    assert s.embedding.batch_size == 16


def test_config_file_from_env_var(tmp_path: Path) -> None:
    cfg = write(tmp_path, "default_namespace: team-a\n")
    assert load_settings(environ={"HELLO_MEMORY_CONFIG": str(cfg)}).default_namespace == "team-a"


def test_graph_backend_selected_from_env() -> None:
    s = load_settings(environ={"HELLO_MEMORY__GRAPH__PROVIDER": "neo4j",
                               "HELLO_MEMORY__GRAPH__URI": "bolt://db:7687"})
    assert isinstance(s.graph, Neo4jGraphSettings) and s.graph.uri == "bolt://db:7687"


@pytest.mark.parametrize(
    ("kwargs", "key", "where"),
    [
        ({"environ": {}, "vector": {"urll": "x"}}, "vector.urll", "arguments"),
        ({"environ": {"HELLO_MEMORY__VECTOR__URLL": "x"}}, "vector.urll", "environment"),
        ({"environ": {"HELLO_MEMORY__NOPE": "1"}}, "nope", "environment"),
        ({"environ": {"HELLO_MEMORY__GRAPH__PROVIDER": "neo4j",
                      "HELLO_MEMORY__GRAPH__PASWORD": "x"}}, "graph.pasword", "environment"),
    ],
)
def test_unknown_keys_are_named(kwargs: dict, key: str, where: str) -> None:
    with pytest.raises(UnknownConfigKeyError) as info:
        load_settings(**kwargs)
    assert info.value.key == key
    assert key in str(info.value) and where in str(info.value)


def test_unknown_key_in_file_names_file(tmp_path: Path) -> None:
    cfg = write(tmp_path, "records:\n  uri: sqlite://\n")
    with pytest.raises(UnknownConfigKeyError, match="records.uri") as info:
        load_settings(cfg, environ={})
    assert str(cfg) in str(info.value)


@pytest.mark.parametrize(
    "text",
    ["vector:\n  path: a\n  url: http://x\n",      # ambiguous target
     "embedding:\n  batch_size: 0\n",               # out of range
     "graph:\n  provider: arangodb\n",              # unknown backend
     "- a list\n",                                  # not a mapping
     "key: [unclosed\n"],                           # not YAML
)
def test_invalid_values_raise_config_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError):
        load_settings(write(tmp_path, text), environ={})


def test_missing_file_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path / "absent.yaml", environ={})


def test_settings_are_frozen() -> None:
    s = load_settings(environ={})
    with pytest.raises(pydantic.ValidationError):
        s.embedding.batch_size = 3  # type: ignore[misc]
    assert isinstance(s, Settings)


def test_import_reads_no_env_and_opens_nothing(tmp_path: Path) -> None:
    # A broken config in the environment must not break `import hello_memory`:
    # settings are read only when load_settings() is called.
    code = "import hello_memory, hello_memory.config, sys; print('torch' in sys.modules)"
    env = {"PATH": "/usr/bin:/bin", "HELLO_MEMORY_CONFIG": str(tmp_path / "missing.yaml"),
           "HELLO_MEMORY__BOGUS": "1", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # heavy libraries load lazily
    assert list(tmp_path.iterdir()) == []  # no data directory created
