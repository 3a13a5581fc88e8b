"""Typed settings.

Priority, highest first: arguments passed to :func:`load_settings` (or to
``Settings(...)``) > environment variables ``HELLO_MEMORY__SECTION__KEY`` > the YAML
file (``config_file=`` argument, else ``HELLO_MEMORY_CONFIG``) > built-in defaults.

One pydantic model per backend, ``extra="forbid"`` everywhere: a misspelt key is an
:class:`~hello_memory.errors.UnknownConfigKeyError` naming the key. Nothing here reads
the environment or the disk at import time; :func:`load_settings` does, when called.

This module holds the root :class:`Settings` and :func:`load_settings`; the section
models (``RecordSettings`` ... ``RagSettings``) and ``EMBEDDING_PRESETS`` are defined in
``hello_memory.config_sections`` and re-exported here, the path to import them from.
"""

from __future__ import annotations

import contextvars
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from hello_memory.config_sections import (
    _NEXT_TYPE as _NEXT_TYPE,
)
from hello_memory.config_sections import (
    _PREV_TYPE as _PREV_TYPE,
)
from hello_memory.config_sections import (
    EMBEDDING_PRESETS as EMBEDDING_PRESETS,
)
from hello_memory.config_sections import (
    ApiSettings,
    EmbeddingSettings,
    GraphSettings,
    HnswSettings,
    JobsSettings,
    LimitsSettings,
    LLMSettings,
    MemorySettings,
    Neo4jGraphSettings,
    ObservabilitySettings,
    PerceptualSettings,
    PgVectorSettings,
    QdrantSettings,
    RagSettings,
    RecordSettings,
    RetrievalSettings,
    SemanticSettings,
    SqliteGraphSettings,
    StorageSettings,
    WorkingMemorySettings,
)
from hello_memory.config_sections import (
    AudioSettings as AudioSettings,
)
from hello_memory.config_sections import (
    ImageSettings as ImageSettings,
)
from hello_memory.config_sections import (
    _Section as _Section,
)
from hello_memory.errors import ConfigError, UnknownConfigKeyError

__all__ = [
    "CONFIG_ENV_VAR",
    "ApiSettings",
    "EmbeddingSettings",
    "HnswSettings",
    "JobsSettings",
    "LLMSettings",
    "LimitsSettings",
    "MemorySettings",
    "PerceptualSettings",
    "PgVectorSettings",
    "SemanticSettings",
    "Neo4jGraphSettings",
    "ObservabilitySettings",
    "QdrantSettings",
    "RagSettings",
    "RecordSettings",
    "RetrievalSettings",
    "Settings",
    "SqliteGraphSettings",
    "StorageSettings",
    "WorkingMemorySettings",
    "load_settings",
]

CONFIG_ENV_VAR = "HELLO_MEMORY_CONFIG"
ENV_PREFIX = "HELLO_MEMORY__"


class Settings(BaseSettings):
    """Root settings. Build with :func:`load_settings` to get file + env layering."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        case_sensitive=False,
    )

    data_dir: Path = Path(".hello_memory")
    default_namespace: str = "default"
    records: RecordSettings = RecordSettings()
    vector: QdrantSettings = QdrantSettings()
    graph: GraphSettings = SqliteGraphSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    working: WorkingMemorySettings = WorkingMemorySettings()
    memory: MemorySettings = MemorySettings()
    semantic: SemanticSettings = SemanticSettings()
    perceptual: PerceptualSettings = PerceptualSettings()
    llm: LLMSettings = LLMSettings()
    rag: RagSettings = RagSettings()
    api: ApiSettings = ApiSettings()
    limits: LimitsSettings = LimitsSettings()
    storage: StorageSettings = StorageSettings()
    jobs: JobsSettings = JobsSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    observability: ObservabilitySettings = ObservabilitySettings()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # No .env or secrets-dir reading: only arguments and the process environment.
        # The YAML file is merged in by load_settings() beneath both; there the
        # environment is one of its layers already, read once (with its variables named
        # in errors), so pydantic-settings' own reader stays out.
        if _LAYERED.get():
            return (init_settings,)
        return (init_settings, env_settings)

    # Derived locations -------------------------------------------------------------
    def records_url(self) -> str:
        return self.records.url or f"sqlite:///{(self.data_dir / 'records.db').as_posix()}"

    def qdrant_path(self) -> str | None:
        v = self.vector
        if v.location or v.url:
            return v.path
        return v.path or str(self.data_dir / "qdrant")


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    return data


def _env_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    """``HELLO_MEMORY__SECTION__KEY=value`` variables as a nested dict. Values stay
    strings (pydantic coerces them), except JSON lists/objects, which are parsed.
    Unknown names are rejected later, with the variable named, by validation."""
    out: dict[str, Any] = {}
    for name, value in environ.items():
        if not name.upper().startswith(ENV_PREFIX):
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__") if p]
        if not parts:
            continue
        node = out
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"environment variable {name} nests under a scalar setting")
            node = child
        parsed: Any = value
        if value[:1] in ("[", "{"):  # not `in "[{"`: "" is in every string
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"environment variable {name} is not valid JSON: {exc}") from exc
        node[parts[-1]] = parsed
    return out


def _deep_merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def _has_path(data: Mapping[str, Any], path: list[str]) -> bool:
    node: Any = data
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


# Set while load_settings validates its merged layers (Settings.settings_customise_sources).
_LAYERED: contextvars.ContextVar[bool] = contextvars.ContextVar("hm_layered", default=False)


def _env_variables(environ: Mapping[str, str], loc: list[str]) -> list[str]:
    """The HELLO_MEMORY__* variables that set the value at ``loc``: the one whose path
    leads to it (a JSON value may hold more below), else those below it."""
    paths = {name: [p.lower() for p in name[len(ENV_PREFIX):].split("__") if p]
             for name in environ if name.upper().startswith(ENV_PREFIX)}
    above = [n for n, path in paths.items() if path and loc[:len(path)] == path]
    if above:
        return [max(above, key=lambda n: len(paths[n]))]
    return sorted(n for n, path in paths.items() if path[:len(loc)] == loc)


def _one_line(exc: ValidationError, layers: list[tuple[str, dict[str, Any]]],
              environ: Mapping[str, str]) -> str:
    """Every validation error as ``where: what (source)``, joined on one line."""
    parts = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"] if not str(p).startswith(("neo4j", "sqlite"))]
        where = ".".join(loc) or "settings"
        msg = str(err["msg"]).removeprefix("Value error, ")
        source = next((n for n, d in layers if loc and _has_path(d, loc)), "")
        if source.startswith("environment"):
            names = _env_variables(environ, loc)
            source = ("environment variable" + ("s " if len(names) > 1 else " ")
                      + ", ".join(names)) if names else source
        parts.append((msg if msg.startswith(where) else f"{where}: {msg}")
                     + (f" ({source})" if source else ""))
    return "; ".join(parts)


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Build settings from defaults < YAML file < environment < ``overrides``.

    ``config_file`` defaults to ``$HELLO_MEMORY_CONFIG`` when set; ``environ``
    defaults to ``os.environ``. ``overrides`` use the YAML nesting, e.g.
    ``load_settings(vector={"location": ":memory:"})``.

    Raises:
        UnknownConfigKeyError: a key no model declares; the message names the key and
            where it came from (arguments, environment variable, or config file).
        ConfigError: any other invalid value, or an unreadable file.
    """
    env = os.environ if environ is None else environ
    path = config_file or env.get(CONFIG_ENV_VAR)
    layers: list[tuple[str, dict[str, Any]]] = [
        ("arguments", dict(overrides)),
        ("environment (HELLO_MEMORY__*)", _env_layer(env)),
        (f"config file {path}", _read_yaml(Path(path)) if path else {}),
    ]
    merged: dict[str, Any] = {}
    for _, data in reversed(layers):
        merged = _deep_merge(merged, data)
    token = _LAYERED.set(True)
    try:
        # the layers above are the whole input: BaseSettings' own sources stay out
        # (settings_customise_sources), so the environment is read exactly once
        return Settings.model_validate(merged)
    except ValidationError as exc:
        for err in exc.errors():
            if err["type"] == "extra_forbidden":
                loc = [str(p) for p in err["loc"] if not str(p).startswith(("neo4j", "sqlite"))]
                source = next((n for n, d in layers if _has_path(d, loc)), "settings")
                raise UnknownConfigKeyError(".".join(loc), source=source) from exc
        raise ConfigError(f"invalid settings: {_one_line(exc, layers, env)}") from exc
    finally:
        _LAYERED.reset(token)
