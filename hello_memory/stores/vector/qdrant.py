"""Qdrant implementation of :class:`~hello_memory.stores.vector.base.VectorStore`.

One code path over ``qdrant_client.QdrantClient`` for the three deployments: in-memory
(``location=":memory:"``), embedded (``path=``) and server (``url=``). Every call is
scoped by the payload field ``namespace``; qdrant-client exceptions are translated into
the hello-memory tree at this boundary. An unknown collection raises
:class:`~hello_memory.errors.CollectionNotFoundError` (a configuration fault, not a missing id).
"""

from __future__ import annotations

import inspect
import math
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, get_args

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from hello_memory.errors import (
    BackendUnavailableError,
    CollectionNotFoundError,
    DimensionMismatchError,
    HelloMemoryError,
    InvalidInputError,
    NamespaceRequiredError,
    VectorError,
    VectorStoreError,
)
from hello_memory.stores.vector._common import (
    Cond,
    _check_spec,
    _dense,
    _jsonable,
    _require_ns,
    _search_ids,
    _Shape,
    _sparse_parts,
    _uuid,
    filter_conditions,
)
from hello_memory.stores.vector.base import CollectionSpec, PayloadIndex, VectorFilter
from hello_memory.types import SparseVector, VectorHit, VectorPoint

__all__ = ["QdrantVectorStore"]

_BATCH = 256
_DISTANCES = {d: models.Distance[d.upper()] for d in ("cosine", "dot", "euclid")}
_INDEX_TYPES = {k: models.PayloadSchemaType[k.upper()] for k in get_args(PayloadIndex)}


class QdrantVectorStore:
    """Vector store over Qdrant: in-memory, embedded directory or server.

    Exactly one of ``location`` (only ``":memory:"``), ``path`` or ``url`` must be given.
    ``collection_prefix`` is prepended to every collection name inside Qdrant so one
    server can host several deployments; errors name the caller's collection name.
    """

    def __init__(
        self,
        *,
        location: str | None = None,
        path: str | None = None,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float = 5.0,
        collection_prefix: str = "",
    ) -> None:
        given = [n for n, v in (("location", location), ("path", path), ("url", url)) if v]
        if len(given) != 1 or location not in (None, ":memory:"):
            raise InvalidInputError(
                "QdrantVectorStore needs exactly one of location=':memory:', path= or url= "
                f"(got {given or 'none'}, location={location!r})"
            )
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise InvalidInputError(f"timeout must be a positive number of seconds: {timeout!r}")
        self._mode = "memory" if location else "path" if path else "url"
        self._path, self._url = path, url
        self._api_key = api_key
        self._timeout = float(timeout)
        self._prefix = collection_prefix
        self._client: QdrantClient | None = None
        self._shapes: dict[str, _Shape] = {}
        # qdrant-client's local mode (":memory:" and path=) mutates numpy arrays with no
        # locking of its own: concurrent upsert + search can index past an array's end.
        # Every client call runs inside _translate, which holds this lock in local mode.
        self._local_lock: threading.RLock | None = None if url else threading.RLock()
        # local mode: one call at a time, in this process's numpy (base.calls_in_turn)
        self.serial_calls = url is None

    # --- lifecycle ------------------------------------------------------------------
    def open(self) -> None:
        """Create the client (no-op when already open). Raises BackendUnavailableError
        when the embedded directory is locked/unusable or the server is unreachable."""
        if self._client is not None:
            return
        if self._mode == "memory":
            self._client = QdrantClient(location=":memory:")
        elif self._mode == "path":
            self._client = self._open_path(str(self._path))
        else:
            self._client = self._open_url(str(self._url))

    def _open_path(self, path: str) -> QdrantClient:
        try:
            os.makedirs(path, exist_ok=True)
            _probe_lock(path)
            return QdrantClient(path=path)
        except RuntimeError as exc:  # portalocker lock held by another client
            raise BackendUnavailableError(
                f"embedded Qdrant directory {path!r} is already open in another client: one "
                "process (one store) per embedded directory; share data through a server (url=)"
            ) from exc
        except (OSError, ValueError) as exc:
            raise BackendUnavailableError(f"cannot open Qdrant directory {path!r}: {exc}") from exc

    def _open_url(self, url: str) -> QdrantClient:
        kwargs: dict[str, Any] = {}
        # Its version probe would make an unbounded extra request and only warn on failure.
        if "check_compatibility" in inspect.signature(QdrantClient.__init__).parameters:
            kwargs["check_compatibility"] = False
        try:
            client = QdrantClient(
                url=url, api_key=self._api_key, timeout=math.ceil(self._timeout), **kwargs
            )
        except (ValueError, TypeError) as exc:
            raise BackendUnavailableError(f"invalid Qdrant url {url!r}: {exc}") from exc
        try:
            client.get_collections()  # bounded reachability (and auth) check
        except Exception as exc:
            client.close()
            raise BackendUnavailableError(
                f"cannot reach Qdrant at {url!r} within {self._timeout:g}s: {exc}"
            ) from exc
        return client

    def close(self) -> None:
        """Close the client and release an embedded directory's lock; safe twice."""
        client, self._client = self._client, None
        self._shapes.clear()
        if client is not None:
            client.close()

    # --- collections ----------------------------------------------------------------
    def ensure_collection(self, spec: CollectionSpec) -> None:
        """Create the collection if missing; if it exists, check every named vector
        (DimensionMismatchError naming both sizes; VectorError for a missing one)."""
        _check_spec(spec)
        client, qname = self._c(), self._qname(spec.name)
        with self._tolerate_exists(spec.name):  # another process may create it first
            if not client.collection_exists(qname):
                client.create_collection(
                    qname,
                    vectors_config={
                        n: models.VectorParams(size=s, distance=_DISTANCES[spec.distance])
                        for n, s in spec.dense.items()
                    },
                    sparse_vectors_config={
                        n: models.SparseVectorParams(modifier=models.Modifier.IDF)
                        for n in spec.sparse
                    },
                )
        shape = self._load_shape(spec.name)  # what the collection really holds
        for name, size in spec.dense.items():
            shape.need(spec.name, name)
            if shape.dense[name] != size:
                raise DimensionMismatchError(spec.name, shape.dense[name], size, name)
        for name in spec.sparse:
            shape.need(spec.name, name, sparse=True)
        if spec.dense and shape.distance != spec.distance:
            raise VectorError(f"{spec.name!r} uses {shape.distance} distance, not {spec.distance}")
        self._shapes[spec.name] = shape
        # Local mode warns that payload indexes have no effect there, so only the server
        # gets them.
        if self._mode == "url":
            indexes = {"namespace": "keyword", **(spec.payload_indexes or {})}
            for field, kind in indexes.items():
                with self._tolerate_exists(spec.name):
                    client.create_payload_index(
                        qname, field_name=field, field_schema=_INDEX_TYPES[kind], wait=True
                    )

    @contextmanager
    def _tolerate_exists(self, collection: str) -> Iterator[None]:
        """Creating something that already exists (a racing creator) counts as success."""
        try:
            with self._translate(collection):
                yield
        except VectorStoreError as exc:
            if "already exists" not in str(exc).lower():
                raise

    def _load_shape(self, collection: str) -> _Shape:
        with self._translate(collection):
            params = self._c().get_collection(self._qname(collection)).config.params
        vectors = params.vectors
        if isinstance(vectors, models.VectorParams):  # a single unnamed vector
            vectors = {"": vectors}
        dense = {n: p.size for n, p in (vectors or {}).items()}
        distances = {p.distance for p in (vectors or {}).values()}
        distance = next(
            (k for k, v in _DISTANCES.items() if distances == {v}), "mixed" if dense else "cosine"
        )
        return _Shape(dense, frozenset(params.sparse_vectors or {}), distance)

    def _shape(self, collection: str) -> _Shape:
        """Cached shape; one round trip the first time (e.g. after a reopen)."""
        if collection not in self._shapes:
            self._shapes[collection] = self._load_shape(collection)
        return self._shapes[collection]

    # --- writes ---------------------------------------------------------------------
    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id; validates every point before writing any."""
        shape = self._shape(collection)
        structs = [self._point_struct(collection, shape, p) for p in points]
        owner: dict[str, str] = {}
        for st in structs:
            ns = (st.payload or {})["namespace"]
            if owner.setdefault(str(st.id), ns) != ns:
                raise InvalidInputError(f"id {st.id} is given for two namespaces in one upsert")
        client, qname = self._c(), self._qname(collection)
        with self._translate(collection):
            # Ids are unique per collection, not per namespace: refuse (before writing
            # anything) to replace a point that another namespace owns.
            for start in range(0, len(structs), _BATCH):
                batch = [st.id for st in structs[start : start + _BATCH]]
                for rec in client.retrieve(qname, ids=batch, with_payload=["namespace"]):
                    if (rec.payload or {}).get("namespace") != owner[str(rec.id)]:
                        raise InvalidInputError(f"id {rec.id} belongs to another namespace")
            for start in range(0, len(structs), _BATCH):
                client.upsert(qname, points=structs[start : start + _BATCH], wait=True)

    def _point_struct(self, collection: str, shape: _Shape, p: VectorPoint) -> models.PointStruct:
        pid = _uuid(p.id)
        payload = p.payload if isinstance(p.payload, Mapping) else None
        ns = payload.get("namespace") if payload is not None else None
        if not isinstance(ns, str) or not ns.strip():
            raise NamespaceRequiredError(
                f"point {pid} needs a non-empty str payload['namespace'] (got {ns!r})"
            )
        vector: dict[str, Any] = {}
        for name, values in p.vectors.items():
            shape.need(collection, name)
            vector[name] = _dense(values, collection, name, shape.dense[name])
        for name, sparse in p.sparse.items():
            shape.need(collection, name, sparse=True)
            vector[name] = _sparse(sparse, collection, name)
        if not vector:
            raise VectorError(f"point {pid} has no vectors")
        return models.PointStruct(id=pid, vector=vector, payload=_jsonable(dict(payload or {})))

    def delete(self, collection: str, ids: Sequence[str], *, namespace: str) -> None:
        """Delete points by id within ``namespace``; unknown ids are a no-op."""
        _require_ns(namespace)
        wanted = [_uuid(i) for i in ids]
        if not wanted:
            return
        # The id condition is ANDed with the namespace, so a point of another namespace
        # with the same id can never be deleted.
        has_id = models.HasIdCondition(has_id=list(dict.fromkeys(wanted)))
        self._delete_where(collection, self._filter(namespace, None, has_id))

    def set_payload(
        self, collection: str, ids: Sequence[str], payload: Mapping[str, Any], *, namespace: str
    ) -> None:
        """Merge ``payload`` into the points' payloads (vectors untouched), only for
        points of ``namespace``; the namespace field itself cannot be changed."""
        _require_ns(namespace)
        if "namespace" in payload and payload["namespace"] != namespace:
            raise InvalidInputError("set_payload cannot move a point to another namespace")
        wanted: list[Any] = list(dict.fromkeys(_uuid(i) for i in ids))
        if not wanted:
            return
        has_id = models.HasIdCondition(has_id=wanted)
        with self._translate(collection):
            self._c().set_payload(
                self._qname(collection), payload=_jsonable(dict(payload)),
                points=models.FilterSelector(filter=self._filter(namespace, None, has_id)),
                wait=True,
            )

    def optimize(self, collection: str) -> bool:
        """Nothing to do: a Qdrant server builds its HNSW segments in the background and
        qdrant-client's local mode has no index. Checks that the collection exists."""
        with self._translate(collection):
            if not self._c().collection_exists(self._qname(collection)):
                raise CollectionNotFoundError(f"unknown collection {collection!r}")
        return False

    def clear(self, collection: str, *, namespace: str) -> None:
        """Delete every point of ``namespace`` in the collection, nothing else."""
        self._delete_where(collection, self._filter(namespace, None))

    def _delete_where(self, collection: str, flt: models.Filter) -> None:
        with self._translate(collection):
            selector = models.FilterSelector(filter=flt)
            self._c().delete(self._qname(collection), points_selector=selector, wait=True)

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
        if wanted == []:
            return []
        extra = () if wanted is None else (models.HasIdCondition(has_id=list(wanted)),)
        flt = self._filter(namespace, filters, *extra)
        shape = self._shape(collection)
        shape.need(collection, using, sparse=isinstance(query, SparseVector))
        q: Any = (
            _sparse(query, collection, using)
            if isinstance(query, SparseVector)
            else _dense(query, collection, using, shape.dense[using])
        )
        with self._translate(collection):
            res = self._c().query_points(
                self._qname(collection), q, using=using, query_filter=flt, limit=limit,
                with_payload=bool(with_payload), score_threshold=score_threshold,
            )  # fmt: skip
        return [VectorHit(str(p.id), float(p.score),
                          dict(p.payload or {}) if with_payload else {}) for p in res.points]

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
        """Dense :meth:`nearest` for every query in one ``query_batch_points`` call;
        payloads empty."""
        _search_ids(namespace, limit, None)
        if not queries:
            return []
        flt = self._filter(namespace, filters)
        shape = self._shape(collection)
        shape.need(collection, using, sparse=False)
        reqs = [models.QueryRequest(query=_dense(q, collection, using, shape.dense[using]),
                                    using=using, filter=flt, limit=limit, with_payload=False,
                                    score_threshold=score_threshold) for q in queries]
        with self._translate(collection):
            res = self._c().query_batch_points(self._qname(collection), requests=reqs)
        return [[VectorHit(str(p.id), float(p.score), {}) for p in r.points] for r in res]

    def retrieve(self, collection: str, ids: Sequence[str], *, namespace: str) -> list[VectorHit]:
        """Points by id (score 0.0) in request order, only those in ``namespace``."""
        _require_ns(namespace)
        wanted = list(dict.fromkeys(_uuid(i) for i in ids))
        if not wanted:
            return []
        with self._translate(collection):
            recs = self._c().retrieve(self._qname(collection), ids=wanted, with_payload=True)
        found = {str(r.id): dict(r.payload or {}) for r in recs}
        return [
            VectorHit(i, 0.0, found[i])
            for i in wanted
            if i in found and found[i].get("namespace") == namespace
        ]

    def count(
        self,
        collection: str,
        *,
        namespace: str,
        filters: VectorFilter | None = None,
    ) -> int:
        """Exact number of points in ``namespace`` matching ``filters``."""
        flt = self._filter(namespace, filters)
        with self._translate(collection):
            return self._c().count(self._qname(collection), count_filter=flt, exact=True).count

    def collections(self) -> list[str]:
        """Names of the collections this store holds (without the prefix), sorted."""
        try:
            names = [c.name for c in self._c().get_collections().collections]
        except VectorStoreError:
            raise
        except Exception as exc:
            raise VectorStoreError(f"cannot list the collections: {exc}") from exc
        return sorted(n[len(self._prefix):] for n in names
                      if n.startswith(self._prefix) and len(n) > len(self._prefix))

    def ids(self, collection: str, *, namespace: str) -> set[str]:
        """Every point id in ``namespace`` (used by reconcile)."""
        flt = self._filter(namespace, None)
        out: set[str] = set()
        offset: Any = None
        with self._translate(collection):
            while True:
                recs, offset = self._c().scroll(
                    self._qname(collection), flt, limit=1024, offset=offset, with_payload=False
                )
                out.update(str(r.id) for r in recs)
                if offset is None:
                    return out

    # --- helpers --------------------------------------------------------------------
    def _c(self) -> QdrantClient:
        if self._client is None:
            raise VectorStoreError("QdrantVectorStore is not open; call open() first")
        return self._client

    def _qname(self, collection: str) -> str:
        if not isinstance(collection, str) or not collection:
            raise InvalidInputError(f"collection name must be a non-empty str: {collection!r}")
        return self._prefix + collection

    def _filter(
        self, namespace: str, filters: VectorFilter | None, *extra: Any
    ) -> models.Filter:
        _require_ns(namespace)
        must: list[Any] = [
            models.FieldCondition(key="namespace", match=models.MatchValue(value=namespace)),
            *extra,
        ]
        must.extend(_condition(c) for c in filter_conditions(filters))
        return models.Filter(must=must)

    @contextmanager
    def _translate(self, collection: str) -> Iterator[None]:
        """Map qdrant-client exceptions onto the hello-memory tree (``from exc``)."""
        where = self._url if self._mode == "url" else self._path or ":memory:"
        try:
            if self._local_lock is None:
                yield
            else:
                with self._local_lock:
                    yield
        except HelloMemoryError:
            raise
        except ResponseHandlingException as exc:  # connection refused, timeout, ...
            raise BackendUnavailableError(f"Qdrant at {where!r} failed: {exc}") from exc
        except UnexpectedResponse as exc:
            if exc.status_code == 404:
                raise CollectionNotFoundError(f"unknown collection {collection!r}") from exc
            raise VectorStoreError(f"Qdrant error on {collection!r}: {exc}") from exc
        except (ValueError, KeyError) as exc:  # local mode reports most faults this way
            msg = str(exc).lower()
            if "collection" in msg and "not found" in msg:
                raise CollectionNotFoundError(f"unknown collection {collection!r}") from exc
            raise VectorStoreError(f"Qdrant error on {collection!r}: {exc}") from exc
        except (RuntimeError, OSError) as exc:
            raise BackendUnavailableError(f"Qdrant at {where!r} failed: {exc}") from exc


# --- module helpers ------------------------------------------------------------------
def _probe_lock(path: str) -> None:
    """Fail fast on a locked directory: QdrantLocal loads every collection before it
    tries the lock, and on failure leaks the lock file and the loaded storage."""
    import portalocker  # a qdrant-client dependency; it probes the filesystem on import

    lock_path = os.path.join(path, ".lock")
    if not os.path.exists(lock_path):
        return
    with open(lock_path, "r+") as fh:
        try:
            portalocker.lock(
                fh, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
            )
        except portalocker.exceptions.LockException as exc:
            raise RuntimeError(f"{path} is locked") from exc
        portalocker.unlock(fh)


def _sparse(vec: SparseVector, collection: str, name: str) -> models.SparseVector:
    idx, vals = _sparse_parts(vec, collection, name)
    return models.SparseVector(indices=idx, values=vals)


def _condition(c: Cond) -> models.FieldCondition:
    """One parsed filter condition (``_common.filter_conditions``) as qdrant-client's."""
    key = c.key
    if c.kind == "value":
        return models.FieldCondition(key=key, match=models.MatchValue(value=c.values[0]))
    if c.kind == "any":
        return models.FieldCondition(key=key, match=models.MatchAny(any=list(c.values)))
    if c.kind == "datetime":
        return models.FieldCondition(key=key, range=models.DatetimeRange(gte=c.gte, lte=c.lte))
    return models.FieldCondition(key=key, range=models.Range(gte=c.gte, lte=c.lte))
