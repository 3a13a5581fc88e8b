"""``VectorStore.optimize``: the HNSW graph of the embedded Edge engine, built only on
request, and the no-op of the qdrant-client backends.

The vectors here are synthetic test points for an index (fixed seed), compared with a
brute-force numpy ranking of the same points; no text is involved."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from hello_memory.errors import VectorStoreError
from hello_memory.stores.vector import CollectionSpec, QdrantEdgeVectorStore, QdrantVectorStore
from hello_memory.stores.vector import edge as edge_module
from hello_memory.stores.vector.base import HnswParams, VectorFilter
from hello_memory.types import VectorPoint

COL = "memories"
DIM = 32
SPEC = CollectionSpec(COL, {"dense": DIM}, sparse=("bm25",),
                      payload_indexes={"status": "keyword"})
# 32-d float vectors are 128 bytes: "big" (3,000 points, 375 KB) is past the full-scan
# threshold and searched on the graph; "small" (60 points, 7.5 KB) stays exact.
PARAMS = HnswParams(m=16, ef_construct=100, payload_m=16, full_scan_threshold_kb=16,
                    indexing_threshold_kb=1, ef=128, auto_index=False)


def unit_rows(n: int, seed: int) -> npt.NDArray[np.float32]:
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def points(x: npt.NDArray[np.float32], ns: str) -> list[VectorPoint]:
    # every fifth point is "forgotten": a filter the graph search must still honour
    return [VectorPoint(str(uuid.uuid4()), {"dense": v.tolist()},
                        {"namespace": ns, "status": "forgotten" if i % 5 == 0 else "active"})
            for i, v in enumerate(x)]


def brute(x: npt.NDArray[np.float32], pts: list[VectorPoint], q: npt.NDArray[np.float32],
          k: int) -> list[str]:
    keep = [i for i, p in enumerate(pts) if p.payload["status"] == "active"]
    order = np.argsort(-(x[keep] @ q), kind="stable")[:k]
    return [pts[keep[i]].id for i in order]


def open_edge(path: Path, params: HnswParams = PARAMS) -> QdrantEdgeVectorStore:
    store = QdrantEdgeVectorStore(path=str(path), hnsw=params)
    store.open()
    store.ensure_collection(SPEC)
    return store


def dense_indexed(store: QdrantEdgeVectorStore) -> int:
    # Edge counts every indexed vector, sparse ones included (always indexed); the
    # points of these tests carry none, so the count is the dense graph's.
    return int(store._shard(COL).info().indexed_vectors_count)


def test_edge_graph_is_built_only_on_request_and_keeps_every_filter(tmp_path: Path) -> None:
    store = open_edge(tmp_path)
    big_x, small_x = unit_rows(3000, 1), unit_rows(60, 2)
    big, small = points(big_x, "big"), points(small_x, "small")
    store.upsert(COL, big + small)
    queries = unit_rows(30, 3)
    active = VectorFilter.where(status="active")

    def ranked(ns: str, q: npt.NDArray[np.float32], k: int = 10) -> list[str]:
        return [h.id for h in store.nearest(COL, q.tolist(), namespace=ns, limit=k,
                                           filters=active)]

    # Before optimize every search is exact: the same ranking as brute force.
    assert dense_indexed(store) == 0
    for q in queries[:5]:
        assert ranked("big", q) == brute(big_x, big, q, 10)

    assert store.optimize(COL) is True
    assert dense_indexed(store) >= 3000
    assert store.optimize(COL) is False  # already optimal: a second run changes nothing

    recall = np.mean([len(set(ranked("big", q)) & set(brute(big_x, big, q, 10))) / 10
                      for q in queries])
    assert recall >= 0.9, recall
    big_ids = {p.id for p in big if p.payload["status"] == "active"}
    for q in queries:
        got = store.nearest(COL, q.tolist(), namespace="big", limit=20, filters=active)
        assert {h.id for h in got} <= big_ids  # namespace and status filters hold
        # the small namespace is under the full-scan threshold: still exact
        assert ranked("small", q, 5) == brute(small_x, small, q, 5)

    # Points written after optimize are found (searched exactly beside the graph), and
    # deleted ones are gone.
    late = points(unit_rows(3, 4), "big")
    late[0].payload["status"] = "active"
    store.upsert(COL, late)
    assert ranked("big", np.asarray(late[0].vectors["dense"]), 1) == [late[0].id]
    store.delete(COL, [late[0].id], namespace="big")
    assert late[0].id not in ranked("big", np.asarray(late[0].vectors["dense"]), 10)
    store.close()

    # The graph and its settings persist: a store opened with defaults keeps them.
    again = QdrantEdgeVectorStore(path=str(tmp_path))
    again.open()
    assert dense_indexed(again) >= 3000
    q = queries[0]
    top = [h.id for h in again.nearest(COL, q.tolist(), namespace="big", limit=10,
                                      filters=active)]
    assert len(set(top) & set(brute(big_x, big, q, 10))) >= 8
    again.close()


def test_edge_builds_the_graph_once_enough_points_are_written(tmp_path: Path) -> None:
    """``auto_index`` (issue 27): the write that brings the points written since the
    last build to ``indexing_threshold_kb`` of vectors (64 KB: 512 of these 128-byte
    vectors) builds the graph, as a Qdrant server's optimiser would; fewer leave it
    alone. A process that opens a collection that large builds on its first write."""
    params = HnswParams(full_scan_threshold_kb=16, indexing_threshold_kb=64)
    store = open_edge(tmp_path, params)
    x = unit_rows(2000, 6)
    pts = points(x, "a")
    for start in range(0, 500, 100):  # 500 < 512: exact search, no graph
        store.upsert(COL, pts[start:start + 100])
    assert dense_indexed(store) == 0
    store.upsert(COL, pts[500:600])  # 600 >= 512: this write builds it
    assert dense_indexed(store) >= 600
    assert store.optimize(COL) is False  # nothing was left to build
    built = dense_indexed(store)
    store.upsert(COL, pts[600:1000])  # 400 since the build: not yet
    assert dense_indexed(store) == built
    store.upsert(COL, pts[1000:1100])  # 500 since the build: still not
    assert dense_indexed(store) == built
    open_shard = store._shard(COL)
    store.upsert(COL, pts[1100:1200])  # 600: built again
    assert dense_indexed(store) >= 1200
    # on the open shard: it already runs these settings, so no reload of every segment
    assert store._shard(COL) is open_shard
    store.close()
    # Written with auto_index off, then opened with it on: the first write builds.
    off = open_edge(tmp_path, HnswParams(full_scan_threshold_kb=16, indexing_threshold_kb=64,
                                         auto_index=False))
    off.upsert(COL, pts[1200:1600])
    off.upsert(COL, pts[1600:1999])
    before = dense_indexed(off)
    off.close()
    on = open_edge(tmp_path, params)
    on.upsert(COL, pts[1999:2000])
    assert dense_indexed(on) > before
    q = x[1200]
    top = on.nearest(COL, q.tolist(), namespace="a", limit=1,
                     filters=VectorFilter.where(status=pts[1200].payload["status"]))
    assert [h.id for h in top] == [pts[1200].id]
    on.close()


def test_edge_optimize_builds_a_short_tail_and_a_reopen_waits_for_more(
        tmp_path: Path) -> None:
    """``jobs optimize`` indexes every point written, however few since the last build
    (they were searched by brute force beside the graph); the writes' own builds keep
    their pace, and a process that opens the collection counts the points written since
    the last build (noted beside the shard), so a short tail does not make its first
    write build (a build costs about as much as the segment it merges into)."""
    params = HnswParams(full_scan_threshold_kb=16, indexing_threshold_kb=64)
    store = open_edge(tmp_path, params)
    x = unit_rows(1000, 8)
    pts = points(x, "a")
    store.upsert(COL, pts[:600])  # past 512: built by this write
    assert dense_indexed(store) == 600
    store.upsert(COL, pts[600:700])  # a tail of 100: searched exactly, not built
    assert dense_indexed(store) == 600
    assert store.optimize(COL) is True and dense_indexed(store) == 700
    store.upsert(COL, pts[700:750])
    store.close()
    again = open_edge(tmp_path, params)
    again.upsert(COL, pts[750:800])  # 100 since the build noted at 700: no build
    assert dense_indexed(again) == 700
    again.upsert(COL, pts[800:1000])  # 300 since: still under 512
    assert dense_indexed(again) == 700
    assert again.optimize(COL) is True and dense_indexed(again) == 1000
    q = x[960]
    top = again.nearest(COL, q.tolist(), namespace="a", limit=1,
                        filters=VectorFilter.where(status=pts[960].payload["status"]))
    assert [h.id for h in top] == [pts[960].id]
    again.close()


def segments(store: QdrantEdgeVectorStore) -> int:
    return int(store._shard(COL).info().segments_count)


@pytest.mark.parametrize("cap_kb", [None, 96])
def test_edge_segments_stop_growing_at_max_segment_size(tmp_path: Path,
                                                        cap_kb: int | None) -> None:
    """``max_segment_size_kb`` (issue 27 item 5): each build the writes trigger merges
    the new points into the graph's segment and rebuilds it, so without a cap a
    build costs as much as the namespace is large and a 1M ingest grew quadratically.
    With the cap, segments stop growing at that size and later builds make new ones;
    every point stays searchable, through every segment, with the filters."""
    params = HnswParams(full_scan_threshold_kb=16, indexing_threshold_kb=32,
                        max_segment_size_kb=cap_kb)
    store = open_edge(tmp_path, params)
    x = unit_rows(3000, 8)
    pts = points(x, "a")
    for start in range(0, 3000, 300):  # a build about every 256 points (32 KB)
        store.upsert(COL, pts[start:start + 300])
    store.optimize(COL)
    if cap_kb is None:  # Qdrant's own cap (hundreds of MB): all merged into the graph
        assert segments(store) <= 2
    else:  # 3,000 x 128 bytes = 375 KB in segments of at most ~96 KB of vectors
        assert segments(store) >= 4
    assert store.count(COL, namespace="a") == 3000
    for i in range(1, 3000, 271):  # each point finds itself first (filters honoured)
        top = store.nearest(COL, x[i].tolist(), namespace="a", limit=1,
                            filters=VectorFilter.where(status=pts[i].payload["status"]))
        assert [h.id for h in top] == [pts[i].id]
    q = unit_rows(1, 99)[0]
    found = [h.id for h in store.nearest(COL, q.tolist(), namespace="a", limit=10,
                                         filters=VectorFilter.where(status="active"))]
    assert len(set(found) & set(brute(x, pts, q, 10))) >= 8
    store.close()


def test_edge_probes_find_near_duplicates_with_a_narrow_beam(tmp_path: Path) -> None:
    """``nearest_batch`` (the add path's probes) runs with the beam ``probe_ef``,
    narrower than the search's. What that may not cost: with a beam of 8 (a quarter of
    the default 32), a near duplicate of a stored point (cosine above 0.95, as
    memory.dedup_threshold asks) is still found first, through every segment, with the
    filters. (That the beam is passed is not observable from outside Edge; the speed
    it buys is measured in docs/PERFORMANCE.md "A million memories".) A beam of 4 is
    too narrow to promise it: the graph, built anew each run, missed one of 66 near
    duplicates in 4 of 20 runs; 8 missed none in 80 (2026-12-05)."""
    params = HnswParams(full_scan_threshold_kb=16, indexing_threshold_kb=32,
                        max_segment_size_kb=96, probe_ef=8)
    store = open_edge(tmp_path, params)
    x = unit_rows(3000, 12)
    pts = points(x, "a")
    for start in range(0, 3000, 300):
        store.upsert(COL, pts[start:start + 300])
    store.optimize(COL)
    assert segments(store) >= 4 and dense_indexed(store) > 0
    picked = [i for i in range(1, 3000, 37) if pts[i].payload["status"] == "active"]
    near = x[picked] + 0.05 * unit_rows(len(picked), 13)
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    assert (np.einsum("ij,ij->i", near, x[picked]) > 0.95).all()
    found = store.nearest_batch(COL, near.tolist(), namespace="a", limit=3,
                                score_threshold=0.95,
                                filters=VectorFilter.where(status="active"))
    assert [[h.id for h in hits] for hits in found] == [[pts[i].id] for i in picked]
    store.close()


def test_edge_optimize_takes_on_settings_of_a_shard_created_without_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A shard whose Edge config holds a 10 MB indexing threshold (as every shard did
    # before optimize built short tails: nothing here gets a graph)...
    monkeypatch.setattr(edge_module, "BUILD_ALL_KB", 10_000)
    store = open_edge(tmp_path, HnswParams())
    x = unit_rows(2000, 5)
    store.upsert(COL, points(x, "a"))
    store.optimize(COL)
    assert dense_indexed(store) == 0
    store.close()
    monkeypatch.undo()
    # ... is rebuilt under the settings of the store that optimizes it.
    store = open_edge(tmp_path)
    assert store.optimize(COL) is True
    assert dense_indexed(store) >= 2000
    assert store.count(COL, namespace="a") == 2000
    store.close()


def test_optimize_unknown_collection(tmp_path: Path) -> None:
    edge = open_edge(tmp_path / "edge")
    local = QdrantVectorStore(location=":memory:")
    local.open()
    local.ensure_collection(SPEC)
    for store in (edge, local):
        with pytest.raises(VectorStoreError, match="nowhere"):
            store.optimize("nowhere")
    # qdrant-client builds nothing on request: a server indexes by itself, local mode never
    assert local.optimize(COL) is False
    edge.close()
    local.close()
