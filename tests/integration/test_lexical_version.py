"""A data directory indexed by an older lexical analyzer says so, and a full reindex
brings its keyword vectors to the current one (stores/lexical_version.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from hello_memory.config import load_settings
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.lexical_version import LEXICAL_KEY
from hello_memory.stores.records.models import SchemaMeta
from hello_memory.text.bm25 import ANALYZER_VERSION

pytestmark = pytest.mark.slow


def _stored(mm: MemoryManager) -> str | None:
    from sqlalchemy import select

    with mm.stores.records.engine.connect() as conn:
        return conn.execute(select(SchemaMeta.value).where(SchemaMeta.key == LEXICAL_KEY)
                            ).scalar()


def test_old_keyword_index_warns_until_reindexed(tmp_path: Path, caplog: Any) -> None:
    from hello_memory.embedding import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    settings = load_settings(environ={}, data_dir=tmp_path / "d",
                             semantic={"extractor": "rules"})
    with MemoryManager.open(settings, embedder=emb) as mm:
        assert _stored(mm) == ANALYZER_VERSION  # a new data dir takes the current one
        mm.add("Tom plays the cello.", "semantic", namespace="n")
        with mm.stores.records.engine.begin() as conn:  # as a data dir from before v2
            conn.execute(update(SchemaMeta).where(SchemaMeta.key == LEXICAL_KEY)
                         .values(value="1"))
    with caplog.at_level(logging.WARNING), MemoryManager.open(settings, embedder=emb) as mm:
        assert "hello-memory jobs reindex" in caplog.text
        mm.reindex()
        assert _stored(mm) == ANALYZER_VERSION
        # "play" finds "plays" through the keyword view once rebuilt
        assert mm.search("who can play?", top_k=1, namespace="n", recipe="bm25-only")
    caplog.clear()
    with caplog.at_level(logging.WARNING), MemoryManager.open(settings, embedder=emb):
        assert "jobs reindex" not in caplog.text
