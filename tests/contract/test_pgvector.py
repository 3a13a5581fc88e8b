"""What the pgvector store adds to the vector contract (tests/contract/test_vector_store.py
runs the shared suite on it): the HNSW path above ``exact_threshold`` and the exact one
below, ``optimize`` taking on new HNSW settings, persistence and prefixes, the settings
and factory wiring, typed errors for an unreachable server, and ids that two processes
race to take for two namespaces. All against a real PostgreSQL server with the
extension (tests/postgres_server.py; scripts/system-deps.sh builds pgvector)."""

from __future__ import annotations

import socket
import threading
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hello_memory.errors import (
    BackendUnavailableError,
    ConfigError,
    DimensionMismatchError,
    InvalidInputError,
    VectorStoreError,
)
from hello_memory.stores.vector import CollectionSpec, PgVectorStore, VectorFilter
from hello_memory.stores.vector.pgvector import PgVectorParams, _terms_index
from hello_memory.types import VectorPoint

pytestmark = pytest.mark.postgres

COL = "memories"
SPEC = CollectionSpec(COL, {"dense": 8}, sparse=("bm25",))


def _store(url: str, prefix: str = "hm_", **params: Any) -> PgVectorStore:
    store = PgVectorStore(url=url, collection_prefix=prefix, params=PgVectorParams(**params))
    store.open()
    return store


def _points(n: int, ns: str = "a", seed: int = 0) -> list[VectorPoint]:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, 8))
    return [VectorPoint(str(uuid.uuid4()), {"dense": list(v)}, {"namespace": ns, "i": i})
            for i, v in enumerate(vecs)]


def test_hnsw_above_threshold_exact_below(postgres_url: str) -> None:
    """Both paths rank the same nearest point first; above the threshold the planner
    is given the HNSW index's ORDER BY, below it the sort is exact."""
    store = _store(postgres_url, exact_threshold=50, ef_search=64)
    store.ensure_collection(SPEC)
    big, small = _points(300, "big", 1), _points(20, "small", 2)
    store.upsert(COL, big + small)
    for pts, ns in ((big, "big"), (small, "small")):
        target = pts[7]
        hits = store.nearest(COL, target.vectors["dense"], namespace=ns, limit=5)
        assert hits[0].id == target.id and hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert len(hits) == 5 and all(h.payload["namespace"] == ns for h in hits)
    # the index exists and serves an ORDER BY distance LIMIT k over the whole table
    with store._tx(COL) as conn:  # noqa: SLF001
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.exec_driver_sql(
            'EXPLAIN SELECT id FROM "hm_memories" ORDER BY "v_dense" <=> %s::vector LIMIT 5',
            ("[" + ",".join(["0.1"] * 8) + "]",)).all())
    assert "hnsw" in plan.lower()
    store.close()


def test_a_selection_is_counted_once_then_ranked_alike(postgres_url: str) -> None:
    """The count that picks exact or HNSW ranking runs once per selection (namespace
    and filter) while its answer is kept (``SelectionSizes``), with a score threshold
    too (the add path's duplicate check): a small selection is ranked exactly, a large
    one through the index, where a score threshold is still counted on its own. A
    selection that grew past the threshold meanwhile is still ranked exactly: the right
    answer, only slower."""
    from sqlalchemy import event

    store = _store(postgres_url, prefix="hm_sizes_", exact_threshold=50)
    try:
        store.ensure_collection(SPEC)
        big, small = _points(120, "big", 1), _points(20, "small", 2)
        store.upsert(COL, big + small)
        probes: list[str] = []

        def keep(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
            if statement.startswith("SELECT count(*) FROM (SELECT 1"):
                probes.append(statement)

        event.listen(store._engine, "before_cursor_execute", keep)
        for _ in range(3):
            hit = store.nearest(COL, small[3].vectors["dense"], namespace="small", limit=3)
            assert hit[0].id == small[3].id
            hit = store.nearest(COL, small[4].vectors["dense"], namespace="small", limit=3,
                                score_threshold=0.99)
            assert [h.id for h in hit] == [small[4].id]
        assert len(probes) == 1
        for _ in range(3):
            hit = store.nearest(COL, big[5].vectors["dense"], namespace="big", limit=3)
            assert hit[0].id == big[5].id
        assert len(probes) == 2  # large: known, not counted again
        for _ in range(2):
            hit = store.nearest(COL, big[6].vectors["dense"], namespace="big", limit=3,
                                score_threshold=0.99)
            assert [h.id for h in hit] == [big[6].id]
        assert len(probes) == 4  # large, with a score threshold: those above it counted
        only = VectorFilter.where(i=3)
        assert [h.id for h in store.nearest(COL, small[3].vectors["dense"], namespace="small",
                                            limit=3, filters=only)] == [small[3].id]
        assert len(probes) == 5  # another selection: counted on its own
        grown = _points(80, "small", 3)
        store.upsert(COL, grown)
        target = grown[40]
        hits = store.nearest(COL, target.vectors["dense"], namespace="small", limit=5)
        assert len(probes) == 5 and hits[0].id == target.id  # exact, not counted again
        event.remove(store._engine, "before_cursor_execute", keep)
    finally:
        store.close()


def test_optimize_rebuilds_only_on_other_settings(postgres_url: str) -> None:
    store = _store(postgres_url, m=8, ef_construction=32)
    store.ensure_collection(SPEC)
    store.upsert(COL, _points(50))
    assert store.optimize(COL) is False  # built at creation, kept current by PostgreSQL
    store.close()
    other = _store(postgres_url, m=12, ef_construction=40)
    assert other.optimize(COL) is True
    assert other.optimize(COL) is False
    assert other.count(COL, namespace="a") == 50
    other.close()


def test_persistence_prefixes_and_not_open(postgres_url: str) -> None:
    store = PgVectorStore(url=postgres_url, collection_prefix="x_")
    with pytest.raises(VectorStoreError, match="open"):
        store.count(COL, namespace="a")
    store.open()
    store.ensure_collection(SPEC)
    pts = _points(3)
    store.upsert(COL, pts)
    store.close()
    store.close()
    again = _store(postgres_url, "x_")  # no ensure_collection: the shape is stored
    assert again.nearest(COL, pts[2].vectors["dense"], namespace="a")[0].id == pts[2].id
    with pytest.raises(DimensionMismatchError):
        again.upsert(COL, [VectorPoint(str(uuid.uuid4()), {"dense": [1.0]}, {"namespace": "a"})])
    other = _store(postgres_url, "y_")
    with pytest.raises(VectorStoreError) as err:
        other.count(COL, namespace="a")
    assert repr(COL) in str(err.value) and "y_" not in str(err.value)
    other.ensure_collection(SPEC)
    assert other.count(COL, namespace="a") == 0
    assert other.collections() == [COL] and again.collections() == [COL]
    again.close()
    other.close()


def test_bad_names_and_urls_are_typed() -> None:
    with pytest.raises(InvalidInputError):
        PgVectorStore(url="sqlite:///x.db")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = PgVectorStore(url=f"postgresql+psycopg://hm@127.0.0.1:{port}/none"
                              "?connect_timeout=2")
    with pytest.raises(BackendUnavailableError):
        store.open()


def test_long_collection_name_is_refused(postgres_url: str) -> None:
    store = _store(postgres_url)
    with pytest.raises(InvalidInputError, match="too long"):
        store.ensure_collection(CollectionSpec("c" * 80, {"dense": 4}))
    store.close()


def test_racing_upserts_never_move_an_id_between_namespaces(postgres_url: str) -> None:
    """Two stores (two processes' worth of connections) upsert the same ids for two
    namespaces at once, many rounds: each id ends owned by one namespace, and every
    call either wrote all its points or raised InvalidInputError."""
    stores = [_store(postgres_url), _store(postgres_url)]
    stores[0].ensure_collection(SPEC)
    rng = np.random.default_rng(3)
    refused: list[int] = [0, 0]
    errors: list[BaseException] = []
    rounds = 30

    def worker(k: int, ids: list[str]) -> None:
        for r in range(rounds):
            pts = [VectorPoint(i, {"dense": list(rng.normal(size=8))},
                               {"namespace": f"ns{k}", "r": r}) for i in ids]
            try:
                stores[k].upsert(COL, pts)
            except InvalidInputError:
                refused[k] += 1
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    ids = [str(uuid.uuid4()) for _ in range(5)]
    threads = [threading.Thread(target=worker, args=(k, ids)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    a = stores[0].ids(COL, namespace="ns0")
    b = stores[0].ids(COL, namespace="ns1")
    assert a.isdisjoint(b) and a | b <= set(ids)
    owner = "ns0" if a else "ns1"
    assert (a or b) == set(ids)  # the first writer took all five; the other never moved one
    assert refused[0 if owner == "ns1" else 1] >= 1
    for s in stores:
        s.close()


def test_factory_and_settings(tmp_path: Path, postgres_url: str) -> None:
    from hello_memory.config import load_settings
    from hello_memory.factory import build_vector_store

    with pytest.raises(ConfigError, match="PostgreSQL"):
        build_vector_store(load_settings(environ={}, data_dir=tmp_path,
                                         vector={"provider": "pgvector"}))
    settings = load_settings(environ={}, data_dir=tmp_path, records={"url": postgres_url},
                             vector={"provider": "pgvector",
                                     "pgvector": {"m": 8, "ef_search": 20}})
    store = build_vector_store(settings)
    assert isinstance(store, PgVectorStore)
    assert (store.params.m, store.params.ef_search) == (8, 20)
    env = load_settings(environ={"HELLO_MEMORY__VECTOR__PROVIDER": "pgvector",
                                 "HELLO_MEMORY__VECTOR__PGVECTOR__URL": postgres_url})
    assert isinstance(build_vector_store(env), PgVectorStore)


def _plan_nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    """A JSON plan node and every node under it."""
    return [node, *(n for child in node.get("Plans", []) for n in _plan_nodes(child))]


def test_bm25_reads_the_kept_count_and_scores_by_the_formula(postgres_url: str) -> None:
    """The sparse search's CTEs are computed once each (docs/PERFORMANCE.md, "Search on
    PostgreSQL"): inlined, one ran once per posting its join read, 190 ms of a search
    over 2,000 memories. N is read from the kept counts (one row), never counted over
    the points; each term's postings are an index-only seek, on a table not yet
    analysed too (as after a bulk load: the terms were a filter over every posting of
    the namespace then); the points table is read by id for the hits only, in score
    order. Its scores are BM25's:
    sum(weight x query weight x ln((N - df + 0.5) / (df + 0.5) + 1))."""
    from sqlalchemy import event

    from hello_memory.types import SparseVector

    store = _store(postgres_url, prefix="hm_bm25_")
    try:
        store.ensure_collection(SPEC)
        pts = _points(120, "a", 3) + _points(30, "b", 4)
        for i, p in enumerate(pts):
            # term 1 in every third point, term 2 in every fifth, term 3 in one
            terms = [t for t, every in ((1, 3), (2, 5), (3, 120)) if i % every == 0]
            p.sparse["bm25"] = SparseVector(tuple(terms), tuple(1.0 + t / 10 for t in terms))
        store.upsert(COL, pts)
        seen: list[tuple[str, Any]] = []

        def keep(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
            if statement.startswith("WITH q(term, w)"):
                seen.append((statement, params))

        event.listen(store._engine, "before_cursor_execute", keep)
        query = SparseVector((1, 2, 3), (1.0, 0.5, 2.0))
        hits = store.nearest(COL, query, namespace="a", using="bm25", limit=5)
        event.remove(store._engine, "before_cursor_execute", keep)

        a = [p for p in pts if p.payload["namespace"] == "a"]
        df = {t: sum(t in p.sparse["bm25"].indices for p in a) for t in (1, 2, 3)}
        idf = {t: np.log((len(a) - d + 0.5) / (d + 0.5) + 1) for t, d in df.items()}
        q = dict(zip(query.indices, query.values, strict=True))
        want = sorted(((sum(w * q[t] * idf[t] for t, w in zip(
            p.sparse["bm25"].indices, p.sparse["bm25"].values, strict=True)), p.id)
            for p in a if p.sparse["bm25"].indices), key=lambda s: (-s[0], s[1]))[:5]
        assert [h.id for h in hits] == [pid for _, pid in want]
        assert [h.score for h in hits] == pytest.approx([s for s, _ in want], rel=1e-5)

        assert len(seen) == 1
        with store._engine.connect() as conn:
            plan = conn.exec_driver_sql("EXPLAIN (ANALYZE, FORMAT JSON) " + seen[0][0],
                                        seen[0][1]).scalar()
        nodes = _plan_nodes(plan[0]["Plan"])
        ctes = {n["Subplan Name"] for n in nodes if n.get("Subplan Name", "").startswith("CTE")}
        assert {"CTE q", "CTE n", "CTE d", "CTE scored"} <= ctes, ctes
        # N: one row of the kept counts, read once
        kept = [n for n in nodes if n.get("Relation Name") == "hm_bm25_memories__n"]
        assert kept and all(n["Actual Loops"] == 1 for n in kept), kept
        # the points: a seek by id per document read in score order, until 5 pass
        points = [n for n in nodes if n.get("Relation Name") == "hm_bm25_memories"]
        assert points and all("id = scored.id" in n.get("Index Cond", "")
                              and n["Actual Loops"] == 5 for n in points), points
        # the postings are read by seeks on (namespace, name, term), never scanned,
        # from the index alone
        postings = [n for n in nodes if n.get("Relation Name") == "hm_bm25_memories__sp"]
        assert postings and all("term = q.term" in n.get("Index Cond", "")
                                and n["Node Type"] == "Index Only Scan"
                                for n in postings), postings
        assert not any("Filter" in n for n in postings), postings
    finally:
        store.close()


def _kept_counts(store: PgVectorStore, table: str = "hm_memories") -> dict[str, int]:
    """The kept point counts of ``table``, namespace -> count (rows at 0 left out), to
    compare with :func:`_counted`."""
    with store._engine.connect() as conn:
        return dict(conn.exec_driver_sql(f'SELECT namespace, n FROM "{table}__n" '
                                         "WHERE n <> 0").all())


def _counted(store: PgVectorStore, table: str = "hm_memories") -> dict[str, int]:
    """A ``count(*)`` of ``table``'s points per namespace."""
    with store._engine.connect() as conn:
        return dict(conn.exec_driver_sql(f'SELECT namespace, count(*) FROM "{table}" '
                                         "GROUP BY namespace").all())


def test_the_point_counts_follow_every_write(postgres_url: str) -> None:
    """BM25's N is a kept count per namespace (``<table>__n``, kept by the points
    table's triggers): new points count, replaced ones do not, an id refused for
    another namespace does not, deletes (by id, unknown ids, a whole namespace) take
    theirs away, and another namespace's count never moves."""
    store = _store(postgres_url)
    try:
        store.ensure_collection(SPEC)
        a, b = _points(40, "a", 1), _points(15, "b", 2)
        store.upsert(COL, a + b)
        assert _kept_counts(store) == _counted(store) == {"a": 40, "b": 15}
        store.upsert(COL, a[:10] + _points(5, "a", 3))  # 10 replaced, 5 new
        assert _kept_counts(store) == _counted(store) == {"a": 45, "b": 15}
        taken = VectorPoint(a[0].id, {"dense": [0.1] * 8}, {"namespace": "b"})
        with pytest.raises(InvalidInputError):
            store.upsert(COL, [*_points(3, "b", 4), taken])
        assert _kept_counts(store) == _counted(store) == {"a": 45, "b": 15}
        store.delete(COL, [p.id for p in a[:7]] + [str(uuid.uuid4())], namespace="a")
        store.delete(COL, [b[0].id], namespace="a")  # another namespace's id: no-op
        assert _kept_counts(store) == _counted(store) == {"a": 38, "b": 15}
        store.clear(COL, namespace="a")
        assert _kept_counts(store) == _counted(store) == {"b": 15}
        store.upsert(COL, _points(2, "a", 5))
        assert _kept_counts(store) == _counted(store) == {"a": 2, "b": 15}
    finally:
        store.close()


def test_tables_made_before_the_counts_get_them_on_first_use(postgres_url: str) -> None:
    """A collection whose tables predate the kept counts (no ``__n`` table, no
    triggers, the older postings index) is given them by the first store that uses it:
    the counts start from the points held, the older index is gone, BM25 ranks as on a
    new table, and later writes are counted."""
    from hello_memory.types import SparseVector

    store = _store(postgres_url, prefix="hm_old_")
    pts = _points(30, "a", 6) + _points(10, "b", 7)
    for i, p in enumerate(pts):
        p.sparse["bm25"] = SparseVector((1, 2 + i % 3), (1.0, 0.5))
    query = SparseVector((1, 3), (1.0, 1.0))
    try:
        store.ensure_collection(SPEC)
        store.upsert(COL, pts)
        before = store.nearest(COL, query, namespace="a", using="bm25", limit=8)
        with store._engine.begin() as conn:  # the layout of the tables before
            conn.exec_driver_sql('DROP TRIGGER hm_points_added ON "hm_old_memories"')
            conn.exec_driver_sql('DROP TRIGGER hm_points_removed ON "hm_old_memories"')
            conn.exec_driver_sql('DROP TABLE "hm_old_memories__n"')
            conn.exec_driver_sql('DROP INDEX "{}"'.format(_terms_index("hm_old_memories")))
            conn.exec_driver_sql('CREATE INDEX "hm_old_memories__sp_term" ON '
                                 '"hm_old_memories__sp" (namespace, name, term)')
    finally:
        store.close()
    store = _store(postgres_url, prefix="hm_old_")
    try:
        after = store.nearest(COL, query, namespace="a", using="bm25", limit=8)
        assert [(h.id, h.score) for h in after] == [(h.id, h.score) for h in before]
        assert _kept_counts(store, "hm_old_memories") == {"a": 30, "b": 10}
        with store._engine.connect() as conn:
            indexes = {r[0] for r in conn.exec_driver_sql(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'hm_old_memories__sp'")}
        assert _terms_index("hm_old_memories") in indexes
        assert "hm_old_memories__sp_term" not in indexes
        store.upsert(COL, _points(4, "b", 8))
        assert _kept_counts(store, "hm_old_memories") == {"a": 30, "b": 14}
    finally:
        store.close()


def test_counts_stay_exact_under_concurrent_writers(postgres_url: str) -> None:
    """Two stores (two processes' connections) add and delete points of one namespace,
    re-upsert the same existing points beside the new ones, and add to another
    namespace, from four threads at once, while a reader searches BM25: the kept counts
    end equal to the points held, and no write or search failed (a deadlock between a
    point's row and a count's row would raise)."""
    from concurrently import run_beside

    from hello_memory.types import SparseVector

    stores = [_store(postgres_url, prefix="hm_race_"), _store(postgres_url, prefix="hm_race_")]
    stores[0].ensure_collection(SPEC)
    errors: list[BaseException] = []
    stop = threading.Event()

    again = _points(5, "shared", 99)
    stores[0].upsert(COL, again)

    def writer(k: int) -> None:
        try:
            for r in range(12):
                pts = _points(6, "shared", 100 * k + r) + _points(2, f"own{k}", 50 + r)
                # half the writers touch the existing points first, half after new ones
                pts = [*again, *pts] if k % 2 else [*pts[:3], *again, *pts[3:]]
                for p in pts:
                    p.sparse["bm25"] = SparseVector((1, 2), (1.0, 1.0))
                stores[k % 2].upsert(COL, pts)
                new = [p.id for p in pts if p not in again and p.payload["namespace"] == "shared"]
                stores[(k + 1) % 2].delete(COL, new[:3], namespace="shared")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            while not stop.is_set():
                stores[0].nearest(COL, SparseVector((1,), (1.0,)), namespace="shared",
                                  using="bm25", limit=5)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    try:
        run_beside([threading.Thread(target=writer, args=(k,)) for k in range(4)],
                   [threading.Thread(target=reader)], stop)
        assert errors == []
        counted = _counted(stores[0], "hm_race_memories")
        assert counted["shared"] == 4 * 12 * 3 + len(again)
        assert _kept_counts(stores[0], "hm_race_memories") == counted
    finally:
        for s in stores:
            s.close()


def test_a_batch_of_queries_is_one_transaction(postgres_url: str) -> None:
    """``nearest_batch`` (the add path's duplicate check: one query per memory) takes one
    connection from the pool and commits once for the whole batch, and answers each
    query as ``nearest`` does."""
    from sqlalchemy import event

    store = _store(postgres_url, prefix="hm_batch_")
    try:
        store.ensure_collection(SPEC)
        pts = _points(40, "a", 9)
        store.upsert(COL, pts)
        queries = [p.vectors["dense"] for p in pts[:6]]
        checkouts: list[int] = []
        event.listen(store._engine, "checkout", lambda *_: checkouts.append(1))
        batch = store.nearest_batch(COL, queries, namespace="a", limit=3,
                                    score_threshold=0.1)
        assert len(checkouts) == 1
        for q, hits in zip(queries, batch, strict=True):
            one = store.nearest(COL, q, namespace="a", limit=3, score_threshold=0.1,
                                with_payload=False)
            assert [(h.id, h.score) for h in hits] == [(h.id, h.score) for h in one]
        assert len(checkouts) == 7
    finally:
        store.close()
