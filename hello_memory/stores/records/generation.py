"""Each namespace's write generation in the database (``hm_namespace_totals.generation``,
schema v9; models.NamespaceTotalsRow): moved on by every write transaction of a
namespace's memory records (stores/records/memories.py), and of its
graph tables where other processes write them too (stores/graph/sqlite.py), as its
last write, so that what a process derives from them may be kept while it holds
(MemoryRepository.generation; docs/PERFORMANCE.md, "Search on PostgreSQL").
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from hello_memory.stores.records.models import NamespaceTotalsRow

__all__ = ["bump_totals"]


def bump_totals(s: Session | Connection, deltas: Mapping[str, Sequence[int]]) -> None:
    """Add ``[items, tokens]`` deltas to each namespace's totals row and move its write
    generation on, a zero delta too: every namespace a write transaction touches is in
    ``deltas``. The row is made at a namespace's first write, its generation at random,
    so a namespace purged and written again never repeats a value read before
    (models.py). Called as the transaction's LAST write but new rows (its outbox
    rows): the row is then held only until the commit, and taken by every writer
    after its other rows, in one order (namespaces sorted), so two writers cannot
    deadlock over it."""
    for ns, (n, tokens) in sorted(deltas.items()):
        _upsert(s, ns, {"items": n, "tokens": tokens, "generation": secrets.randbits(62)},
                {"items": NamespaceTotalsRow.items + n,
                 "tokens": NamespaceTotalsRow.tokens + tokens,
                 "generation": NamespaceTotalsRow.generation + 1})


def _upsert(s: Session | Connection, ns: str, made: dict[str, Any],
            grow: dict[str, Any]) -> None:
    """Insert ``made`` as the totals row of ``ns``, or apply ``grow`` to the row there:
    an atomic upsert where the dialect has one, so concurrent first writes of a
    namespace cannot collide."""
    dialect = (s.get_bind() if isinstance(s, Session) else s).dialect.name
    if dialect in ("sqlite", "postgresql"):
        ins = (sqlite_insert if dialect == "sqlite" else pg_insert)(NamespaceTotalsRow)
        s.execute(ins.values(namespace=ns, **made)
                  .on_conflict_do_update(index_elements=["namespace"], set_=grow))
        return
    done = s.execute(update(NamespaceTotalsRow)
                     .where(NamespaceTotalsRow.namespace == ns).values(**grow))
    if not done.rowcount:  # type: ignore[attr-defined]
        s.execute(insert(NamespaceTotalsRow).values(namespace=ns, **made))
