"""Which text model a data directory's vectors come from.

The vector collections only know their vector size, and two models can share one
(all-MiniLM-L6-v2 and multilingual-e5-small are both 384-dimensional): reopening a
data directory with another model of the same size would search new query vectors
against old document vectors and return noise without any error. So the record
store keeps the embedder's :attr:`~hello_memory.embedding.base.Embedder.name` in its
``hm_schema_meta`` table, and :func:`~hello_memory.factory.open_stores` compares it
before opening the vector store: a different model is an
:class:`EmbedderMismatchError` naming both.

A data directory from before this check has no entry; the first successful open
records the embedder it is opened with.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from hello_memory.errors import ConfigError
from hello_memory.stores.records.models import SchemaMeta

if TYPE_CHECKING:
    from hello_memory.embedding.base import Embedder
    from hello_memory.stores.records import RecordStore

__all__ = ["EMBEDDER_KEY", "EmbedderMismatchError", "check_embedder", "record_embedder"]

EMBEDDER_KEY = "text_embedder"
_MAX = 256  # hm_schema_meta.value is a String(256)


class EmbedderMismatchError(ConfigError):
    """The data was embedded with another model than the settings choose."""

    def __init__(self, stored: str, configured: str, where: str) -> None:
        from hello_memory.embedding.presets import preset_named

        self.stored = stored
        self.configured = configured
        preset = preset_named(stored)
        back = (f"embedding.preset: {preset.name}" if preset is not None
                else f"embedding.model: {stored}")
        super().__init__(
            f"the memories in {where} were embedded with {stored!r}, but the settings "
            f"choose {configured!r}. Vectors of two models cannot be searched together: "
            f"set {back} again, or give the new model its own data_dir (hello-memory "
            "export, then import into the new one, re-embeds every memory)")


def _key(name: str) -> str:
    if len(name) <= _MAX:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
    return f"{name[:_MAX - 24]}...sha256:{digest}"


def check_embedder(records: RecordStore, embedder: Embedder) -> bool:
    """Raise EmbedderMismatchError when the record store names another embedder;
    True when it names this one, False when it names none yet. Loads no model."""
    with records.engine.connect() as conn:
        stored = conn.execute(
            select(SchemaMeta.value).where(SchemaMeta.key == EMBEDDER_KEY)).scalar()
    if stored is None:
        return False
    if stored != _key(embedder.name):
        where = records.engine.url.render_as_string(hide_password=True)
        raise EmbedderMismatchError(stored, embedder.name, where)
    return True


def record_embedder(records: RecordStore, embedder: Embedder) -> None:
    """Name ``embedder`` as the model of this data (once: an existing entry stays)."""
    try:
        with records.engine.begin() as conn:
            conn.execute(insert(SchemaMeta).values(key=EMBEDDER_KEY, value=_key(embedder.name)))
    except IntegrityError:  # another process recorded it first: check it is the same
        check_embedder(records, embedder)
