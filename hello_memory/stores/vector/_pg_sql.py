"""The SQL of the pgvector backend (:mod:`hello_memory.stores.vector.pgvector`): the
names of its tables' parts, the DDL (the extension, the collections table, a
collection's tables and its HNSW indexes), each connection's session settings, the
dense and sparse search statements, and the translation of payload filters into a
``WHERE`` clause on the ``jsonb`` payload. :class:`PgSql` is the mixin
:class:`~hello_memory.stores.vector.pgvector.PgVectorStore` inherits; ``pgvector``
re-exports every module-level name defined here.
"""

from __future__ import annotations

import json
import math
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hello_memory.errors import BackendUnavailableError, InvalidInputError
from hello_memory.stores.vector._common import Cond, _require_ns, _Shape, filter_conditions, iso
from hello_memory.stores.vector.base import VectorFilter


@dataclass(frozen=True)
class PgVectorParams:
    """The store's HNSW settings (pgvector's names) and the size below which search is exact."""

    m: int = 16
    ef_construction: int = 64
    ef_search: int = 100
    exact_threshold: int = 10_000


META_TABLE = "hm_pgv_collections"
# pg_advisory_xact_lock key of the store's DDL (extension, tables, indexes): processes
# opening one database at once create each thing once instead of racing to a
# duplicate-key error on the catalogue.
_DDL_LOCK = zlib.crc32(b"hello_memory.pgvector.ddl")
_OPS = {"cosine": "vector_cosine_ops", "dot": "vector_ip_ops", "euclid": "vector_l2_ops"}
_OPERATOR = {"cosine": "<=>", "dot": "<#>", "euclid": "<->"}
_MAX_IDENT = 63  # PostgreSQL truncates longer identifiers


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _vec_text(values: Sequence[float]) -> str:
    """pgvector's text input: ``[1,2,3]`` (repr keeps every float32 digit)."""
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


# The trigger function that keeps a collection's per-namespace point counts (the
# ``<table>__n`` table, TG_ARGV[0], in the points table's schema): one grouped write per
# statement that adds or deletes points, in the writer's transaction, namespaces in
# order. The counts are BM25's N (PgSql._sparse_search): a row per namespace, which the
# store's writers lock before their first point (PgSql._hold_counts) until they commit.
_COUNT_FUNCTION = """
CREATE OR REPLACE FUNCTION hm_pgv_count_points() RETURNS trigger LANGUAGE plpgsql AS $hm$
DECLARE
  counts text := quote_ident(TG_TABLE_SCHEMA) || '.' || quote_ident(TG_ARGV[0]);
BEGIN
  IF TG_OP = 'INSERT' THEN
    EXECUTE 'INSERT INTO ' || counts || ' AS c (namespace, n) SELECT namespace, count(*) '
      || 'FROM hm_added GROUP BY namespace ORDER BY namespace '
      || 'ON CONFLICT (namespace) DO UPDATE SET n = c.n + EXCLUDED.n';
  ELSE
    EXECUTE 'UPDATE ' || counts || ' AS c SET n = c.n - r.n FROM (SELECT namespace, '
      || 'count(*) AS n FROM hm_removed GROUP BY namespace ORDER BY namespace) r '
      || 'WHERE c.namespace = r.namespace';
  END IF;
  RETURN NULL;
END
$hm$"""


def _terms_index(table: str) -> str:
    """The name of the postings index of ``table`` (a hash: ``<table>__sp_terms`` could
    pass PostgreSQL's 63 characters, and two truncated names could meet)."""
    return f"hmv_{zlib.crc32(f'{table}/terms'.encode()):08x}_terms"


class SelectionSizes:
    """Whether a dense selection (table, vector, filter) was found under
    ``exact_threshold`` points, each answer kept for ``ttl`` seconds, so the dense
    search does not count the same selection again. Only a speed hint: a selection that
    grew past the threshold meanwhile is still ranked exactly (right, only slower), and
    one that shrank is counted as a large one was before, until the entry expires. At
    most ``size`` entries, the oldest out first; thread-safe."""

    def __init__(self, ttl: float = 30.0, size: int = 4096) -> None:
        self.ttl, self.size = ttl, size
        self._lock = threading.Lock()
        self._kept: OrderedDict[Hashable, tuple[bool, float]] = OrderedDict()

    def small(self, key: Hashable) -> bool | None:
        """True (small) or False (large) as found within ``ttl``; None: not known."""
        with self._lock:
            kept = self._kept.get(key)
            return kept[0] if kept is not None and time.monotonic() < kept[1] else None

    def keep(self, key: Hashable, small: bool) -> None:
        with self._lock:
            self._kept[key] = (small, time.monotonic() + self.ttl)
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)


class PgSql:
    """The DDL, session settings and search statements of
    :class:`~hello_memory.stores.vector.pgvector.PgVectorStore` (which inherits them
    and sets ``params`` and ``_sizes``)."""

    params: PgVectorParams
    _sizes: SelectionSizes

    def _prepare(self, engine: Any) -> str:
        """Create the extension (when allowed) and the collections table; return the
        extension's schema, which every connection puts on its search path."""
        with engine.begin() as conn:
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
            row = conn.exec_driver_sql(
                "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                "ON n.oid = e.extnamespace WHERE e.extname = 'vector'").first()
            if row is None:
                from sqlalchemy.exc import DBAPIError

                try:
                    with conn.begin_nested():
                        conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector")
                except DBAPIError as exc:
                    raise BackendUnavailableError(
                        "the PostgreSQL database has no 'vector' extension and this role "
                        "cannot create it: install pgvector on the server (Debian: build it "
                        "with scripts/system-deps.sh, or the postgresql-<version>-pgvector "
                        "package) and run CREATE EXTENSION vector as a superuser "
                        f"({exc.orig})") from exc
                row = conn.exec_driver_sql(
                    "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                    "ON n.oid = e.extnamespace WHERE e.extname = 'vector'").first()
            conn.exec_driver_sql(
                f"CREATE TABLE IF NOT EXISTS {META_TABLE} (name text PRIMARY KEY, "
                "spec jsonb NOT NULL)")
            conn.exec_driver_sql(_COUNT_FUNCTION)
        return str(row[0])

    def _session_setup(self, ext_schema: str) -> Any:
        p = self.params

        def setup(dbapi_conn: Any, _record: Any) -> None:
            # UTC, as the record store's sessions (payload datetimes without a zone are
            # UTC, as Qdrant reads them); the extension's schema on the search path (a
            # test schema or a team's own may not hold it); the HNSW search settings.
            autocommit = dbapi_conn.autocommit
            dbapi_conn.autocommit = True
            cur = dbapi_conn.cursor()
            cur.execute("SET TIME ZONE 'UTC'")
            cur.execute("SELECT set_config('search_path', current_setting('search_path') "
                        "|| ', ' || quote_ident(%s), false)", (ext_schema,))
            cur.execute(f"SET hnsw.ef_search = {int(p.ef_search)}")
            cur.execute("SET hnsw.iterative_scan = strict_order")
            cur.close()
            dbapi_conn.autocommit = autocommit

        return setup

    @staticmethod
    def _column(vector: str) -> str:
        return _quote(f"v_{vector}")

    def _index_name(self, table: str, vector: str) -> str:
        return f"hmv_{zlib.crc32(f'{table}/{vector}'.encode()):08x}_hnsw"

    def _create(self, conn: Any, table: str, stored: Mapping[str, Any]) -> None:
        t = _quote(table)
        cols = "".join(f", {self._column(n)} vector({int(size)})"
                       for n, size in stored["dense"].items())
        conn.exec_driver_sql(
            f"CREATE TABLE IF NOT EXISTS {t} (id uuid PRIMARY KEY, namespace text NOT NULL, "
            f"payload jsonb NOT NULL{cols})")
        conn.exec_driver_sql(
            f"CREATE INDEX IF NOT EXISTS {_quote(table + '_ns')} ON {t} (namespace, id)")
        sp = _quote(table + "__sp")
        conn.exec_driver_sql(
            f"CREATE TABLE IF NOT EXISTS {sp} (id uuid NOT NULL REFERENCES {t} (id) "
            "ON DELETE CASCADE, name text NOT NULL, namespace text NOT NULL, "
            "term bigint NOT NULL, weight real NOT NULL, PRIMARY KEY (id, name, term))")
        self._create_counts(conn, table)
        for name in stored["dense"]:
            self._create_hnsw(conn, table, name, stored["distance"])

    @staticmethod
    def _create_counts(conn: Any, table: str) -> None:
        """The table's per-namespace point counts, started from the points it holds and
        kept by two statement triggers (``_COUNT_FUNCTION``), and the postings index
        that serves BM25's reads alone (``_terms_index``): what a collection's tables
        hold since 2026-12-06. A table made before gets them on its first use
        (:meth:`_upgrade`)."""
        t, sp, n = _quote(table), _quote(table + "__sp"), _quote(table + "__n")
        conn.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS {n} (namespace text PRIMARY KEY, "
                             "n bigint NOT NULL)")
        # writers wait while the count starts (readers do not): none is missed or doubled
        conn.exec_driver_sql(f"LOCK TABLE {t} IN SHARE ROW EXCLUSIVE MODE")
        conn.exec_driver_sql(f"INSERT INTO {n} AS c (namespace, n) SELECT namespace, count(*) "
                             f"FROM {t} GROUP BY namespace "
                             "ON CONFLICT (namespace) DO UPDATE SET n = EXCLUDED.n")
        arg = "'" + (table + "__n").replace("'", "''") + "'"
        for event, name, rows in (("INSERT", "hm_points_added", "NEW TABLE AS hm_added"),
                                  ("DELETE", "hm_points_removed", "OLD TABLE AS hm_removed")):
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name} ON {t}")
            conn.exec_driver_sql(
                f"CREATE TRIGGER {name} AFTER {event} ON {t} REFERENCING {rows} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION hm_pgv_count_points({arg})")
        conn.exec_driver_sql(
            f"CREATE INDEX IF NOT EXISTS {_quote(_terms_index(table))} ON {sp} "
            "(namespace, name, term) INCLUDE (id, weight)")

    @staticmethod
    def _hold_counts(conn: Any, table: str, namespaces: Iterable[str]) -> None:
        """Lock the count rows of ``namespaces`` (made at 0 where missing), in name
        order, before a write adds or deletes a point: the count triggers then update
        rows the transaction holds already. A writer that locked a point first and the
        count at its statement's end could wait on another that did it the other way
        round (two writers re-upserting one id beside new ones), a deadlock; the cost is
        that writers of one namespace's points take turns, as the record store's
        writers do on its totals row."""
        conn.exec_driver_sql(
            f"INSERT INTO {_quote(table + '__n')} AS c (namespace, n) "
            "SELECT x, 0 FROM unnest(%s::text[]) x ORDER BY x "
            "ON CONFLICT (namespace) DO UPDATE SET n = c.n", (sorted(set(namespaces)),))

    def _upgrade(self, conn: Any, table: str) -> None:
        """Give a collection's tables made before 2026-12-06 their point counts and
        postings index (:meth:`_create_counts`), once, under the DDL lock; the older
        postings index, which the new one serves in full, is dropped."""
        def counted() -> bool:
            return conn.exec_driver_sql("SELECT to_regclass(%s)",
                                        (_quote(table + "__n"),)).scalar() is not None
        if counted():
            return
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
        if counted():
            return
        self._create_counts(conn, table)
        conn.exec_driver_sql(f"DROP INDEX IF EXISTS {_quote(table + '__sp_term')}")

    def _create_hnsw(self, conn: Any, table: str, vector: str, distance: str) -> None:
        p = self.params
        conn.exec_driver_sql(
            f"CREATE INDEX IF NOT EXISTS {_quote(self._index_name(table, vector))} ON "
            f"{_quote(table)} USING hnsw ({self._column(vector)} {_OPS[distance]}) "
            f"WITH (m = {int(p.m)}, ef_construction = {int(p.ef_construction)})")

    def _dense_search(self, conn: Any, table: str, distance: str, using: str, q: str,
                      where: str, args: list[Any], limit: int, threshold: float | None,
                      exact: bool) -> list[Any]:
        t, col, op = _quote(table), self._column(using), _OPERATOR[distance]
        dist = f"(p.{col} {op} %s::vector)"
        # Qdrant's scores: cosine similarity, dot product, euclidean distance
        score = {"cosine": f"1 - {dist}", "dot": f"-{dist}", "euclid": dist}[distance]
        cond = f"{where} AND p.{col} IS NOT NULL"
        cond_args = list(args)
        if threshold is not None:  # NaN (a zero vector's cosine) passes no bound
            if distance == "dot":
                cond += f" AND {dist} <= %s"
                cond_args += [q, -threshold]
            elif distance == "cosine":
                cond += f" AND {dist} <= %s"
                cond_args += [q, 1 - threshold]
            else:  # euclid: the score is the distance, the threshold an upper bound
                cond += f" AND {dist} <= %s"
                cond_args += [q, threshold]
        if not exact:
            exact = self._small_selection(conn, t, using, where, args)
        if not exact and threshold is not None:  # a large selection: those above it
            probe = conn.exec_driver_sql(
                f"SELECT count(*) FROM (SELECT 1 FROM {t} p WHERE {cond} LIMIT %s) s",
                (*cond_args, self.params.exact_threshold)).scalar()
            exact = int(probe or 0) < self.params.exact_threshold
        # ``+ 0`` makes the sort key an expression the HNSW index does not serve: the
        # planner then ranks every selected row exactly (ties by id). The HNSW path
        # orders by the distance alone, the one order the index serves.
        order = f"{dist} + 0, p.id" if exact else dist
        return conn.exec_driver_sql(
            f"SELECT p.id, {score}, p.payload FROM {t} p WHERE {cond} "
            f"ORDER BY {order} LIMIT %s",
            (q, *cond_args, q, limit)).all()

    def _small_selection(self, conn: Any, t: str, using: str, where: str, args: list[Any]
                         ) -> bool:
        """Whether the rows ``where`` selects with vector ``using`` are fewer than
        ``exact_threshold`` (then they are ranked exactly), counted at most once per
        ``SelectionSizes.ttl``: the count reads the rows an exact ranking reads next
        (0.5-2 ms of a search at 2,000 memories; with a score threshold, as the add
        path's duplicate check, it also computed every distance: 4.5 ms an add)."""
        key = (t, using, where, repr(args))
        small = self._sizes.small(key)
        if small is None:
            count = conn.exec_driver_sql(
                f"SELECT count(*) FROM (SELECT 1 FROM {t} p WHERE {where} "
                f"AND p.{self._column(using)} IS NOT NULL LIMIT %s) s",
                (*args, self.params.exact_threshold)).scalar()
            small = int(count or 0) < self.params.exact_threshold
            self._sizes.keep(key, small)
        return small

    def _sparse_search(self, conn: Any, table: str, name: str, terms: list[int],
                       weights: list[float], namespace: str, where: str, args: list[Any],
                       limit: int, threshold: float | None) -> list[Any]:
        if not terms:
            return []
        t, sp, cnt = _quote(table), _quote(table + "__sp"), _quote(table + "__n")
        having = "" if threshold is None else " HAVING sum(s.weight * s.w * d.idf) >= %s"
        # Each CTE is MATERIALIZED, computed once: inlined, a CTE ran once per posting
        # the join read (190 ms of a 2,000-memory search). The postings are read term
        # by term: ``LATERAL`` with ``OFFSET 0`` (which keeps the planner from
        # flattening it into a join) makes each term a seek on ``(namespace, name,
        # term)`` whatever the table's statistics say (with ``term = ANY(...)`` a table
        # not yet analysed was planned as a scan of every posting of the namespace: 15.5
        # against 3.4 ms of EXPLAIN ANALYZE at 2,000 memories). N is the namespace's
        # kept point count (``__n``, kept by triggers), not a count of its points
        # (8 ms of a 20,000-memory search). The documents are scored on the postings
        # alone, then read in score order, each checked against the filter, until
        # ``limit`` pass: the points table is read for the hits, not for every
        # document that holds a term (``OFFSET 0`` again: a seek by id per document,
        # never a scan of the namespace; docs/PERFORMANCE.md, "Search on PostgreSQL").
        sql = (
            f"WITH q(term, w) AS MATERIALIZED "
            f"      (SELECT * FROM unnest(%s::bigint[], %s::float8[])), "
            f"n AS MATERIALIZED (SELECT coalesce((SELECT c.n FROM {cnt} c "
            f"      WHERE c.namespace = %s), 0)::float8 AS n), "
            f"s AS MATERIALIZED (SELECT x.id, x.weight, q.term, q.w FROM q CROSS JOIN LATERAL "
            f"      (SELECT id, weight FROM {sp} WHERE namespace = %s AND name = %s "
            f"       AND term = q.term OFFSET 0) x), "
            f"d AS MATERIALIZED (SELECT s.term, ln((greatest(n.n, count(*)) - count(*) "
            f"      + 0.5) / (count(*) + 0.5) + 1) AS idf FROM s, n GROUP BY s.term, n.n), "
            f"scored AS MATERIALIZED (SELECT s.id, sum(s.weight * s.w * d.idf) AS score "
            f"      FROM s JOIN d ON d.term = s.term GROUP BY s.id{having}) "
            f"SELECT h.id, h.score, x.payload "
            f"FROM (SELECT id, score FROM scored ORDER BY score DESC, id) h "
            f"CROSS JOIN LATERAL (SELECT p.payload FROM {t} p WHERE p.id = h.id AND {where} "
            f"      OFFSET 0) x "
            f"ORDER BY h.score DESC, h.id LIMIT %s")
        params = [terms, weights, namespace, namespace, name]
        if threshold is not None:
            params.append(threshold)
        params += [*args, limit]
        return list(conn.exec_driver_sql(sql, tuple(params)).all())


def _shape_of(stored: Mapping[str, Any]) -> _Shape:
    return _Shape({str(n): int(s) for n, s in stored["dense"].items()},
                  frozenset(stored.get("sparse") or ()), str(stored.get("distance", "cosine")))


def _finite(score: Any) -> float:
    value = float(score)
    return value if math.isfinite(value) else 0.0


def _where(namespace: str, filters: VectorFilter | None) -> tuple[str, list[Any]]:
    """``p.namespace = ns AND <each filter>`` over the table aliased ``p``, and its
    parameters (filters parsed by _common.filter_conditions, as every backend does)."""
    _require_ns(namespace)
    parts, args = ["p.namespace = %s"], [namespace]
    for cond in filter_conditions(filters):
        sql, more = _to_sql(cond)
        parts.append(sql)
        args.extend(more)
    return " AND ".join(parts), args


def _to_sql(c: Cond) -> tuple[str, list[Any]]:
    if not isinstance(c.key, str) or not c.key:
        raise InvalidInputError(f"filter keys must be non-empty strings, got {c.key!r}")
    path = c.key.split(".")
    field = "(p.payload #> %s::text[])"
    if c.kind in ("value", "any"):
        return _match_sql(c, field, path)
    text = "(p.payload #>> %s::text[])"
    if c.kind == "datetime":
        # an ISO string that is not a date is no match (Qdrant's datetime range skips it)
        value = (f"(CASE WHEN {text} ~ '^\\d{{4}}-\\d{{2}}-\\d{{2}}' "
                 f"THEN ({text})::timestamptz END)")
        return _range_sql(value, "::timestamptz", path, c, iso)
    number = (f"(CASE WHEN jsonb_typeof({field}) = 'number' "
              f"THEN ({text})::float8 END)")
    return _range_sql(number, "", path, c, float)


def _match_sql(c: Cond, field: str, path: list[str]) -> tuple[str, list[Any]]:
    """An exact or any-of match: jsonb containment, equal to a value or (a field
    holding an array) holding one as an element, as Qdrant matches a keyword against
    an array field."""
    if c.kind == "value":
        sql, args = f"{field} @> %s::jsonb", [path, json.dumps(c.values[0])]
    elif not c.values:
        return "false", []
    else:
        sql, args = f"{field} @> ANY(%s::jsonb[])", [path, [json.dumps(v) for v in c.values]]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in c.values):
        return sql, args
    # jsonb compares numbers by value (1.0 = 1); Qdrant matches an int only to an int,
    # so a number field written as a float (its text "1.0") is no match
    # (tests/contract/test_vector_filter.py)
    return (f"({sql} AND (jsonb_typeof({field}) <> 'number' "
            f"OR ({field})::text !~ '[.eE]'))", [*args, path, path])


def _range_sql(value: str, cast: str, path: list[str], c: Cond,
               convert: Any) -> tuple[str, list[Any]]:
    """``value >= gte AND value <= lte`` for the bounds ``c`` gives (``value`` reads the
    field twice, hence the path twice per bound)."""
    out: list[str] = []
    args: list[Any] = []
    for op, bound in ((">=", c.gte), ("<=", c.lte)):
        if bound is not None:
            out.append(f"{value} {op} %s{cast}")
            args += [path, path, convert(bound)]
    return "(" + " AND ".join(out) + ")", args
