"""Embedded graph store: entities, relations and mention links in SQL tables.

The tables (``hm_entities``, ``hm_relations``, ``hm_entity_mentions``,
``hm_relation_mentions``) live in the record store's database, so one SQLite file
holds the truth and the graph. Multi-hop traversal is a recursive CTE.

The input checks shared by every graph backend live here too (``validate_*``).
"""

from __future__ import annotations

import itertools
import json
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Engine, Table, and_, delete, func, literal, or_, select, union, union_all
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.sql.elements import ColumnElement

from hello_memory.errors import (
    BackendUnavailableError,
    GraphStoreError,
    InvalidInputError,
    NamespaceRequiredError,
)
from hello_memory.kept import KeptValues
from hello_memory.stores.records.generation import bump_totals
from hello_memory.stores.records.models import Base
from hello_memory.types import Entity, GraphHit, GraphStats, Relation, normalize_entity_name

__all__ = ["MAX_HOPS", "SQLiteGraphStore"]

MAX_HOPS = 5  # deeper walks return most of a dense graph and cost more than they help
_EPOCHS = itertools.count(1)  # each store of the process numbers its generations apart
# The name lookups of find_entities kept per store: rows of a few entities each.
FOUND_KEPT = 4096
HOP_RANGE = range(1, MAX_HOPS + 1)

_E: Table = Base.metadata.tables["hm_entities"]
_R: Table = Base.metadata.tables["hm_relations"]
_EM: Table = Base.metadata.tables["hm_entity_mentions"]
_RM: Table = Base.metadata.tables["hm_relation_mentions"]
_TABLES = [_E, _R, _EM, _RM]
_Row = dict[str, Any]


# --- input checks shared by the graph backends (run before anything is written) ------
def validate_namespace(namespace: object) -> str:
    """Return ``namespace`` or raise NamespaceRequiredError (isolation fails closed)."""
    if not isinstance(namespace, str) or not namespace.strip():
        raise NamespaceRequiredError("a non-empty namespace is required for every graph call")
    return namespace


def validate_id(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{what} must be a non-empty string, got {value!r}")
    return value


def validate_ids(values: Sequence[str], what: str) -> list[str]:
    if isinstance(values, str):  # a bare string would iterate as characters
        raise InvalidInputError(f"{what} must be a sequence of ids, not a string")
    return list(dict.fromkeys(validate_id(v, what) for v in values))


def validate_traversal(max_hops: object, limit: object) -> tuple[int, int]:
    # bool is an int subclass; True hops is a bug, not a request for one hop
    if not isinstance(max_hops, int) or isinstance(max_hops, bool) or max_hops not in HOP_RANGE:
        raise InvalidInputError(f"max_hops must be an integer in 1..{MAX_HOPS}, got {max_hops!r}")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
    return max_hops, limit


def properties_json(properties: dict[str, Any], owner: str) -> str:
    """Canonical JSON of ``properties``; InvalidInputError if it cannot be stored."""
    try:
        return json.dumps(properties, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"properties of {owner} are not JSON-serialisable: {exc}") from exc


def _check_item(item: Entity | Relation, namespace: str, label: str, *texts: str) -> None:
    if item.namespace != namespace:
        raise InvalidInputError(f"{label} is in namespace {item.namespace!r}, not {namespace!r}")
    if not all(isinstance(t, str) and t.strip() for t in texts):
        raise InvalidInputError(f"{label} needs a non-empty name and type")
    properties_json(item.properties, label)


def validate_mentions(
    namespace: str, memory_id: str, entities: Sequence[Entity], relations: Sequence[Relation]
) -> tuple[dict[str, Entity], dict[str, Relation]]:
    """Check one ``add_mentions`` call; return entities and relations keyed by id."""
    validate_namespace(namespace)
    validate_id(memory_id, "memory_id")
    ents: dict[str, Entity] = {}
    for ent in entities:
        if not isinstance(ent, Entity):
            raise InvalidInputError(f"expected an Entity, got {type(ent).__name__}")
        _check_item(ent, namespace, f"entity {ent.name!r}", ent.name, ent.type)
        ents[ent.id] = ent
    rels: dict[str, Relation] = {}
    for rel in relations:
        if not isinstance(rel, Relation):
            raise InvalidInputError(f"expected a Relation, got {type(rel).__name__}")
        _check_item(rel, namespace, f"relation {rel.type!r}", rel.type)
        validate_ids([rel.source_id, rel.target_id], "relation endpoint")
        if not isinstance(rel.weight, (int, float)) or not math.isfinite(rel.weight):
            raise InvalidInputError(f"relation weight must be a finite number, got {rel.weight!r}")
        rels[rel.id] = rel
    return ents, rels


def normalized_names(names: Sequence[str]) -> list[str]:
    if isinstance(names, str):
        raise InvalidInputError("names must be a sequence of strings, not a string")
    out = (normalize_entity_name(n) for n in names if isinstance(n, str))
    return list(dict.fromkeys(n for n in out if n))


PERSON_TYPES = ("person", "name")


def alias_keys(wanted: Sequence[str]) -> tuple[list[str], list[str]]:
    """For normalised names: the first words of multi-word names (``tom berg`` ->
    ``tom``) and the prefixes a full name of a one-word name starts with (``tom ``)."""
    firsts = [n.split(" ", 1)[0] for n in wanted if " " in n]
    prefixes = [n + " " for n in wanted if " " not in n]
    return list(dict.fromkeys(firsts)), prefixes


def sort_hits(hits: Iterable[GraphHit]) -> list[GraphHit]:
    return sorted(hits, key=lambda h: (h.hops, h.name, h.entity_id))


def _entity_row(e: Entity) -> dict[str, Any]:
    norm = normalize_entity_name(e.name)
    return dict(id=e.id, namespace=e.namespace, name=e.name, normalized_name=norm, type=e.type,
                properties=dict(e.properties))  # fmt: skip


def _relation_row(r: Relation) -> dict[str, Any]:
    return dict(id=r.id, namespace=r.namespace, source_id=r.source_id, target_id=r.target_id,
                type=r.type, weight=float(r.weight), properties=dict(r.properties))  # fmt: skip


class SQLiteGraphStore:
    """GraphStore over SQLAlchemy tables (SQLite by default; any SQLAlchemy URL works).

    The engine is shared with the record store and owned by the caller: ``close()``
    does not dispose it.
    """

    def __init__(self, engine: Engine, *,
                 shared_generation: Callable[[str], tuple[int, int] | None] | None = None
                 ) -> None:
        self._engine = engine  # no I/O here: open() creates the tables
        # Where other processes may write the tables (any database but SQLite): the
        # records' write generation, kept in the same database, which every write here
        # moves on too (stores/records/generation.py), else None (nothing kept).
        self._shared = shared_generation if engine.dialect.name != "sqlite" else None
        # Writes committed per namespace (generation()); guarded by _written_lock.
        self._written_lock = threading.Lock()
        self._written: dict[str, int] = {}
        self._epoch = next(_EPOCHS)
        # find_entities' rows per (namespace, names, aliases), kept at the namespace's
        # generation (the search asks the same names again and again; issue 27)
        self._found: KeptValues[tuple[Any, ...], list[Any]] = KeptValues(FOUND_KEPT)

    def generation(self, namespace: str) -> tuple[int, int] | None:
        """A value that changes with every write this store commits to ``namespace``
        (after its commit), for caching what is read from its graph; None where other
        processes may write the tables (any database but SQLite, which one process
        holds: ARCHITECTURE.md), unless the store was given the records' generation,
        kept in the database, which its writes move on too (``shared_generation``)."""
        if self._engine.dialect.name != "sqlite":
            return None if self._shared is None else self._shared(namespace)
        with self._written_lock:
            return self._epoch, self._written.get(namespace, 0)

    def _moving(self, conn: Connection, namespace: str) -> None:
        """Last in a write transaction: the shared generation moved on (where the store
        reads it), in the write's own transaction (records/generation.py)."""
        if self._shared is not None:
            bump_totals(conn, {namespace: (0, 0)})

    def _wrote(self, namespace: str) -> None:
        with self._written_lock:
            self._written[namespace] = self._written.get(namespace, 0) + 1

    # --- lifecycle -------------------------------------------------------------------
    def open(self) -> None:
        """Create the four graph tables (and their indexes) if they are missing."""
        try:
            Base.metadata.create_all(self._engine, tables=_TABLES)
        except OperationalError as exc:
            raise BackendUnavailableError(
                f"cannot open the graph tables at {self._engine.url!r}: {exc}"
            ) from exc
        except SQLAlchemyError as exc:
            raise GraphStoreError(f"cannot create the graph tables: {exc}") from exc

    def close(self) -> None:
        """Nothing to release: the engine belongs to the caller. Safe to call twice."""

    def _codepoints(self, column: Any) -> Any:
        """``column`` compared in code-point order, as SQLite's BINARY collation and
        Python's ``sorted`` compare. A PostgreSQL database's collation may ignore spaces
        and punctuation (glibc's en_US.UTF-8 does), which breaks the name-prefix ranges
        below and the order the results are cut at ``limit`` in."""
        return column.collate("C") if self._engine.dialect.name == "postgresql" else column

    # --- writes ----------------------------------------------------------------------
    def add_mentions(
        self,
        namespace: str,
        memory_id: str,
        entities: Sequence[Entity],
        relations: Sequence[Relation] = (),
    ) -> None:
        """Upsert entities and relations and link them to ``memory_id``, in one
        transaction. A relation whose endpoint is neither given nor stored in
        ``namespace`` raises InvalidInputError and nothing is written."""
        ents, rels = validate_mentions(namespace, memory_id, entities, relations)
        if not ents and not rels:
            return
        try:
            self._add_mentions(namespace, memory_id, ents, rels)
        finally:  # after the commit (or the rollback)
            self._wrote(namespace)

    def _add_mentions(self, namespace: str, memory_id: str, ents: dict[str, Entity],
                      rels: dict[str, Relation]) -> None:
        try:
            with self._engine.begin() as conn:
                self._check_endpoints(conn, namespace, ents, rels)
                self._upsert_rows(conn, _E, [_entity_row(e) for e in ents.values()])
                self._upsert_rows(conn, _R, [_relation_row(r) for r in rels.values()])
                link = {"memory_id": memory_id, "namespace": namespace}
                em_rows = [{"entity_id": i, **link} for i in ents]
                self._upsert(conn, _EM, em_rows, ["entity_id", "memory_id"], [])
                rm_rows = [{"relation_id": i, **link} for i in rels]
                self._upsert(conn, _RM, rm_rows, ["relation_id", "memory_id"], [])
                self._moving(conn, namespace)
        except SQLAlchemyError as exc:
            raise GraphStoreError(f"add_mentions failed for memory {memory_id!r}: {exc}") from exc

    def remove_memory(self, namespace: str, memory_id: str) -> None:
        """Drop the memory's links, then the entities and relations that no memory
        mentions any more (and the relations of those entities), in one transaction."""
        validate_namespace(namespace)
        validate_id(memory_id, "memory_id")
        try:
            self._remove_memory(namespace, memory_id)
        finally:  # after the commit (or the rollback)
            self._wrote(namespace)

    def _remove_memory(self, namespace: str, memory_id: str) -> None:
        try:
            with self._engine.begin() as conn:
                mine_em = and_(_EM.c.namespace == namespace, _EM.c.memory_id == memory_id)
                mine_rm = and_(_RM.c.namespace == namespace, _RM.c.memory_id == memory_id)
                ent_ids = list(conn.execute(select(_EM.c.entity_id).where(mine_em)).scalars())
                rel_ids = list(conn.execute(select(_RM.c.relation_id).where(mine_rm)).scalars())
                conn.execute(delete(_EM).where(mine_em))
                conn.execute(delete(_RM).where(mine_rm))
                orphan_ents = self._unmentioned(conn, _E, _EM.c.entity_id, ent_ids)
                drop_rels = set(self._unmentioned(conn, _R, _RM.c.relation_id, rel_ids))
                if orphan_ents:
                    touching = or_(_R.c.source_id.in_(orphan_ents), _R.c.target_id.in_(orphan_ents))
                    found = conn.execute(
                        select(_R.c.id).where(_R.c.namespace == namespace, touching)
                    ).scalars()
                    drop_rels.update(found)
                # children first: do not rely on ON DELETE CASCADE being switched on
                if drop_rels:
                    dropped = sorted(drop_rels)
                    conn.execute(delete(_RM).where(_RM.c.relation_id.in_(dropped)))
                    conn.execute(delete(_R).where(_R.c.id.in_(dropped)))
                if orphan_ents:
                    conn.execute(delete(_EM).where(_EM.c.entity_id.in_(orphan_ents)))
                    conn.execute(delete(_E).where(_E.c.id.in_(orphan_ents)))
                self._moving(conn, namespace)
        except SQLAlchemyError as exc:
            raise GraphStoreError(f"remove_memory failed for {memory_id!r}: {exc}") from exc

    def clear(self, namespace: str) -> None:
        """Delete every entity, relation and link of ``namespace`` and nothing else."""
        validate_namespace(namespace)
        try:
            with self._engine.begin() as conn:
                for table in (_RM, _EM, _R, _E):  # children first
                    conn.execute(delete(table).where(table.c.namespace == namespace))
                self._moving(conn, namespace)
        except SQLAlchemyError as exc:
            raise GraphStoreError(f"clear failed for namespace {namespace!r}: {exc}") from exc
        finally:  # after the commit (or the rollback)
            self._wrote(namespace)

    # --- reads -----------------------------------------------------------------------
    def find_entities(self, namespace: str, names: Sequence[str], *,
                      aliases: bool = False) -> list[Entity]:
        """Entities whose normalised name equals one of ``names`` (any type); with
        ``aliases``, person-like entities sharing a first name (see GraphStore)."""
        validate_namespace(namespace)
        wanted = normalized_names(names)
        if not wanted:
            return []
        def read() -> list[Any]:
            return self._read(self._find_query(namespace, wanted, aliases), "find_entities")

        # kept until this store's next write to the namespace, where it alone writes
        generation = self.generation(namespace)
        rows = read() if generation is None else self._found.get_or_read(
            (namespace, tuple(wanted), aliases), generation, read)
        return [Entity(namespace, r.name, r.type, dict(r.properties or {})) for r in rows]

    def _find_query(self, namespace: str, wanted: Sequence[str], aliases: bool) -> Any:
        """find_entities' query (built only when its rows are not kept)."""
        match: ColumnElement[bool] = _E.c.normalized_name.in_(wanted)
        if aliases:
            firsts, prefixes = alias_keys(wanted)
            person = _E.c.type.in_(PERSON_TYPES)
            # A prefix as a range ("tom " <= name < "tom!"), so the (namespace,
            # normalized_name) index serves it; SQLite's LIKE would scan every entity.
            # (On PostgreSQL the range is in code points: the namespace part of the
            # index serves it there.)
            name = self._codepoints(_E.c.normalized_name)
            alias = [and_(name >= p, name < p[:-1] + "!") for p in prefixes]
            if firsts:
                alias.append(_E.c.normalized_name.in_(firsts))
            match = or_(match, and_(person, or_(*alias))) if alias else match
        return (
            select(_E.c.name, _E.c.type, _E.c.properties)
            .where(_E.c.namespace == namespace, match)
            .order_by(self._codepoints(_E.c.normalized_name), self._codepoints(_E.c.type))
        )

    def neighbors(
        self, namespace: str, entity_ids: Sequence[str], max_hops: int = 2, limit: int = 100
    ) -> list[GraphHit]:
        """Entities within ``max_hops`` undirected edges of ``entity_ids`` (starts at
        hops 0) with the memories mentioning them; sorted by hops, name; ``limit``."""
        validate_namespace(namespace)
        starts = validate_ids(entity_ids, "entity id")
        max_hops, limit = validate_traversal(max_hops, limit)
        if not starts:
            return []
        in_ns = _R.c.namespace == namespace
        edges = union_all(
            select(_R.c.source_id.label("a"), _R.c.target_id.label("b")).where(in_ns),
            select(_R.c.target_id.label("a"), _R.c.source_id.label("b")).where(in_ns),
        ).cte("edges")
        walk = (
            select(_E.c.id.label("entity_id"), literal(0).label("depth"))
            .where(_E.c.namespace == namespace, _E.c.id.in_(starts))
            .cte("walk", recursive=True)
        )
        # UNION (not UNION ALL) drops repeated (entity, depth) pairs, which keeps the
        # walk linear in entities x depth even on cyclic graphs
        walk = walk.union(
            select(edges.c.b, walk.c.depth + 1)
            .select_from(walk.join(edges, edges.c.a == walk.c.entity_id))
            .where(walk.c.depth < max_hops)
        )
        reached = (
            select(walk.c.entity_id, func.min(walk.c.depth).label("hops"))
            .group_by(walk.c.entity_id)
            .subquery("reached")
        )
        query = (
            select(_E.c.id, _E.c.name, _E.c.type, reached.c.hops)
            .join(reached, reached.c.entity_id == _E.c.id)
            .where(_E.c.namespace == namespace)
            .order_by(reached.c.hops, self._codepoints(_E.c.name), self._codepoints(_E.c.id))
            .limit(limit)
        )
        rows = self._read(query, "neighbors")
        mentions: dict[str, set[str]] = {r.id: set() for r in rows}
        if mentions:
            links = self._read(
                select(_EM.c.entity_id, _EM.c.memory_id).where(
                    _EM.c.namespace == namespace, _EM.c.entity_id.in_(list(mentions))
                ),
                "neighbors",
            )
            for link in links:
                mentions[link.entity_id].add(link.memory_id)
        return sort_hits(
            GraphHit(r.id, r.name, r.type, int(r.hops), frozenset(mentions[r.id])) for r in rows
        )

    def memory_ids_for_entities(self, namespace: str, entity_ids: Sequence[str]) -> set[str]:
        """Ids of memories that mention any of ``entity_ids``."""
        validate_namespace(namespace)
        ids = validate_ids(entity_ids, "entity id")
        if not ids:
            return set()
        mine = and_(_EM.c.namespace == namespace, _EM.c.entity_id.in_(ids))
        query = select(_EM.c.memory_id).where(mine).distinct()
        return {r.memory_id for r in self._read(query, "memory_ids_for_entities")}

    def memory_ids(self, namespace: str) -> set[str]:
        """Every memory id that mentions an entity or states a relation in ``namespace``."""
        validate_namespace(namespace)
        query = union(
            select(_EM.c.memory_id).where(_EM.c.namespace == namespace),
            select(_RM.c.memory_id).where(_RM.c.namespace == namespace),
        )
        return {r.memory_id for r in self._read(query, "memory_ids")}

    def stats(self, namespace: str) -> GraphStats:
        """Entities, relations, and entity mention links (memory -> entity) in ``namespace``."""
        validate_namespace(namespace)

        def count(table: Table) -> Any:
            return select(func.count()).select_from(table).where(table.c.namespace == namespace)

        query = select(*(count(t).scalar_subquery() for t in (_E, _R, _EM)))
        row = self._read(query, "stats")[0]
        return GraphStats(entities=row[0], relations=row[1], mentions=row[2])

    # --- helpers ---------------------------------------------------------------------
    def _read(self, query: Any, what: str) -> list[Any]:
        try:
            with self._engine.connect() as conn:
                return list(conn.execute(query).all())
        except SQLAlchemyError as exc:
            raise GraphStoreError(f"{what} failed: {exc}") from exc

    @staticmethod
    def _check_endpoints(
        conn: Connection, namespace: str, ents: dict[str, Entity], rels: dict[str, Relation]
    ) -> None:
        wanted = {i for r in rels.values() for i in (r.source_id, r.target_id)} - set(ents)
        if not wanted:
            return
        query = select(_E.c.id).where(_E.c.namespace == namespace, _E.c.id.in_(wanted))
        missing = wanted - set(conn.execute(query).scalars())
        if missing:
            raise InvalidInputError(
                f"relation endpoints not found in namespace {namespace!r}: {sorted(missing)}"
            )

    @classmethod
    def _upsert_rows(cls, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        # an entity keeps its first spelling; a relation takes the latest weight;
        # stored properties are replaced only when new ones are given
        always = ["weight"] if table is _R else []
        with_props = [r for r in rows if r["properties"]]
        cls._upsert(conn, table, with_props, ["id"], [*always, "properties"])
        cls._upsert(conn, table, [r for r in rows if not r["properties"]], ["id"], always)

    @staticmethod
    def _upsert(
        conn: Connection, table: Table, rows: list[_Row], keys: list[str], update: list[str]
    ) -> None:
        """Insert ``rows``; on a key conflict update ``update`` columns (or do nothing)."""
        if not rows:
            return
        dialect = conn.dialect.name
        if dialect in ("sqlite", "postgresql"):
            stmt = (sqlite_insert if dialect == "sqlite" else pg_insert)(table)
            if update:
                stmt = stmt.on_conflict_do_update(
                    index_elements=keys, set_={c: stmt.excluded[c] for c in update}
                )
            else:
                stmt = stmt.on_conflict_do_nothing(index_elements=keys)
            conn.execute(stmt, rows)
            return
        for row in rows:  # portable path: select, then insert or update
            match = and_(*(table.c[k] == row[k] for k in keys))
            if conn.execute(select(func.count()).select_from(table).where(match)).scalar():
                if update:
                    conn.execute(table.update().where(match).values({c: row[c] for c in update}))
            else:
                conn.execute(table.insert().values(row))

    @staticmethod
    def _unmentioned(conn: Connection, table: Table, link_col: Any, ids: list[str]) -> list[str]:
        """Those of ``ids`` (rows of ``table``) that no mention row (``link_col``) names."""
        if not ids:
            return []
        linked = select(link_col).where(link_col == table.c.id).exists()
        query = select(table.c.id).where(table.c.id.in_(ids), ~linked)
        return list(conn.execute(query).scalars())
