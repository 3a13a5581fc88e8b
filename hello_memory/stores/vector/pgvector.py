"""PostgreSQL + pgvector :class:`~hello_memory.stores.vector.base.VectorStore`.

The deployment of docs/DEPLOY.md "Deploy for a team": records, vectors and the SQL
graph in one PostgreSQL database, shared by several ``hello-memory serve`` processes
(the embedded Qdrant Edge directory is one process only). Tables, in the current schema
of the connection (the first of ``search_path``)::

    hm_pgv_collections          one row per collection: its vectors (name -> size),
                                sparse vector names and distance, as JSON
    <prefix><collection>        id uuid PK, namespace, payload jsonb, one ``vector(n)``
                                column per dense vector (``v_<name>``), an HNSW index
                                per dense column, a btree on (namespace, id)
    <prefix><collection>__sp    sparse vectors: (id, name, term, weight), namespace
                                copied, deleted with the point (foreign key, cascade)
    <prefix><collection>__n     points per namespace (BM25's N), kept by two
                                statement triggers on the points table

One table per collection rather than one table with a collection column: each
collection has its own vector sizes (a ``vector(n)`` column is typed by its size and
an HNSW index needs one size), and a namespace's rows of one collection are then
found by one btree.

Semantics follow the Qdrant backends (the contract suite ``tests/contract`` runs on
all of them): cosine/dot/euclid scores as Qdrant reports them, payload filters parsed
by :mod:`._common` and evaluated in SQL on the ``jsonb`` payload (a scalar matches a
field equal to it or an array holding it), ids unique per collection and owned by one
namespace. Sparse (BM25) search weighs each query term with Qdrant's IDF modifier,
``ln((N - df + 0.5) / (df + 0.5) + 1)``, where ``N`` and ``df`` are counted in the
query's namespace only: one tenant's documents never move another's scores
(ARCHITECTURE decision 6). An upsert writes its points and their sparse rows in one
transaction and refuses, inside that transaction, to take over an id another namespace
owns, so two processes racing on one id cannot move it.

Search is exact (every row the namespace and filters select, sorted by distance) while
the selection holds fewer than ``exact_threshold`` points, and goes through the HNSW
index above that (``ef_search`` beam, pgvector 0.8's iterative scan in strict order,
so a selective filter still fills ``limit``), as the Edge backend answers small
selections exactly and large ones from its graph. The HNSW index is kept up to date by
PostgreSQL on every insert; :meth:`PgVectorStore.optimize` only (re)builds it when it
is missing or was built with other ``m`` / ``ef_construction`` settings.

The ``vector`` extension must exist in the database, or the connecting role must be
allowed to create it (it is not a trusted extension: a superuser, or a DBA once,
``CREATE EXTENSION vector``). ``scripts/system-deps.sh`` builds it from the vendored
source for the test servers.

The SQL itself (the DDL, the session settings, the search statements, the filter
translation) is in :mod:`._pg_sql`, whose mixin :class:`PgVectorStore` inherits.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from hello_memory.errors import (
    BackendUnavailableError,
    CollectionNotFoundError,
    DimensionMismatchError,
    HelloMemoryError,
    InvalidInputError,
    VectorError,
    VectorStoreError,
)
from hello_memory.stores.vector._common import (
    _check_spec,
    _dense,
    _jsonable,
    _require_ns,
    _search_ids,
    _Shape,
    _sparse_parts,
    _uuid,
)
from hello_memory.stores.vector._pg_sql import (
    _DDL_LOCK,
    _MAX_IDENT,
    META_TABLE,
    PgSql,
    PgVectorParams,
    SelectionSizes,
    _finite,
    _quote,
    _shape_of,
    _vec_text,
    _where,
)
from hello_memory.stores.vector._pg_sql import _OPERATOR as _OPERATOR
from hello_memory.stores.vector._pg_sql import _OPS as _OPS
from hello_memory.stores.vector._pg_sql import _range_sql as _range_sql
from hello_memory.stores.vector._pg_sql import _terms_index as _terms_index
from hello_memory.stores.vector._pg_sql import _to_sql as _to_sql
from hello_memory.stores.vector.base import CollectionSpec, VectorFilter
from hello_memory.types import SparseVector, VectorHit, VectorPoint

__all__ = ["PgVectorParams", "PgVectorStore"]

log = logging.getLogger(__name__)

_BATCH = 500


def _check_threshold(score_threshold: float | None) -> None:
    if score_threshold is not None and (isinstance(score_threshold, bool) or
                                        not isinstance(score_threshold, (int, float))
                                        or not math.isfinite(score_threshold)):
        raise InvalidInputError(f"score_threshold must be a finite number, "
                                f"got {score_threshold!r}")


class PgVectorStore(PgSql):
    """Vector store in a PostgreSQL database with the pgvector extension.

    ``url`` is a SQLAlchemy URL (``postgresql+psycopg://...``, as ``records.url``).
    ``collection_prefix`` prefixes every table name, as the Qdrant backends prefix
    collection names; errors name the caller's collection.
    """

    def __init__(self, *, url: str, collection_prefix: str = "",
                 params: PgVectorParams | None = None, pool_size: int = 5) -> None:
        if not isinstance(url, str) or not url.startswith("postgresql"):
            raise InvalidInputError(f"PgVectorStore needs a postgresql:// URL, got {url!r}")
        self.url = url
        self._prefix = collection_prefix
        self.params = params or PgVectorParams()
        self._pool_size = pool_size
        self._engine: Any = None
        self._shapes: dict[str, _Shape] = {}
        self._lock = threading.Lock()
        # whether a dense selection was found small (ranked exactly), kept a while
        self._sizes = SelectionSizes()

    # --- lifecycle ------------------------------------------------------------------
    def open(self) -> None:
        """Connect, make sure the extension and the collections table exist. No-op
        when already open; BackendUnavailableError when the server cannot be reached or
        the extension is neither installed nor creatable."""
        if self._engine is not None:
            return
        from sqlalchemy import create_engine, event
        from sqlalchemy.exc import SQLAlchemyError

        try:
            engine = create_engine(self.url, pool_size=self._pool_size, max_overflow=10,
                                   pool_pre_ping=True)
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise BackendUnavailableError(f"invalid pgvector URL: {exc}") from exc
        if engine.url.get_backend_name() != "postgresql":
            engine.dispose()
            raise InvalidInputError(f"PgVectorStore needs PostgreSQL, got {engine.url.drivername}")
        try:
            schema = self._prepare(engine)
        except HelloMemoryError:
            engine.dispose()
            raise
        except SQLAlchemyError as exc:
            engine.dispose()
            raise BackendUnavailableError(
                f"cannot reach the pgvector database {engine.url.render_as_string()}: "
                f"{exc}") from exc
        event.listen(engine, "connect", self._session_setup(schema))
        engine.dispose()  # connections made before the listener lack its settings
        with self._lock:
            self._engine = engine
            self._shapes.clear()


    def close(self) -> None:
        """Close every connection; safe twice."""
        with self._lock:
            engine, self._engine = self._engine, None
            self._shapes.clear()
        if engine is not None:
            engine.dispose()

    # --- names ----------------------------------------------------------------------
    def _table(self, collection: str) -> str:
        if not isinstance(collection, str) or not collection:
            raise InvalidInputError(f"collection name must be a non-empty str: {collection!r}")
        name = self._prefix + collection
        if len(name) + 4 > _MAX_IDENT or "\x00" in name:
            raise InvalidInputError(
                f"collection name {collection!r} is too long for a PostgreSQL table "
                f"(at most {_MAX_IDENT - 4 - len(self._prefix)} characters)")
        return name


    # --- connections ----------------------------------------------------------------
    @contextmanager
    def _tx(self, collection: str) -> Iterator[Any]:
        """One transaction; database errors leave as the hello-memory tree."""
        from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError

        engine = self._engine
        if engine is None:
            raise VectorStoreError("PgVectorStore is not open; call open() first")
        try:
            with engine.begin() as conn:
                yield conn
        except HelloMemoryError:
            raise
        except OperationalError as exc:
            raise BackendUnavailableError(
                f"pgvector database unavailable on {collection!r}: {exc.orig}") from exc
        except (DBAPIError, SQLAlchemyError) as exc:
            raise VectorStoreError(f"pgvector error on {collection!r}: "
                                   f"{getattr(exc, 'orig', exc)}") from exc

    # --- collections ----------------------------------------------------------------
    def ensure_collection(self, spec: CollectionSpec) -> None:
        """Create the collection's tables and indexes if missing; if it exists, check
        every named vector (DimensionMismatchError for another size)."""
        _check_spec(spec)
        table = self._table(spec.name)
        with self._tx(spec.name) as conn:
            row = conn.exec_driver_sql(f"SELECT spec FROM {META_TABLE} WHERE name = %s",
                                       (table,)).first()
            if row is None:
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
                row = conn.exec_driver_sql(f"SELECT spec FROM {META_TABLE} WHERE name = %s",
                                           (table,)).first()
            if row is None:
                stored = {"dense": dict(spec.dense), "sparse": list(spec.sparse),
                          "distance": spec.distance}
                self._create(conn, table, stored)
                conn.exec_driver_sql(f"INSERT INTO {META_TABLE} (name, spec) VALUES (%s, %s)",
                                     (table, json.dumps(stored)))
            else:
                stored = row[0]
                self._upgrade(conn, table)
        shape = _shape_of(stored)
        for name, size in spec.dense.items():
            shape.need(spec.name, name)
            if shape.dense[name] != size:
                raise DimensionMismatchError(spec.name, shape.dense[name], size, name)
        for name in spec.sparse:
            shape.need(spec.name, name, sparse=True)
        if spec.dense and shape.distance != spec.distance:
            raise VectorError(f"{spec.name!r} uses {shape.distance} distance, "
                              f"not {spec.distance}")
        self._shapes[spec.name] = shape


    def _shape(self, conn: Any, collection: str) -> _Shape:
        shape = self._shapes.get(collection)
        if shape is None:
            row = conn.exec_driver_sql(f"SELECT spec FROM {META_TABLE} WHERE name = %s",
                                       (self._table(collection),)).first()
            if row is None:
                raise CollectionNotFoundError(f"unknown collection {collection!r}")
            self._upgrade(conn, self._table(collection))
            shape = self._shapes[collection] = _shape_of(row[0])
        return shape

    def collections(self) -> list[str]:
        """Names of the collections this store holds (without the prefix), sorted."""
        with self._tx("*") as conn:
            rows = conn.exec_driver_sql(f"SELECT name FROM {META_TABLE}").all()
        p = self._prefix
        return sorted(r[0][len(p):] for r in rows if r[0].startswith(p) and len(r[0]) > len(p))

    def optimize(self, collection: str) -> bool:
        """(Re)build the HNSW index of each dense vector where it is missing or was built
        with other ``m`` / ``ef_construction``; True if any was built. PostgreSQL keeps
        an existing index current on every write, so usually nothing is to do."""
        table = self._table(collection)
        changed = False
        with self._tx(collection) as conn:
            shape = self._shape(conn, collection)
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
            want = sorted([f"m={int(self.params.m)}",
                           f"ef_construction={int(self.params.ef_construction)}"])
            for vector in shape.dense:
                name = self._index_name(table, vector)
                row = conn.exec_driver_sql(
                    "SELECT c.reloptions FROM pg_class c WHERE c.relkind = 'i' AND c.relname = %s "
                    "AND c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = "
                    "%s::regclass)", (name, _quote(table))).first()
                if row is not None and sorted(row[0] or []) == want:
                    continue
                if row is not None:
                    conn.exec_driver_sql(f"DROP INDEX {_quote(name)}")
                self._create_hnsw(conn, table, vector, shape.distance)
                changed = True
        return changed

    # --- writes ---------------------------------------------------------------------
    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id (vectors and payload as given); validates
        every point before writing any; one transaction for the whole call."""
        if not points:
            return
        table = self._table(collection)
        with self._tx(collection) as conn:
            shape = self._shape(conn, collection)
            rows = [self._row(collection, shape, p) for p in points]
            owner: dict[str, str] = {}
            for pid, ns, *_ in rows:
                if owner.setdefault(pid, ns) != ns:
                    raise InvalidInputError(f"id {pid} is given for two namespaces in one upsert")
            self._hold_counts(conn, table, owner.values())
            last = {r[0]: r for r in rows}  # a repeated id: the last one wins, as in Qdrant
            rows = list(last.values())
            dense_names = list(shape.dense)
            cols = ", ".join(self._column(n) for n in dense_names)
            marks = ", ".join("%s::vector" for _ in dense_names)
            updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in
                                [self._column(n) for n in dense_names])
            t = _quote(table)
            sql = (f"INSERT INTO {t} (id, namespace, payload{', ' if cols else ''}{cols}) "
                   f"VALUES (%s, %s, %s{', ' if marks else ''}{marks}) "
                   f"ON CONFLICT (id) DO UPDATE SET payload = EXCLUDED.payload"
                   f"{', ' if updates else ''}{updates} "
                   f"WHERE {t}.namespace = EXCLUDED.namespace RETURNING id")
            ids = [uuid.UUID(r[0]) for r in rows]
            for start in range(0, len(ids), _BATCH * 20):
                for pid, ns in conn.exec_driver_sql(
                        f"SELECT id, namespace FROM {t} WHERE id = ANY(%s)",
                        (ids[start:start + _BATCH * 20],)).all():
                    if owner[str(pid)] != ns:
                        raise InvalidInputError(f"id {pid} belongs to another namespace")
            for start in range(0, len(rows), _BATCH):
                batch = rows[start:start + _BATCH]
                params = [(uuid.UUID(pid), ns, json.dumps(payload),
                           *[None if dense.get(n) is None else _vec_text(dense[n])
                             for n in dense_names])
                          for pid, ns, payload, dense, _ in batch]
                written = self._insert_returning(conn, sql, params)
                if written != len(batch):  # an id taken by another namespace meanwhile
                    raise InvalidInputError("an id of this upsert belongs to another namespace")
            sp = _quote(table + "__sp")
            conn.exec_driver_sql(f"DELETE FROM {sp} WHERE id = ANY(%s)", (ids,))
            sparse_rows = [(uuid.UUID(pid), name, ns, term, weight)
                           for pid, ns, _, _, sparse in rows
                           for name, (terms, weights) in sparse.items()
                           for term, weight in zip(terms, weights, strict=True)]
            for start in range(0, len(sparse_rows), _BATCH * 20):
                conn.exec_driver_sql(
                    f"INSERT INTO {sp} (id, name, namespace, term, weight) "
                    "VALUES (%s, %s, %s, %s, %s)", sparse_rows[start:start + _BATCH * 20])

    @staticmethod
    def _insert_returning(conn: Any, sql: str, params: list[tuple[Any, ...]]) -> int:
        """Run the upsert for each row; the number of rows written (an id owned by
        another namespace is skipped by the statement's WHERE and not counted)."""
        cur = conn.connection.dbapi_connection.cursor()
        try:
            cur.executemany(sql, params, returning=True)
            written = 0
            while True:
                written += len(cur.fetchall())
                if not cur.nextset():
                    return written
        finally:
            cur.close()

    def _row(self, collection: str, shape: _Shape, p: VectorPoint
             ) -> tuple[str, str, dict[str, Any], dict[str, list[float]],
                        dict[str, tuple[list[int], list[float]]]]:
        pid = _uuid(p.id)
        payload = p.payload if isinstance(p.payload, Mapping) else None
        ns = payload.get("namespace") if payload is not None else None
        _require_ns(ns)  # type: ignore[arg-type]
        dense: dict[str, list[float]] = {}
        for name, values in p.vectors.items():
            shape.need(collection, name)
            dense[name] = _dense(values, collection, name, shape.dense[name])
        sparse: dict[str, tuple[list[int], list[float]]] = {}
        for name, sv in p.sparse.items():
            shape.need(collection, name, sparse=True)
            sparse[name] = _sparse_parts(sv, collection, name)
        if not dense and not sparse:
            raise VectorError(f"point {pid} has no vectors")
        body = _jsonable(dict(payload or {}))
        try:
            json.dumps(body, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"point {pid}: payload is not JSON: {exc}") from exc
        if "\x00" in json.dumps(body):
            raise InvalidInputError(f"point {pid}: payload holds a NUL character, "
                                    "which PostgreSQL text cannot store")
        return pid, str(ns), body, dense, sparse

    def delete(self, collection: str, ids: Sequence[str], *, namespace: str) -> None:
        """Delete points by id within ``namespace``; unknown ids are a no-op."""
        _require_ns(namespace)
        wanted = [uuid.UUID(_uuid(i)) for i in ids]
        table = self._table(collection)
        with self._tx(collection) as conn:
            self._shape(conn, collection)
            if wanted:
                self._hold_counts(conn, table, [namespace])
                conn.exec_driver_sql(f"DELETE FROM {_quote(table)} WHERE namespace = %s "
                                     "AND id = ANY(%s)", (namespace, wanted))

    def set_payload(
        self, collection: str, ids: Sequence[str], payload: Mapping[str, Any], *, namespace: str
    ) -> None:
        """Merge ``payload`` into the points of ``namespace`` (vectors untouched); the
        namespace field itself cannot be changed."""
        _require_ns(namespace)
        if "namespace" in payload and payload["namespace"] != namespace:
            raise InvalidInputError("set_payload cannot move a point to another namespace")
        wanted = [uuid.UUID(_uuid(i)) for i in ids]
        patch = _jsonable(dict(payload))
        try:
            text = json.dumps(patch, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"payload is not JSON: {exc}") from exc
        table = self._table(collection)
        with self._tx(collection) as conn:
            self._shape(conn, collection)
            if wanted:
                conn.exec_driver_sql(
                    f"UPDATE {_quote(table)} SET payload = payload || %s::jsonb "
                    "WHERE namespace = %s AND id = ANY(%s)", (text, namespace, wanted))

    def clear(self, collection: str, *, namespace: str) -> None:
        """Delete every point of ``namespace`` in the collection, nothing else."""
        _require_ns(namespace)
        table = self._table(collection)
        with self._tx(collection) as conn:
            self._shape(conn, collection)
            self._hold_counts(conn, table, [namespace])
            conn.exec_driver_sql(f"DELETE FROM {_quote(table)} WHERE namespace = %s",
                                 (namespace,))

    # --- reads ----------------------------------------------------------------------
    def nearest(
        self,
        collection: str,
        query: Sequence[float] | SparseVector,
        *,
        namespace: str,
        using: str = "dense",
        limit: int = 10,
        filters: VectorFilter | None = None,
        score_threshold: float | None = None,
        ids: Sequence[str] | None = None,
        with_payload: bool = True,
    ) -> list[VectorHit]:
        """Nearest points in ``namespace`` by the named dense or sparse vector;
        ``ids`` restricts the search to those points (an empty list finds nothing);
        ``with_payload=False``: hits with an empty payload."""
        wanted = _search_ids(namespace, limit, ids)
        where, args = _where(namespace, filters)
        if wanted == []:
            return []
        if wanted is not None:
            where += " AND p.id = ANY(%s)"
            args.append([uuid.UUID(i) for i in wanted])
        _check_threshold(score_threshold)
        with self._tx(collection) as conn:
            rows = self._ranked(conn, collection, query, using, namespace, where, args,
                                limit, score_threshold, exact=wanted is not None)
        return [VectorHit(str(pid), _finite(score), dict(payload) if with_payload else {})
                for pid, score, payload in rows]

    def _ranked(self, conn: Any, collection: str, query: Sequence[float] | SparseVector,
                using: str, namespace: str, where: str, args: list[Any], limit: int,
                threshold: float | None, *, exact: bool) -> list[Any]:
        """The (id, score, payload) rows of one nearest query in the open transaction."""
        table = self._table(collection)
        shape = self._shape(conn, collection)
        shape.need(collection, using, sparse=isinstance(query, SparseVector))
        if isinstance(query, SparseVector):
            terms, weights = _sparse_parts(query, collection, using)
            return self._sparse_search(conn, table, using, terms, weights, namespace,
                                       where, args, limit, threshold)
        q = _vec_text(_dense(query, collection, using, shape.dense[using]))
        return self._dense_search(conn, table, shape.distance, using, q, where, args,
                                  limit, threshold, exact=exact)

    def nearest_batch(
        self,
        collection: str,
        queries: Sequence[Sequence[float]],
        *,
        namespace: str,
        using: str = "dense",
        limit: int = 10,
        filters: VectorFilter | None = None,
        score_threshold: float | None = None,
    ) -> list[list[VectorHit]]:
        """Dense :meth:`nearest` for every query, one statement each (each an index scan
        of its own on the server), all in one transaction: one connection check and one
        commit for the batch (the add path's duplicate check asks one per memory);
        payloads empty."""
        if not queries:
            return []
        where, args = _where(namespace, filters)
        _check_threshold(score_threshold)
        with self._tx(collection) as conn:
            return [[VectorHit(str(pid), _finite(score), {}) for pid, score, _ in
                     self._ranked(conn, collection, q, using, namespace, where, args, limit,
                                  score_threshold, exact=False)]
                    for q in queries]

    def retrieve(self, collection: str, ids: Sequence[str], *, namespace: str) -> list[VectorHit]:
        """Points by id (score 0.0) in request order, only those in ``namespace``."""
        _require_ns(namespace)
        wanted = list(dict.fromkeys(_uuid(i) for i in ids))
        table = self._table(collection)
        with self._tx(collection) as conn:
            self._shape(conn, collection)
            if not wanted:
                return []
            rows = conn.exec_driver_sql(
                f"SELECT id, payload FROM {_quote(table)} WHERE namespace = %s "
                "AND id = ANY(%s)", (namespace, [uuid.UUID(i) for i in wanted])).all()
        found = {str(pid): dict(payload) for pid, payload in rows}
        return [VectorHit(i, 0.0, found[i]) for i in wanted if i in found]

    def count(
        self,
        collection: str,
        *,
        namespace: str,
        filters: VectorFilter | None = None,
    ) -> int:
        """Exact number of points in ``namespace`` matching ``filters``."""
        where, args = _where(namespace, filters)
        table = self._table(collection)
        with self._tx(collection) as conn:
            self._shape(conn, collection)
            return int(conn.exec_driver_sql(
                f"SELECT count(*) FROM {_quote(table)} p WHERE {where}", tuple(args)).scalar()
                or 0)

    def ids(self, collection: str, *, namespace: str) -> set[str]:
        """Every point id in ``namespace`` (used by reconcile)."""
        _require_ns(namespace)
        table = self._table(collection)
        with self._tx(collection) as conn:
            self._shape(conn, collection)
            rows = conn.exec_driver_sql(
                f"SELECT id FROM {_quote(table)} WHERE namespace = %s", (namespace,)).all()
        return {str(r[0]) for r in rows}


