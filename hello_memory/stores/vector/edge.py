"""Embedded :class:`~hello_memory.stores.vector.base.VectorStore` over Qdrant Edge.

Qdrant Edge (PyPI ``qdrant-edge-py``) runs the Qdrant engine itself inside the process:
payload indexes, filtered exact search and the sparse IDF modifier are the server's Rust
code, not qdrant-client's pure-Python local mode (which scans every point in Python to
evaluate a payload filter). The directory layout under ``path``::

    .lock                 exclusive lock: one process (one store) per directory
    edge/<collection>/    one Edge shard per collection (WAL + segments)

The ``.lock`` file is the same one qdrant-client's local mode takes, so the two embedded
backends also refuse each other on one directory. Validation, filter semantics and
error types are shared with the qdrant-client backend through
:mod:`hello_memory.stores.vector._common` (this module never imports qdrant-client).

Searches are exact (brute force in Rust over the points the payload indexes select)
until :meth:`QdrantEdgeVectorStore.optimize` builds HNSW segments (``hello-memory jobs
optimize``): Edge never optimises in the background, so writes never stall on an index
build. Before that, results match the server's ``exact=True`` and cost grows with the
namespace's size (not with other namespaces'); after it, a filter selecting more than
``full_scan_threshold_kb`` of vectors is answered from the HNSW graph (approximate, beam
width ``ef``), smaller ones stay exact, and points written later are searched exactly
beside the graph until the next optimize.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

from hello_memory.errors import (
    BackendUnavailableError,
    CollectionNotFoundError,
    DimensionMismatchError,
    HelloMemoryError,
    InvalidInputError,
    VectorError,
    VectorStoreError,
)
from hello_memory.server_info import write_private
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
    iso,
)
from hello_memory.stores.vector.base import CollectionSpec, HnswParams, VectorFilter
from hello_memory.types import SparseVector, VectorHit, VectorPoint

__all__ = ["QdrantEdgeVectorStore"]

log = logging.getLogger(__name__)

_BATCH = 1024
# Edge's own indexing threshold (KB): a build indexes every plain segment, however small,
# so `jobs optimize` leaves no tail searched by brute force; when the writes build is
# this store's decision (``indexing_threshold_kb``, _index_if_due; docs/PERFORMANCE.md,
# "Where the embedded path is brute force").
BUILD_ALL_KB = 1
_DISTANCE_NAMES = {"cosine": "Cosine", "dot": "Dot", "euclid": "Euclid"}


def _edge() -> Any:
    """The ``qdrant_edge`` module, or a typed error naming the package to install."""
    try:
        import qdrant_edge
    except ImportError as exc:
        raise BackendUnavailableError(
            "the embedded vector backend 'edge' needs qdrant-edge-py: pip install "
            "qdrant-edge-py (or set vector.embedded: local for qdrant-client's local mode)"
        ) from exc
    return qdrant_edge


class QdrantEdgeVectorStore:
    """Vector store over Qdrant Edge shards in one directory (``path``).

    ``collection_prefix`` is prepended to every collection's directory name, as the
    server backend prefixes collection names; errors name the caller's collection.
    ``hnsw`` configures the graph that :meth:`optimize` builds and the search beam.
    """

    # Calls run one at a time (the mutex below) and Edge holds the GIL while a query
    # runs: base.calls_in_turn.
    serial_calls = True

    def __init__(self, *, path: str, collection_prefix: str = "",
                 hnsw: HnswParams | None = None) -> None:
        if not isinstance(path, str) or not path:
            raise InvalidInputError(f"QdrantEdgeVectorStore needs a directory path, got {path!r}")
        self._path = path
        self._prefix = collection_prefix
        self._hnsw = hnsw or HnswParams()
        self._lock_file: IO[str] | None = None
        self._shards: dict[str, Any] = {}
        self._shapes: dict[str, _Shape] = {}
        # Points written per collection since its graph was last built (auto_index).
        self._unindexed: dict[str, int] = {}
        # Collections whose open shard runs this store's settings (created or reloaded
        # with them): optimize builds on it as it is, without reloading every segment.
        self._configured: set[str] = set()
        # Serialises shard calls with close(): a query racing a close would touch a
        # released shard. Edge itself is thread-safe; the lock only guards our maps.
        self._mutex = threading.RLock()

    # --- lifecycle ------------------------------------------------------------------
    def open(self) -> None:
        """Take the directory's lock (BackendUnavailableError when another store holds
        it); shards are loaded on first use. No-op when already open."""
        if self._lock_file is not None:
            return
        import portalocker  # a qdrant-client dependency; it probes the filesystem on import

        _edge()
        try:
            os.makedirs(os.path.join(self._path, "edge"), exist_ok=True)
            fh = open(os.path.join(self._path, ".lock"), "a+")  # noqa: SIM115 - held open
        except OSError as exc:
            raise BackendUnavailableError(f"cannot open vector directory {self._path!r}: {exc}"
                                          ) from exc
        try:
            flags = portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
            portalocker.lock(fh, flags)
        except portalocker.exceptions.LockException as exc:
            fh.close()
            raise BackendUnavailableError(
                f"embedded vector directory {self._path!r} is already open in another client: "
                "one process (one store) per embedded directory; share data through a server "
                "(url=)"
            ) from exc
        self._lock_file = fh

    def close(self) -> None:
        """Flush and close every shard, then release the lock; safe twice."""
        with self._mutex:
            shards, self._shards = self._shards, {}
            self._shapes.clear()
            self._unindexed.clear()
            self._configured.clear()
            fh, self._lock_file = self._lock_file, None
            try:
                for shard in shards.values():
                    shard.flush()
                    shard.close()
            finally:
                if fh is not None:
                    fh.close()  # closing the descriptor releases the flock

    # --- collections ----------------------------------------------------------------
    def ensure_collection(self, spec: CollectionSpec) -> None:
        """Create the shard if missing (with a tenant index on ``namespace`` and the
        spec's payload indexes); if it exists, check every named vector."""
        _check_spec(spec)
        e = _edge()
        with self._guard(spec.name):
            directory = self._dir(spec.name)
            if spec.name not in self._shards and not _has_shard(directory):
                config = self._config(e, {n: (size, spec.distance)
                                          for n, size in spec.dense.items()}, spec.sparse)
                self._shards[spec.name] = e.EdgeShard.create(str(directory), config)
                self._configured.add(spec.name)
                if Path(self._path, "collection", self._prefix + spec.name).is_dir():
                    log.warning(
                        "%s holds a qdrant-client local-mode collection %r that the Edge "
                        "backend does not read: rebuild its vectors from the records (reindex) "
                        "or set vector.embedded: local", self._path, spec.name)
            shape = self._load_shape(spec.name)
            for name, size in spec.dense.items():
                shape.need(spec.name, name)
                if shape.dense[name] != size:
                    raise DimensionMismatchError(spec.name, shape.dense[name], size, name)
            for name in spec.sparse:
                shape.need(spec.name, name, sparse=True)
            if spec.dense and shape.distance != spec.distance:
                raise VectorError(
                    f"{spec.name!r} uses {shape.distance} distance, not {spec.distance}")
            self._shapes[spec.name] = shape
            shard = self._shard(spec.name)
            have = set(shard.info().payload_schema)
            wanted = {"namespace": "keyword", **(spec.payload_indexes or {})}
            for field, kind in wanted.items():
                if field in have:
                    continue
                schema: Any = (e.KeywordIndexParams(is_tenant=True) if field == "namespace"
                               else getattr(e.PayloadSchemaType, kind.capitalize()))
                shard.update(e.UpdateOperation.create_field_index(field, schema))

    def _config(self, e: Any, dense: Mapping[str, tuple[int, str]],
                sparse: Sequence[str]) -> Any:
        """A shard configuration: the vectors, plus the HNSW and optimiser settings
        that only :meth:`optimize` acts on (Edge persists them with the shard)."""
        h = self._hnsw
        return e.EdgeConfig(
            vectors={n: e.EdgeVectorParams(
                size=size, distance=getattr(e.Distance, _DISTANCE_NAMES[distance]))
                for n, (size, distance) in dense.items()},
            sparse_vectors={n: e.EdgeSparseVectorParams(modifier=e.Modifier.Idf)
                            for n in sparse},
            hnsw_config=e.HnswIndexConfig(
                m=h.m, ef_construct=h.ef_construct, full_scan_threshold=h.full_scan_threshold_kb,
                payload_m=h.payload_m),
            # Edge builds what is unindexed whenever it is asked to: when is this
            # store's decision (``indexing_threshold_kb`` paces the writes' builds,
            # _index_if_due), so ``optimize`` leaves no plain tail to scan.
            optimizers=e.EdgeOptimizersConfig(indexing_threshold=BUILD_ALL_KB,
                                              max_segment_size=h.max_segment_size_kb),
        )

    def optimize(self, collection: str) -> bool:
        """Build HNSW segments for ``collection`` with the store's ``hnsw`` settings,
        every point written so far (no plain tail is left to scan, however small);
        blocks (and holds the interpreter: Edge keeps the GIL) until done, about a
        minute per 100k 384-d vectors on 2 cores. True if any segment was rebuilt."""
        e = _edge()
        with self._guard(collection):
            shard = self._shard(collection)  # unknown collection -> CollectionNotFoundError
            if collection not in self._configured:
                # Reloaded with the current settings, once per process: a shard created
                # before them (or with other ones) takes them on, and Edge persists them
                # for the next load. Later builds run on the open shard: reloading read
                # every segment again, a cost that grew with the collection.
                dense, sparse = self._stored_vectors(collection)
                old = self._shards.pop(collection)
                old.flush()
                old.close()
                shard = self._shards[collection] = e.EdgeShard.load(
                    str(self._dir(collection)), self._config(e, dense, sparse))
                self._configured.add(collection)
            changed = bool(shard.optimize())
            self._unindexed[collection] = 0
            self._note_built(collection, int(shard.info().points_count))
            return changed

    def _built_file(self, collection: str) -> Path:
        directory = self._dir(collection)
        return directory.with_name(directory.name + ".built")

    def _points_built(self, collection: str) -> int | None:
        """The points ``collection`` held after its last build, as noted beside the
        shard; None where no build was noted (a shard built before the note existed)."""
        try:
            points = json.loads(self._built_file(collection).read_text("utf-8"))["points"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return points if isinstance(points, int) and points >= 0 else None

    def _note_built(self, collection: str, points: int) -> None:
        """Note the points held after a build (written atomically): a process
        that opens the collection later counts what is unindexed from it (_index_if_due)."""
        write_private(self._built_file(collection), json.dumps({"points": points}))

    def _dir(self, collection: str) -> Path:
        if not isinstance(collection, str) or not collection:
            raise InvalidInputError(f"collection name must be a non-empty str: {collection!r}")
        name = self._prefix + collection
        if os.sep in name or name in (".", ".."):
            raise InvalidInputError(f"collection name cannot be a path: {collection!r}")
        return Path(self._path, "edge", name)

    def _shard(self, collection: str) -> Any:
        """The open shard of ``collection`` (loaded on first use)."""
        if self._lock_file is None:
            raise VectorStoreError("QdrantEdgeVectorStore is not open; call open() first")
        shard = self._shards.get(collection)
        if shard is None:
            directory = self._dir(collection)
            if not _has_shard(directory):
                raise CollectionNotFoundError(f"unknown collection {collection!r}")
            shard = self._shards[collection] = _edge().EdgeShard.load(str(directory))
        return shard

    def _stored_vectors(self, collection: str
                        ) -> tuple[dict[str, tuple[int, str]], list[str]]:
        """The shard's dense vectors (name -> size, distance) and sparse vector names.
        Edge keeps them in ``edge_config.json``; reading it avoids guessing sizes from
        stored points (an empty shard has none)."""
        raw = json.loads((self._dir(collection) / "edge_config.json").read_text("utf-8"))
        dense = {n: (int(p["size"]), str(p["distance"]).lower())
                 for n, p in (raw.get("vectors") or {}).items()}
        return dense, list(raw.get("sparse_vectors") or {})

    def _load_shape(self, collection: str) -> _Shape:
        dense, sparse = self._stored_vectors(collection)
        distances = {distance for _, distance in dense.values()}
        distance = distances.pop() if len(distances) == 1 else "mixed" if dense else "cosine"
        return _Shape({n: size for n, (size, _) in dense.items()}, frozenset(sparse), distance)

    def _shape(self, collection: str) -> _Shape:
        if collection not in self._shapes:
            self._shard(collection)  # unknown collection -> CollectionNotFoundError
            self._shapes[collection] = self._load_shape(collection)
        return self._shapes[collection]

    # --- writes ---------------------------------------------------------------------
    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id; validates every point before writing any."""
        e = _edge()
        with self._guard(collection):
            shape = self._shape(collection)
            structs = [self._point(e, collection, shape, p) for p in points]
            owner: dict[str, str] = {}
            for pid, ns, _ in structs:
                if owner.setdefault(pid, ns) != ns:
                    raise InvalidInputError(f"id {pid} is given for two namespaces in one upsert")
            shard = self._shard(collection)
            # Ids are unique per collection, not per namespace: refuse (before writing
            # anything) to replace a point that another namespace owns.
            ids = list(owner)
            for start in range(0, len(ids), _BATCH):
                for rec in shard.retrieve(ids[start:start + _BATCH], ["namespace"], False):
                    if (rec.payload or {}).get("namespace") != owner[str(rec.id)]:
                        raise InvalidInputError(f"id {rec.id} belongs to another namespace")
            for start in range(0, len(structs), _BATCH):
                batch = [pt for _, _, pt in structs[start:start + _BATCH]]
                shard.update(e.UpdateOperation.upsert_points(batch))
            if self._hnsw.auto_index and structs:
                self._index_if_due(collection, shape, len(structs))

    def _index_if_due(self, collection: str, shape: _Shape, written: int) -> None:
        """``hnsw.auto_index``: build the graph once the points written since the last
        build reach ``indexing_threshold_kb`` of vectors. Without it every search and
        every add's duplicate check scans the points written since, so ingest slowed
        with the namespace's size (issue 27). A process counts what is unindexed on its
        first write from the points noted at the last build (_note_built): one that
        finds that many written since, or a collection that large with no note (written
        with auto_index off, or before the note), builds; a short tail waits for more
        writes (a build costs ~0.6 s at 100k points however few it adds). Runs under
        the guard: that write waits for the build, and so do searches meanwhile."""
        dim = max(shape.dense.values(), default=0)
        if dim <= 0:
            return
        due = max(1, self._hnsw.indexing_threshold_kb * 1024 // (4 * dim))
        if collection not in self._unindexed:
            total = int(self._shard(collection).info().points_count)
            built = self._points_built(collection)
            if built is not None:  # written since the last build, this write left out
                self._unindexed[collection] = max(0, total - written - built)
            else:  # no note: a collection that large builds once
                self._unindexed[collection] = total - written if total >= due else 0
        self._unindexed[collection] += written
        if self._unindexed[collection] < due:
            return
        started = time.perf_counter()
        self.optimize(collection)
        log.info("built the HNSW graph of %r after %d writes in %.1f s", collection,
                 self._unindexed[collection], time.perf_counter() - started)

    def _point(self, e: Any, collection: str, shape: _Shape, p: VectorPoint
               ) -> tuple[str, str, Any]:
        pid = _uuid(p.id)
        payload = p.payload if isinstance(p.payload, Mapping) else None
        ns = payload.get("namespace") if payload is not None else None
        _require_ns(ns)  # type: ignore[arg-type]
        vector: dict[str, Any] = {}
        for name, values in p.vectors.items():
            shape.need(collection, name)
            vector[name] = _dense(values, collection, name, shape.dense[name])
        for name, sparse in p.sparse.items():
            shape.need(collection, name, sparse=True)
            vector[name] = e.SparseVector(*_sparse_parts(sparse, collection, name))
        if not vector:
            raise VectorError(f"point {pid} has no vectors")
        return pid, str(ns), e.Point(pid, vector, _jsonable(dict(payload or {})))

    def delete(self, collection: str, ids: Sequence[str], *, namespace: str) -> None:
        """Delete points by id within ``namespace``; unknown ids are a no-op."""
        _require_ns(namespace)
        wanted = {_uuid(i) for i in ids}
        if wanted:
            e = _edge()
            flt = _filter(e, namespace, None, e.HasIdCondition(wanted))
            with self._guard(collection):
                self._shard(collection).update(e.UpdateOperation.delete_points_by_filter(flt))

    def set_payload(
        self, collection: str, ids: Sequence[str], payload: Mapping[str, Any], *, namespace: str
    ) -> None:
        """Merge ``payload`` into the points of ``namespace`` (vectors untouched); the
        namespace field itself cannot be changed."""
        _require_ns(namespace)
        if "namespace" in payload and payload["namespace"] != namespace:
            raise InvalidInputError("set_payload cannot move a point to another namespace")
        wanted = {_uuid(i) for i in ids}
        if not wanted:
            return
        e = _edge()
        flt = _filter(e, namespace, None, e.HasIdCondition(wanted))
        with self._guard(collection):
            self._shard(collection).update(
                e.UpdateOperation.set_payload_by_filter(flt, _jsonable(dict(payload))))

    def clear(self, collection: str, *, namespace: str) -> None:
        """Delete every point of ``namespace`` in the collection, nothing else."""
        e = _edge()
        flt = _filter(e, namespace, None)
        with self._guard(collection):
            self._shard(collection).update(e.UpdateOperation.delete_points_by_filter(flt))

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
        e = _edge()
        extra = () if wanted is None else (e.HasIdCondition(set(wanted)),)
        flt = _filter(e, namespace, filters, *extra)
        with self._guard(collection):
            shape = self._shape(collection)
            shape.need(collection, using, sparse=isinstance(query, SparseVector))
            if isinstance(query, SparseVector):
                q: Any = e.SparseVector(*_sparse_parts(query, collection, using))
            else:
                q = _dense(query, collection, using, shape.dense[using])
            res = self._shard(collection).query(self._request(
                e, q, using, limit, flt, bool(with_payload), score_threshold,
                self._hnsw.ef))
        if not with_payload:
            return [VectorHit(str(p.id), float(p.score), {}) for p in res]
        return [VectorHit(str(p.id), float(p.score), dict(p.payload or {})) for p in res]

    @staticmethod
    def _request(e: Any, query: Any, using: str, limit: int, flt: Any,
                 with_payload: bool, score_threshold: float | None, ef: int) -> Any:
        """One nearest query of :meth:`nearest` / :meth:`nearest_batch`, with beam ``ef``."""
        return e.QueryRequest(limit=limit, query=e.Query.Nearest(query, using=using),
                              filter=flt, with_payload=with_payload,
                              score_threshold=score_threshold,
                              params=e.SearchParams(hnsw_ef=max(ef, limit)))

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
        """Dense :meth:`nearest` for every query, planned by Edge as one batch (its
        searches share one pass over the segments), with the probes' beam
        (``HnswParams.probe_ef``); payloads empty."""
        _search_ids(namespace, limit, None)
        if not queries:
            return []
        e = _edge()
        flt = _filter(e, namespace, filters)
        with self._guard(collection):
            shape = self._shape(collection)
            shape.need(collection, using, sparse=False)
            reqs = [self._request(e, _dense(q, collection, using, shape.dense[using]), using,
                                  limit, flt, False, score_threshold, self._hnsw.probe_ef)
                    for q in queries]
            res = self._shard(collection).query_batch(e.QueryBatchRequest(reqs))
        return [[VectorHit(str(p.id), float(p.score), {}) for p in hits] for hits in res]

    def retrieve(self, collection: str, ids: Sequence[str], *, namespace: str) -> list[VectorHit]:
        """Points by id (score 0.0) in request order, only those in ``namespace``."""
        _require_ns(namespace)
        wanted = list(dict.fromkeys(_uuid(i) for i in ids))
        if not wanted:
            return []
        with self._guard(collection):
            recs = self._shard(collection).retrieve(wanted, True, False)
        found = {str(r.id): dict(r.payload or {}) for r in recs}
        return [VectorHit(i, 0.0, found[i]) for i in wanted
                if i in found and found[i].get("namespace") == namespace]

    def count(
        self,
        collection: str,
        *,
        namespace: str,
        filters: VectorFilter | None = None,
    ) -> int:
        """Exact number of points in ``namespace`` matching ``filters``."""
        e = _edge()
        flt = _filter(e, namespace, filters)
        with self._guard(collection):
            return int(self._shard(collection).count(e.CountRequest(filter=flt, exact=True)))

    def collections(self) -> list[str]:
        """Names of the collections this store holds (without the prefix), sorted."""
        if self._lock_file is None:
            raise VectorStoreError("QdrantEdgeVectorStore is not open; call open() first")
        root = Path(self._path, "edge")
        with self._mutex:
            found = set(self._shards)
            if root.is_dir():
                found |= {d.name[len(self._prefix):] for d in root.iterdir()
                          if d.name.startswith(self._prefix) and len(d.name) > len(self._prefix)
                          and _has_shard(d)}
        return sorted(found)

    def ids(self, collection: str, *, namespace: str) -> set[str]:
        """Every point id in ``namespace`` (used by reconcile)."""
        e = _edge()
        flt = _filter(e, namespace, None)
        out: set[str] = set()
        offset: Any = None
        with self._guard(collection):
            shard = self._shard(collection)
            while True:
                recs, offset = shard.scroll(e.ScrollRequest(
                    offset=offset, limit=1024, filter=flt, with_payload=False))
                out.update(str(r.id) for r in recs)
                if offset is None:
                    return out

    # --- helpers --------------------------------------------------------------------
    @contextmanager
    def _guard(self, collection: str) -> Iterator[None]:
        """Hold the mutex and map Edge's plain exceptions onto the hello-memory tree."""
        try:
            with self._mutex:
                yield
        except HelloMemoryError:
            raise
        except Exception as exc:  # Edge raises bare Exception with the engine's message
            msg = str(exc)
            if "WouldBlock" in msg or "Can't init WAL" in msg:
                raise BackendUnavailableError(
                    f"shard {collection!r} in {self._path!r} is locked by another process: "
                    f"one process (one store) per embedded directory ({msg})") from exc
            if "dimension error" in msg.lower():
                raise VectorError(f"{collection!r}: {msg}") from exc
            raise VectorStoreError(f"Qdrant Edge error on {collection!r}: {msg}") from exc


def _has_shard(directory: Path) -> bool:
    return (directory / "edge_config.json").is_file()


def _filter(e: Any, namespace: str, filters: VectorFilter | None, *extra: Any) -> Any:
    """The namespace condition ANDed with ``filters`` (parsed as for the server backend)."""
    _require_ns(namespace)
    must: list[Any] = [e.FieldCondition("namespace", match=e.MatchValue(namespace)), *extra]
    must.extend(_to_edge(e, c) for c in filter_conditions(filters))
    return e.Filter(must=must)


def _to_edge(e: Any, c: Cond) -> Any:
    if c.kind == "value":
        value = c.values[0]
        # Edge's MatchValue reads a Python bool as the integer 0 or 1 (it tries int
        # first), so True matched the payload value 1 and not true; a numpy bool is no
        # int and reaches Edge as a bool (tests/contract/test_vector_filter.py).
        return e.FieldCondition(c.key, match=e.MatchValue(
            np.bool_(value) if isinstance(value, bool) else value))
    if c.kind == "any":
        return e.FieldCondition(c.key, match=e.MatchAny(list(c.values)))
    if c.kind == "datetime":
        return e.FieldCondition(c.key, range=e.RangeDateTime(gte=iso(c.gte), lte=iso(c.lte)))
    return e.FieldCondition(c.key, range=e.RangeFloat(
        gte=None if c.gte is None else float(c.gte), lte=None if c.lte is None else float(c.lte)))
