"""One table of :class:`~hello_memory.ports.vector.VectorFilter` cases run against every
vector backend with a real local mode here: qdrant-client's local mode (in memory and
on a path), Qdrant Edge (the engine in-process) and pgvector (the PostgreSQL server of
tests/postgres_server.py). Each case names the points it must find, so every backend
returns the same ids for the same filter (docs/ARCHITECTURE.md, "Ports": the filter is
ours, its meaning does not depend on the backend). Each case runs through ``nearest``,
``nearest_batch`` and ``count``, on a collection with payload indexes on the filtered
fields and on one without (an index must not change what a filter finds).

A backend also refuses the mapping form the callers passed before with a TypeError
(``VectorFilter.of`` converts it)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hello_memory.ports.vector import Between, CollectionSpec, VectorFilter
from hello_memory.stores.vector import QdrantEdgeVectorStore, QdrantVectorStore, VectorStore
from hello_memory.types import VectorPoint

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
INDEXED = CollectionSpec("indexed", {"dense": 4}, payload_indexes={
    "kind": "keyword", "n": "integer", "x": "float", "imp": "float", "flag": "bool",
    "at": "datetime", "tags": "keyword"})
PLAIN = CollectionSpec("plain", {"dense": 4})
QUERY = [1.0, 1.0, 1.0, 1.0]

# The points of namespace "a" by name. Next to each field a point holding a look-alike
# of another type (the int 1 beside True, a float beside an int, a string that is no
# date) or no such field at all.
POINTS: dict[str, dict[str, Any]] = {
    "p0": {"kind": "note", "n": 1, "imp": 0.9, "flag": True, "at": T0, "tags": ["a", "b"],
           "meta": {"src": "chat"}, "lang": "en"},
    "p1": {"kind": "fact", "n": 2, "imp": 0.2, "flag": False,
           "at": (T0 + timedelta(days=10)).isoformat(), "tags": ["b"], "lang": "zh"},
    "p2": {"kind": "todo", "n": 3, "imp": 0.6, "flag": True, "at": T0 + timedelta(days=40),
           "tags": [], "meta": {"src": "doc"}},
    "p3": {"kind": "note", "n": 1, "imp": 0.5, "flag": 1, "at": "not a date", "tags": "c"},
    "p4": {"kind": "fact", "n": 0, "imp": 1, "flag": 0, "meta": {}},
    "p5": {},
    "p6": {"x": 1.5, "imp": "0.9", "flag": "true", "kind": ["note", "todo"]},
    "p7": {"x": 1.0, "imp": 0.6},
    "p8": {"x": 1, "n": 2},
}

# (label, filter, the names of the points it finds)
CASES: list[tuple[str, VectorFilter | None, set[str]]] = [
    ("no filter", None, set(POINTS)),
    ("empty filter", VectorFilter(), set(POINTS)),
    ("str equal", VectorFilter.where(kind="note"), {"p0", "p3", "p6"}),
    ("str equal, no match", VectorFilter.where(kind="nope"), set()),
    ("int equal", VectorFilter.where(n=1), {"p0", "p3"}),
    ("int equal 0", VectorFilter.where(n=0), {"p4"}),
    ("bool true", VectorFilter.where(flag=True), {"p0", "p2"}),
    ("bool false", VectorFilter.where(flag=False), {"p1"}),
    ("int 1 is not true", VectorFilter.where(flag=1), {"p3"}),
    ("int 0 is not false", VectorFilter.where(flag=0), {"p4"}),
    ("any of str", VectorFilter.where(kind=("fact", "todo")), {"p1", "p2", "p4", "p6"}),
    ("any of one str", VectorFilter.where(kind=("todo",)), {"p2", "p6"}),
    ("any of int", VectorFilter.where(n=(0, 3)), {"p2", "p4"}),
    ("any of, none there", VectorFilter.where(kind=("x", "y")), set()),
    ("array field holds the value", VectorFilter.where(tags="b"), {"p0", "p1"}),
    ("array field holds one of", VectorFilter.where(tags=("a", "c")), {"p0", "p3"}),
    ("float equal", VectorFilter.where(imp=0.6), {"p2", "p7"}),
    ("float equal to an int", VectorFilter.where(imp=1.0), {"p4"}),
    ("range gte", VectorFilter.where(imp=Between(gte=0.5)), {"p0", "p2", "p3", "p4", "p7"}),
    ("range both, inclusive", VectorFilter.where(imp=Between(gte=0.5, lte=0.6)),
     {"p2", "p3", "p7"}),
    ("range lte", VectorFilter.where(imp=Between(lte=0.2)), {"p1"}),
    ("int range", VectorFilter.where(n=Between(gte=1, lte=2)), {"p0", "p1", "p3", "p8"}),
    ("int equal, not the float 1.0", VectorFilter.where(x=1), {"p8"}),
    ("any of int, not the float 1.0", VectorFilter.where(x=(1, 2)), {"p8"}),
    ("float equal to an int value", VectorFilter.where(x=1.0), {"p7", "p8"}),
    ("range over ints and floats", VectorFilter.where(x=Between(gte=1, lte=1.5)),
     {"p6", "p7", "p8"}),
    ("datetime gte", VectorFilter.where(at=Between(gte=T0 + timedelta(days=1))), {"p1", "p2"}),
    ("datetime lte", VectorFilter.where(at=Between(lte=T0 + timedelta(days=20))), {"p0", "p1"}),
    ("datetime both", VectorFilter.where(at=Between(gte=T0, lte=T0 + timedelta(days=10))),
     {"p0", "p1"}),
    ("naive datetime read as UTC",
     VectorFilter.where(at=Between(gte=datetime(2024, 5, 11), lte=datetime(2024, 5, 11))),
     {"p1"}),
    ("nested field", VectorFilter.where(**{"meta.src": "doc"}), {"p2"}),
    ("field some points lack", VectorFilter.where(lang="en"), {"p0"}),
    ("field no point has", VectorFilter.where(missing="x"), set()),
    ("range on a field no point has", VectorFilter.where(missing=Between(gte=0)), set()),
    ("combined", VectorFilter.where(kind="note", imp=Between(lte=0.5)), {"p3"}),
    ("combined any of and bool", VectorFilter.where(kind=("note", "fact"), flag=False), {"p1"}),
    ("combined, nothing holds both", VectorFilter.where(kind="todo", flag=False), set()),
    ("combined datetime and array",
     VectorFilter.where(at=Between(gte=T0), tags="b"), {"p0", "p1"}),
]


def _vector(k: int) -> list[float]:
    """A distinct positive vector per point (every cosine to QUERY is positive)."""
    return [1.0 + k, 1.0, 0.5 + k % 3, 0.25 * k + 0.1]


class Loaded:
    """A store of one backend holding POINTS (and a look-alike in namespace "b") in both
    collections; ``ids`` maps a point id back to its name."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store
        self.ids: dict[str, str] = {}
        for spec in (INDEXED, PLAIN):
            store.ensure_collection(spec)
        points = []
        for k, (name, payload) in enumerate(POINTS.items()):
            pid = str(uuid.uuid4())
            self.ids[pid] = name
            points.append(VectorPoint(pid, {"dense": _vector(k)}, {"namespace": "a", **payload}))
        # look-alikes of p0, p1 and p3 in namespace "b": never found
        points += [VectorPoint(str(uuid.uuid4()), {"dense": _vector(k)},
                               {**POINTS[name], "namespace": "b"})
                   for k, name in enumerate(("p0", "p1", "p3"))]
        for spec in (INDEXED, PLAIN):
            store.upsert(spec.name, points)

    def found(self, collection: str, flt: VectorFilter | None) -> dict[str, set[str]]:
        """The names each read finds with ``flt``: nearest, nearest_batch, count."""
        limit = 3 * len(POINTS)
        hits = self.store.nearest(collection, QUERY, namespace="a", limit=limit, filters=flt)
        batch = self.store.nearest_batch(collection, [QUERY], namespace="a", limit=limit,
                                         filters=flt)[0]
        count = self.store.count(collection, namespace="a", filters=flt)
        return {"nearest": {self.ids[h.id] for h in hits},
                "nearest_batch": {self.ids[h.id] for h in batch},
                "count": {f"{count} points"}}


@pytest.fixture(params=["memory", "path", "edge",
                        pytest.param("pgvector", marks=pytest.mark.postgres)])
def loaded(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Loaded]:
    store: VectorStore
    if request.param == "pgvector":
        from hello_memory.stores.vector import PgVectorStore

        store = PgVectorStore(url=str(request.getfixturevalue("postgres_url")),
                              collection_prefix="hm_")
    elif request.param == "edge":
        store = QdrantEdgeVectorStore(path=str(tmp_path / "edge"))
    elif request.param == "path":
        store = QdrantVectorStore(path=str(tmp_path / "local"))
    else:
        store = QdrantVectorStore(location=":memory:")
    store.open()
    try:
        yield Loaded(store)
    finally:
        store.close()


def test_every_backend_finds_the_same_points_for_each_filter(loaded: Loaded) -> None:
    wrong = []
    for collection in (INDEXED.name, PLAIN.name):
        for label, flt, want in CASES:
            expected = {"nearest": want, "nearest_batch": want, "count": {f"{len(want)} points"}}
            got = loaded.found(collection, flt)
            if got != expected:
                wrong.append(f"{collection} / {label}: want {sorted(want)}, got "
                             f"{ {k: sorted(v) for k, v in got.items()} }")
    assert not wrong, "\n".join(wrong)


def test_the_mapping_form_is_refused_and_of_converts_it(loaded: Loaded) -> None:
    store = loaded.store
    legacy = {"kind": ["fact", "todo"], "flag": False}
    for call in (lambda: store.nearest(INDEXED.name, QUERY, namespace="a", filters=legacy),
                 lambda: store.nearest_batch(INDEXED.name, [QUERY], namespace="a",
                                             filters=legacy),
                 lambda: store.count(INDEXED.name, namespace="a",
                                     filters=legacy)):
        with pytest.raises(TypeError, match="VectorFilter"):
            call()
    assert loaded.found(INDEXED.name, VectorFilter.of(legacy))["nearest"] == {"p1"}
