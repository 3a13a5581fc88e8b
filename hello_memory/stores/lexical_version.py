"""Which lexical analyzer built a data directory's BM25 vectors.

BM25 document vectors are built when a memory is written; a query is analysed when it
is asked. When the analyzer changes (version 2: English possessives folded, English
words stemmed; see :mod:`hello_memory.text.bm25`), old documents and new queries
no longer share terms, and lexical matches quietly fall away. The record store keeps
the analyzer version in ``hm_schema_meta``; :func:`check_lexical_version` warns, once per
open, when a data directory's memories were indexed by another one, naming the command
that rebuilds them (``hello-memory jobs reindex``), and a full reindex records the new
version (:func:`record_lexical_version`).
"""

from __future__ import annotations

import logging

from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import IntegrityError

from hello_memory.stores.records import RecordStore
from hello_memory.stores.records.models import MemoryRow, SchemaMeta
from hello_memory.text.bm25 import ANALYZER_VERSION

__all__ = ["LEXICAL_KEY", "check_lexical_version", "record_lexical_version"]

log = logging.getLogger(__name__)
LEXICAL_KEY = "lexical_analyzer"


def check_lexical_version(records: RecordStore) -> bool:
    """True when the stored memories were indexed by this analyzer (an empty store
    takes it on now); False, with a warning, when they were not."""
    with records.engine.connect() as conn:
        stored = conn.execute(
            select(SchemaMeta.value).where(SchemaMeta.key == LEXICAL_KEY)).scalar()
        if stored == ANALYZER_VERSION:
            return True
        has_memories = conn.execute(select(func.count()).select_from(
            select(MemoryRow.id).limit(1).subquery())).scalar()
    if stored is None and not has_memories:
        record_lexical_version(records)
        return True
    log.warning("the memories in %s were indexed for keyword search by lexical analyzer %s "
                "(this version uses %s): keyword matches may be missed until "
                "'hello-memory jobs reindex' rebuilds the index",
                records.engine.url.render_as_string(hide_password=True),
                stored or "1", ANALYZER_VERSION)
    return False


def record_lexical_version(records: RecordStore) -> None:
    """Name this analyzer as the one the stored memories were indexed with."""
    for attempt in (1, 2):
        try:
            with records.engine.begin() as conn:
                conn.execute(delete(SchemaMeta).where(SchemaMeta.key == LEXICAL_KEY))
                conn.execute(insert(SchemaMeta).values(key=LEXICAL_KEY, value=ANALYZER_VERSION))
            return
        except IntegrityError:
            # PostgreSQL, two processes opening one new database (docs/SERVERS.md):
            # the other's row was not yet committed when this delete ran, and this
            # insert waited for it. It is committed now: a second try replaces it.
            if attempt == 2:
                raise
