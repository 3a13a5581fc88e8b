"""Contract suite for the :class:`VectorStore` backends, run against qdrant-client's
in-memory and embedded (path) modes, against Qdrant Edge (the engine in-process) and
against pgvector (a real PostgreSQL server with the extension, tests/postgres_server.py).
For the directory backends every read goes through a freshly reopened store, so each
assertion also proves that the write reached the directory."""

from __future__ import annotations

import math
import socket
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hello_memory.errors import (
    BackendUnavailableError,
    CollectionNotFoundError,
    DimensionMismatchError,
    InvalidInputError,
    NamespaceRequiredError,
    VectorError,
    VectorStoreError,
)
from hello_memory.stores.vector import (
    CollectionSpec,
    QdrantEdgeVectorStore,
    QdrantVectorStore,
    Range,
    VectorFilter,
    VectorStore,
)
from hello_memory.stores.vector.base import calls_in_turn
from hello_memory.types import SparseVector, VectorPoint

COL = "memories"
SPEC = CollectionSpec(COL, {"dense": 4}, sparse=("bm25",))
E = [[1.0 if i == j else 0.0 for j in range(4)] for i in range(4)]  # unit basis vectors


def uid() -> str:
    return str(uuid.uuid4())


def point(vec: list[float], ns: str = "a", pid: str | None = None, **payload: Any) -> VectorPoint:
    return VectorPoint(uid() if pid is None else pid, {"dense": vec}, {"namespace": ns, **payload})


class Harness:
    """Owns the store under test; ``read()`` reopens it first on the path backend."""

    def __init__(self, kind: str, tmp_path: Path, url: str | None = None) -> None:
        self.kind = kind
        self.dir = str(tmp_path / "qdrant")
        self.url = url
        self.store = self._new()

    def _new(self) -> VectorStore:
        if self.kind == "pgvector":
            from hello_memory.stores.vector import PgVectorStore

            pg: VectorStore = PgVectorStore(url=str(self.url), collection_prefix="hm_")
            pg.open()
            return pg
        store = embedded(self.kind, self.dir)
        store.open()
        return store

    def read(self) -> VectorStore:
        if self.kind != "memory":
            self.store.close()
            self.store = self._new()
        return self.store


def embedded(kind: str, path: str, prefix: str = "") -> VectorStore:
    """A store of backend ``kind`` ("memory", "path": qdrant-client local; "edge")."""
    if kind == "memory":
        return QdrantVectorStore(location=":memory:", collection_prefix=prefix)
    if kind == "edge":
        return QdrantEdgeVectorStore(path=path, collection_prefix=prefix)
    return QdrantVectorStore(path=path, collection_prefix=prefix)


@pytest.fixture(params=["memory", "path", "edge",
                        pytest.param("pgvector", marks=pytest.mark.postgres)])
def h(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    url = request.getfixturevalue("postgres_url") if request.param == "pgvector" else None
    harness = Harness(request.param, tmp_path, url)
    harness.store.ensure_collection(SPEC)
    yield harness
    harness.store.close()


def test_implements_protocol(h: Harness) -> None:
    assert isinstance(h.store, VectorStore)


def test_says_whether_its_calls_run_in_turn(h: Harness) -> None:
    """The embedded engines run one call at a time holding the GIL (the search then
    runs its views in one thread, issue 27); a server backend's calls overlap."""
    assert calls_in_turn(h.store) is (h.kind != "pgvector")
    assert calls_in_turn(QdrantVectorStore(url="http://127.0.0.1:1")) is False


# --- search -------------------------------------------------------------------------
def test_dense_search_ranks_nearest_first(h: Harness) -> None:
    pts = [point(e, n=i) for i, e in enumerate(E)]
    h.store.upsert(COL, pts)
    hits = h.read().nearest(COL, [0.1, 0.9, 0.2, 0.0], namespace="a", limit=3)
    assert [x.id for x in hits] == [pts[1].id, pts[2].id, pts[0].id]
    assert hits[0].payload == {"namespace": "a", "n": 1}
    assert hits[0].score > hits[1].score > hits[2].score
    high = h.store.nearest(COL, E[1], namespace="a", score_threshold=0.5)
    assert [x.id for x in high] == [pts[1].id]


def test_search_without_payload_finds_the_same_points(h: Harness) -> None:
    """``with_payload=False`` (the search's views read ids and scores only, issue 27):
    the same hits in the same order with the same scores, dense and sparse, filtered
    and restricted to ids, each with an empty payload."""
    pts = [point(e, n=i, status="active") for i, e in enumerate(E)]
    pts[0].sparse["bm25"] = SparseVector((3, 7), (1.0, 0.5))
    pts[2].sparse["bm25"] = SparseVector((7,), (2.0,))
    h.store.upsert(COL, pts + [point(E[1], ns="b")])
    store = h.read()
    for query, using, extra in [([0.1, 0.9, 0.2, 0.0], "dense", {}),
                                ([0.6, 0.5, 0.4, 0.0], "dense",
                                 {"filters": VectorFilter.where(status="active")}),
                                ([0.3, 0.1, 0.7, 0.0], "dense", {"ids": [pts[0].id, pts[2].id]}),
                                (SparseVector((7,), (1.0,)), "bm25", {})]:
        full = store.nearest(COL, query, namespace="a", using=using, limit=3, **extra)
        bare = store.nearest(COL, query, namespace="a", using=using, limit=3,
                             with_payload=False, **extra)
        assert [(x.id, x.score) for x in bare] == [(x.id, x.score) for x in full] and full
        assert all(x.payload == {} for x in bare) and all(x.payload for x in full)


def test_batch_search_finds_what_each_search_finds(h: Harness) -> None:
    """``nearest_batch`` (the add path's duplicate and supersession checks, issue 27):
    per query, the hits one ``nearest`` call finds with the same filter, threshold and
    limit, in order; other namespaces never reached; no queries, no hits."""
    pts = [point(e, n=i, status="active" if i != 2 else "gone") for i, e in enumerate(E)]
    h.store.upsert(COL, pts + [point(E[1], ns="b", status="active")])
    store = h.read()
    queries = [[0.1, 0.9, 0.2, 0.0], [0.6, 0.5, 0.4, 0.0], [0.0, 0.0, 1.0, 0.0], E[3]]
    active = VectorFilter.where(status="active")
    for extra in ({}, {"filters": active}, {"score_threshold": 0.5}):
        batch = store.nearest_batch(COL, queries, namespace="a", limit=2, **extra)
        assert len(batch) == len(queries)
        for q, hits in zip(queries, batch, strict=True):
            one = store.nearest(COL, q, namespace="a", limit=2, **extra)
            assert [(x.id, round(x.score, 5)) for x in hits] == \
                [(x.id, round(x.score, 5)) for x in one]
            assert all(x.payload == {} for x in hits)
    filtered = store.nearest_batch(COL, [E[2]], namespace="a", limit=4,
                                   filters=VectorFilter.where(status="active"))[0]
    assert pts[2].id not in {x.id for x in filtered} and len(filtered) == 3
    assert store.nearest_batch(COL, [], namespace="a") == []
    with pytest.raises(NamespaceRequiredError):
        store.nearest_batch(COL, [E[0]], namespace="")


def test_search_restricted_to_ids(h: Harness) -> None:
    pts = [point(e, n=i) for i, e in enumerate(E)]
    h.store.upsert(COL, pts + [point(E[1], ns="b")])
    hits = h.read().nearest(COL, E[1], namespace="a", ids=[pts[0].id, pts[3].id], limit=5)
    assert {x.id for x in hits} == {pts[0].id, pts[3].id}  # the nearest (pts[1]) excluded
    assert h.store.nearest(COL, E[1], namespace="a", ids=[], limit=5) == []
    other_ns = h.store.nearest(COL, E[1], namespace="b", ids=[pts[1].id], limit=5)
    assert other_ns == []  # an id from another namespace is never reached


def test_set_payload_changes_filters_not_vectors(h: Harness) -> None:
    pts = [point(e, n=i, status="active") for i, e in enumerate(E)]
    h.store.upsert(COL, pts + [point(E[0], ns="b", pid=None, status="active")])
    h.store.set_payload(COL, [pts[0].id], {"status": "forgotten"}, namespace="a")
    store = h.read()
    assert store.count(COL, namespace="a", filters=VectorFilter.where(status="active")) == 3
    hits = store.nearest(COL, E[0], namespace="a", limit=2,
                         filters=VectorFilter.where(status="forgotten"))
    assert [x.id for x in hits] == [pts[0].id] and hits[0].score == pytest.approx(1.0)
    assert hits[0].payload["n"] == 0  # merged, not replaced
    store.set_payload(COL, [pts[1].id], {"status": "x"}, namespace="b")  # other namespace
    assert store.count(COL, namespace="a", filters=VectorFilter.where(status="x")) == 0
    with pytest.raises(InvalidInputError):
        store.set_payload(COL, [pts[1].id], {"namespace": "b"}, namespace="a")


def test_numpy_vectors_accepted(h: Harness) -> None:
    p = VectorPoint(uid(), {"dense": np.array(E[2], dtype=np.float32)}, {"namespace": "a"})  # type: ignore[dict-item]
    h.store.upsert(COL, [p])
    hits = h.read().nearest(COL, np.array(E[2]), namespace="a")  # type: ignore[arg-type]
    assert [x.id for x in hits] == [p.id]
    assert math.isclose(hits[0].score, 1.0, rel_tol=1e-5)


def test_named_vectors_search_by_each(h: Harness) -> None:
    spec = CollectionSpec("multi", {"text": 4, "image": 3})
    h.store.ensure_collection(spec)
    a = VectorPoint(uid(), {"text": E[0], "image": [0.0, 0.0, 1.0]}, {"namespace": "a"})
    b = VectorPoint(uid(), {"text": E[1], "image": [1.0, 0.0, 0.0]}, {"namespace": "a"})
    h.store.upsert("multi", [a, b])
    store = h.read()
    assert store.nearest("multi", E[0], namespace="a", using="text")[0].id == a.id
    assert store.nearest("multi", [1.0, 0.1, 0.0], namespace="a", using="image")[0].id == b.id
    with pytest.raises(DimensionMismatchError):
        store.nearest("multi", E[0], namespace="a", using="image")
    with pytest.raises(VectorError, match="audio"):
        store.nearest("multi", E[0], namespace="a", using="audio")


def test_sparse_search_uses_idf(h: Harness) -> None:
    # Term 1 is in every document, term 2 only in `rare`. Raw dot product would rank
    # `common` first (3 > 1 + 1); IDF discounts the ubiquitous term so `rare` wins.
    def doc(tf: dict[int, float]) -> VectorPoint:
        sv = SparseVector(tuple(tf), tuple(tf.values()))
        return VectorPoint(uid(), {"dense": E[0]}, {"namespace": "a"}, {"bm25": sv})

    rare, common, other = doc({1: 1.0, 2: 1.0}), doc({1: 3.0}), doc({1: 1.0, 3: 1.0})
    h.store.upsert(COL, [rare, common, other])
    q = SparseVector((1, 2), (1.0, 1.0))
    hits = h.read().nearest(COL, q, namespace="a", using="bm25")
    assert hits[0].id == rare.id
    assert hits[0].score > 2 * hits[1].score
    assert h.store.nearest(COL, SparseVector((9,), (1.0,)), namespace="a", using="bm25") == []


# --- filters ------------------------------------------------------------------------
def test_filters_scalar_any_range_datetime_nested(h: Harness) -> None:
    t0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
    pts = [
        point(E[0], kind="note", imp=0.9, at=t0, meta={"src": "chat"}),
        point(E[1], kind="fact", imp=0.2, at=(t0 + timedelta(days=10)).isoformat()),
        point(E[2], kind="todo", imp=0.6, at=t0 + timedelta(days=40), meta={"src": "doc"}),
    ]
    h.store.upsert(COL, pts)
    s = h.read()

    def ids(**conditions: Any) -> set[str]:  # the mapping form, converted
        flt = VectorFilter.of(conditions)
        hits = s.nearest(COL, [1.0, 1.0, 1.0, 1.0], namespace="a", filters=flt)
        assert s.count(COL, namespace="a", filters=flt) == len(hits)
        return {x.id for x in hits}

    assert ids(kind="note") == {pts[0].id}
    assert ids(kind=["fact", "todo"]) == {pts[1].id, pts[2].id}
    assert ids(kind=("nope",)) == set()
    assert ids(imp=Range(gte=0.5)) == {pts[0].id, pts[2].id}
    assert ids(imp=Range(gte=0.5, lte=0.7)) == {pts[2].id}
    assert ids(at=Range(gte=t0 + timedelta(days=1))) == {pts[1].id, pts[2].id}
    assert ids(at=Range(lte=t0 + timedelta(days=20))) == {pts[0].id, pts[1].id}
    assert ids(**{"meta.src": "doc"}) == {pts[2].id}
    assert ids(kind="note", imp=Range(lte=0.5)) == set()
    with pytest.raises(InvalidInputError):
        ids(kind=None)
    with pytest.raises(InvalidInputError):
        ids(imp=Range())


# --- writes -------------------------------------------------------------------------
def test_upsert_is_idempotent_and_replaces_payload(h: Harness) -> None:
    pid = uid()
    h.store.upsert(COL, [point(E[0], pid=pid, v=1, old=True)])
    h.store.upsert(COL, [point(E[1], pid=pid, v=2)])
    h.store.upsert(COL, [point(E[1], pid=pid, v=2)])
    s = h.read()
    assert s.count(COL, namespace="a") == 1
    assert s.retrieve(COL, [pid], namespace="a")[0].payload == {"namespace": "a", "v": 2}
    assert s.nearest(COL, E[1], namespace="a")[0].score == pytest.approx(1.0, rel=1e-5)


def test_batches_and_ids_pagination(h: Harness) -> None:
    rng = np.random.default_rng(0)
    pts = [point(list(rng.random(4) + 0.01)) for _ in range(1100)]
    h.store.upsert(COL, pts)
    s = h.read()
    assert s.count(COL, namespace="a") == 1100
    assert s.ids(COL, namespace="a") == {p.id for p in pts}


def test_retrieve_delete_ids_count(h: Harness) -> None:
    pts = [point(E[i], n=i) for i in range(3)]
    h.store.upsert(COL, pts)
    missing = uid()
    got = h.read().retrieve(COL, [pts[2].id, missing, pts[0].id], namespace="a")
    assert [(x.id, x.score, x.payload["n"]) for x in got] == [
        (pts[2].id, 0.0, 2),
        (pts[0].id, 0.0, 0),
    ]
    h.store.delete(COL, [pts[0].id, missing], namespace="a")
    h.store.delete(COL, [], namespace="a")
    s = h.read()
    assert s.ids(COL, namespace="a") == {pts[1].id, pts[2].id}
    assert s.count(COL, namespace="a") == 2
    assert s.retrieve(COL, [pts[0].id], namespace="a") == []


def test_ids_are_canonical_uuid_strings(h: Harness) -> None:
    raw = uuid.uuid4()
    h.store.upsert(COL, [point(E[0], pid=str(raw).upper())])
    assert h.read().ids(COL, namespace="a") == {str(raw)}
    assert [x.id for x in h.store.retrieve(COL, [str(raw).upper()], namespace="a")] == [str(raw)]


# --- namespaces ---------------------------------------------------------------------
def test_namespace_isolation(h: Harness) -> None:
    mine = point(E[0], ns="a")
    theirs = [point(E[1], ns="b"), point(E[2], ns="b")]
    h.store.upsert(COL, [mine, *theirs])
    s = h.read()
    assert s.retrieve(COL, [mine.id], namespace="b") == []
    assert s.count(COL, namespace="b") == 2
    assert mine.id not in s.ids(COL, namespace="b")
    assert mine.id not in {x.id for x in s.nearest(COL, E[0], namespace="b")}
    s.delete(COL, [mine.id], namespace="b")
    assert h.read().count(COL, namespace="a") == 1
    # The same id in another namespace must not overwrite the owner's point.
    with pytest.raises(InvalidInputError, match="another namespace"):
        h.store.upsert(COL, [point(E[3], ns="b", pid=mine.id), point(E[3], ns="b")])
    assert h.store.count(COL, namespace="b") == 2
    assert h.store.retrieve(COL, [mine.id], namespace="a")[0].payload["namespace"] == "a"
    h.store.clear(COL, namespace="b")
    s = h.read()
    assert s.count(COL, namespace="b") == 0
    assert s.ids(COL, namespace="a") == {mine.id}


@pytest.mark.parametrize("ns", ["", "   "])
def test_empty_namespace_is_refused_everywhere(h: Harness, ns: str) -> None:
    h.store.upsert(COL, [point(E[0])])
    s = h.store
    calls = [
        lambda: s.nearest(COL, E[0], namespace=ns),
        lambda: s.retrieve(COL, [uid()], namespace=ns),
        lambda: s.delete(COL, [uid()], namespace=ns),
        lambda: s.count(COL, namespace=ns),
        lambda: s.ids(COL, namespace=ns),
        lambda: s.clear(COL, namespace=ns),
        lambda: s.upsert(COL, [point(E[0], ns=ns)]),
    ]
    for call in calls:
        with pytest.raises(NamespaceRequiredError):
            call()
    assert h.read().count(COL, namespace="a") == 1


# --- bad input: nothing written -----------------------------------------------------
def test_wrong_dimension_upsert_writes_nothing(h: Harness) -> None:
    h.store.upsert(COL, [point(E[0])])
    batch = [point(E[1]), point([1.0, 2.0, 3.0]), point(E[2])]
    with pytest.raises(DimensionMismatchError) as err:
        h.store.upsert(COL, batch)
    assert (err.value.collection, err.value.expected, err.value.got) == (COL, 4, 3)
    assert COL in str(err.value) and "4" in str(err.value) and "3" in str(err.value)
    assert err.value.vector_name == "dense"
    assert h.read().count(COL, namespace="a") == 1


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e39])
def test_non_finite_vector_is_refused(h: Harness, bad: float) -> None:
    with pytest.raises(VectorError) as err:
        h.store.upsert(COL, [point(E[0]), point([0.0, bad, 0.0, 0.0])])
    assert not isinstance(err.value, DimensionMismatchError)
    with pytest.raises(VectorError):
        h.store.nearest(COL, [0.0, bad, 0.0, 0.0], namespace="a")
    assert h.read().count(COL, namespace="a") == 0


def test_wrong_query_dimension(h: Harness) -> None:
    with pytest.raises(DimensionMismatchError) as err:
        h.store.nearest(COL, [1.0, 0.0], namespace="a")
    assert (err.value.expected, err.value.got) == (4, 2)


def test_reensure_with_other_size_is_refused(h: Harness) -> None:
    h.store.ensure_collection(SPEC)  # same shape: fine, idempotent
    s = h.read()
    with pytest.raises(DimensionMismatchError) as err:
        s.ensure_collection(CollectionSpec(COL, {"dense": 8}, sparse=("bm25",)))
    assert (err.value.collection, err.value.expected, err.value.got) == (COL, 4, 8)
    assert "4" in str(err.value) and "8" in str(err.value)
    with pytest.raises(VectorError, match="clip"):
        s.ensure_collection(CollectionSpec(COL, {"dense": 4, "clip": 512}))
    with pytest.raises(VectorError, match="splade"):
        s.ensure_collection(CollectionSpec(COL, {"dense": 4}, sparse=("splade",)))


@pytest.mark.parametrize("bad_id", ["not-a-uuid", "42", ""])
def test_non_uuid_id_is_refused(h: Harness, bad_id: str) -> None:
    with pytest.raises(InvalidInputError, match="UUID"):
        h.store.upsert(COL, [point(E[0]), point(E[1], pid=bad_id)])
    assert h.read().count(COL, namespace="a") == 0


def test_missing_namespace_in_payload(h: Harness) -> None:
    bad = VectorPoint(uid(), {"dense": E[0]}, {"kind": "note"})
    with pytest.raises(NamespaceRequiredError):
        h.store.upsert(COL, [point(E[1]), bad])
    assert h.read().count(COL, namespace="a") == 0


def test_unknown_vector_name_in_point(h: Harness) -> None:
    bad = VectorPoint(uid(), {"dense": E[0], "clip": [1.0]}, {"namespace": "a"})
    with pytest.raises(VectorError, match="clip"):
        h.store.upsert(COL, [bad])
    assert h.read().count(COL, namespace="a") == 0


def test_unknown_collection(h: Harness) -> None:
    # its own type (a VectorStoreError), so callers can tell "never created" from a fault
    with pytest.raises(CollectionNotFoundError, match="nowhere"):
        h.store.nearest("nowhere", E[0], namespace="a")
    with pytest.raises(CollectionNotFoundError, match="nowhere"):
        h.store.count("nowhere", namespace="a")
    with pytest.raises(CollectionNotFoundError, match="nowhere"):
        h.store.ids("nowhere", namespace="a")
    with pytest.raises(CollectionNotFoundError, match="nowhere"):
        h.store.optimize("nowhere")


# --- lifecycle ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"location": ":memory:", "path": "/tmp/x"},
        {"path": "/tmp/x", "url": "http://localhost:6333"},
        {"location": "http://localhost:6333"},
    ],
)
def test_ambiguous_constructor_args(kwargs: dict[str, str]) -> None:
    with pytest.raises(InvalidInputError):
        QdrantVectorStore(**kwargs)  # type: ignore[arg-type]


DIRECTORY_BACKENDS = pytest.mark.parametrize("kind", ["path", "edge"])


@DIRECTORY_BACKENDS
def test_not_open_and_close_twice(tmp_path: Path, kind: str) -> None:
    store = embedded(kind, str(tmp_path / "q"))
    assert not (tmp_path / "q").exists()  # the constructor does no I/O
    with pytest.raises(VectorStoreError, match="open"):
        store.count(COL, namespace="a")
    store.open()
    store.ensure_collection(SPEC)
    store.close()
    store.close()
    with pytest.raises(VectorStoreError, match="open"):
        store.count(COL, namespace="a")


def test_unreachable_server_is_backend_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    store = QdrantVectorStore(url=url, timeout=2.0)
    start = time.monotonic()
    with pytest.raises(BackendUnavailableError, match=url):
        store.open()
    assert time.monotonic() - start < 10


@pytest.mark.parametrize(("first_kind", "second_kind"),
                         [("path", "path"), ("edge", "edge"), ("edge", "path"), ("path", "edge")])
def test_embedded_path_locked_by_another_store(tmp_path: Path, first_kind: str,
                                               second_kind: str) -> None:
    first = embedded(first_kind, str(tmp_path))
    first.open()
    second = embedded(second_kind, str(tmp_path))
    with pytest.raises(BackendUnavailableError, match="one process") as err:
        second.open()
    assert str(tmp_path) in str(err.value)
    first.close()
    second.open()  # the lock is released by close()
    second.close()


@DIRECTORY_BACKENDS
def test_persistence_and_prefix_isolation(tmp_path: Path, kind: str) -> None:
    path = str(tmp_path)
    store = embedded(kind, path, "x_")
    store.open()
    store.ensure_collection(SPEC)
    p = point(E[3], kind="kept")
    store.upsert(COL, [p])
    store.close()

    again = embedded(kind, path, "x_")
    again.open()  # no ensure_collection: the shape is loaded from the directory
    assert [x.id for x in again.nearest(COL, E[3], namespace="a")] == [p.id]
    with pytest.raises(DimensionMismatchError):
        again.upsert(COL, [point([1.0, 2.0])])
    again.close()

    other = embedded(kind, path, "y_")
    other.open()
    with pytest.raises(VectorStoreError) as err:
        other.count(COL, namespace="a")
    assert repr(COL) in str(err.value) and "y_" not in str(err.value)
    other.ensure_collection(SPEC)
    assert other.count(COL, namespace="a") == 0
    other.close()


# --- backend choice -------------------------------------------------------------------
def test_factory_picks_the_embedded_engine(tmp_path: Path) -> None:
    from hello_memory.config import load_settings
    from hello_memory.factory import build_vector_store

    default = build_vector_store(load_settings(environ={}, data_dir=tmp_path))
    assert isinstance(default, QdrantEdgeVectorStore)
    local = build_vector_store(load_settings(environ={}, data_dir=tmp_path,
                                             vector={"embedded": "local"}))
    memory = build_vector_store(load_settings(environ={}, vector={"location": ":memory:"}))
    assert isinstance(local, QdrantVectorStore) and isinstance(memory, QdrantVectorStore)
    default.open()  # both embedded engines share one directory lock: never both at once
    with pytest.raises(BackendUnavailableError):
        local.open()
    default.close()


def test_other_namespaces_do_not_change_results(tmp_path: Path) -> None:
    store = QdrantEdgeVectorStore(path=str(tmp_path))
    store.open()
    store.ensure_collection(SPEC)
    mine = [point(E[i], ns="small") for i in range(3)]
    store.upsert(COL, mine)
    before = [(x.id, round(x.score, 6)) for x in store.nearest(COL, E[0], namespace="small")]
    rng = np.random.default_rng(1)
    store.upsert(COL, [point(list(rng.random(4) + 0.01), ns="big") for _ in range(3000)])
    after = [(x.id, round(x.score, 6)) for x in store.nearest(COL, E[0], namespace="small")]
    assert after == before and store.count(COL, namespace="small") == 3
    store.close()
