"""Each namespace's write generation in the database (``hm_namespace_totals.generation``,
schema v9; models.NamespaceTotalsRow): moved on by every write transaction of a
namespace's memory records (stores/records/_memory_rows.py ``_bump_totals``), and of its
graph tables where other processes write them too (stores/graph/sqlite.py), as its
last write, so that what a process derives from them may be kept while it holds
(MemoryRepository.generation; docs/PERFORMANCE.md, "Search on PostgreSQL").
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from hello_memory.stores.records.models import NamespaceTotalsRow

__all__ = ["new_generation", "touch_generation", "upsert_totals"]


def upsert_totals(s: Session | Connection, ns: str, made: dict[str, Any],
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


def new_generation() -> int:
    """Where a totals row starts its write generation: at random, so a namespace
    purged and written again never repeats a value read before (models.py)."""
    return secrets.randbits(62)


def touch_generation(s: Session | Connection, namespaces: Iterable[str]) -> None:
    """Move the write generation of each of ``namespaces`` on (its totals row made
    where missing), as the LAST write of a transaction that wrote other rows: the row
    is then held only until the commit, and taken by every writer after its other
    rows, in one order (namespaces sorted), so two writers cannot deadlock over it."""
    for ns in sorted(set(namespaces)):
        upsert_totals(s, ns, {"items": 0, "tokens": 0, "generation": new_generation()},
                      {"generation": NamespaceTotalsRow.generation + 1})
