"""pgvector next to Qdrant Edge, and one vs three server processes (issue 30).

One command::

    .venv/bin/python -m benchmarks.pgvector            # 10k memories
    .venv/bin/python -m benchmarks.pgvector --n 10000 --n 100000

For each N, in the same run: the corpus of :mod:`benchmarks.corpus` embedded by the
real default embedder (all-MiniLM-L6-v2; computed once, cached in
``benchmarks/.cache``), ingested into Qdrant Edge (embedded directory) and into
pgvector (a throwaway PostgreSQL server from tests/postgres_server.py, the HNSW index
kept by PostgreSQL on every insert) through the ``VectorStore`` protocol in batches of
256; then 200 real query embeddings searched (top 10, one namespace): pgvector exact
(every row ranked), pgvector HNSW (``ef_search`` 100), Qdrant Edge as ingested (with
the library's default ``vector.hnsw``, whose ``auto_index`` builds the graph on the write
that passes ``indexing_threshold_kb``, about 6,500 vectors) and after
``optimize`` (HNSW). Recall@10 is against pgvector's exact answer. First, the floor of
the same run: a brute-force numpy top 10 over the same vectors (``benchmarks.run.Floor``,
one BLAS thread), the work no store can avoid.

Then requests/s through REST: one and then three ``hello-memory serve`` processes on
one PostgreSQL database (records + pgvector), the same 8 client threads spreading
search requests over the servers. Writes the section ``pgvector`` of BENCHMARKS.md
and ``benchmarks/results/pgvector.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.corpus import cached_embeddings, corpus, queries
from benchmarks.report import write_section
from benchmarks.run import Floor
from benchmarks.serving import free_port, start_serve

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the throwaway PostgreSQL server

from postgres_server import PostgresServer  # noqa: E402

from hello_memory.stores.vector import CollectionSpec, QdrantEdgeVectorStore  # noqa: E402
from hello_memory.stores.vector.base import HnswParams  # noqa: E402
from hello_memory.stores.vector.pgvector import PgVectorParams, PgVectorStore  # noqa: E402
from hello_memory.types import VectorPoint  # noqa: E402

COL = "memories"
NS = "bench"
BATCH = 256
K = 10
N_QUERIES = 200


def _ingest(store: Any, ids: list[str], vecs: np.ndarray) -> float:
    store.ensure_collection(CollectionSpec(COL, {"dense": vecs.shape[1]}))
    start = time.perf_counter()
    for i in range(0, len(ids), BATCH):
        store.upsert(COL, [VectorPoint(ids[j], {"dense": vecs[j]}, {"namespace": NS, "n": j})
                           for j in range(i, min(i + BATCH, len(ids)))])
    return time.perf_counter() - start


def _search(store: Any, qvecs: np.ndarray) -> tuple[list[list[str]], dict[str, float]]:
    out, times = [], []
    for q in qvecs:
        t = time.perf_counter()
        hits = store.nearest(COL, q, namespace=NS, limit=K)
        times.append((time.perf_counter() - t) * 1000)
        out.append([h.id for h in hits])
    return out, _timing(times)


def _timing(times_ms: list[float]) -> dict[str, float]:
    """p50, p95 and queries/s of one client over the searches' times in ms."""
    times = sorted(times_ms)
    return {"p50_ms": statistics.median(times), "p95_ms": times[int(len(times) * 0.95) - 1],
            "qps": len(times) / (sum(times) / 1000)}


def _recall(got: list[list[str]], truth: list[list[str]]) -> float:
    return sum(len(set(g) & set(t)) for g, t in zip(got, truth, strict=True)) / (
        K * len(truth))


def floor_row(n: int, vecs: np.ndarray, qs: list[str], embedder: Any, ids: list[str],
              exact: list[list[str]]) -> dict[str, Any]:
    """The floor's row: a brute-force numpy top ``K`` over ``vecs`` per query."""
    floor = Floor(embedder, np.asarray(vecs, np.float32), qs, k=K)
    for q in qs:
        floor.topk(q)
    got = [[ids[i] for i in floor.top(floor.qv[q])] for q in qs]
    return {"n": n, "store": "floor: brute-force numpy top 10 (one BLAS thread)",
            "ingest_s": None, "ingest_per_s": None, "recall": _recall(got, exact),
            **_timing(floor.topk_ms)}


def store_rows(n: int, server: PostgresServer, model: Any, embedder: Any) -> list[dict[str, Any]]:
    texts = corpus(n)
    vecs = cached_embeddings(model, texts, 64, "synthetic-minilm")
    qs = queries(N_QUERIES)
    qvecs = np.asarray([embedder.embed_query(q) for q in qs], dtype=np.float32)
    ids = [str(uuid.UUID(int=i + 1)) for i in range(n)]
    rows: list[dict[str, Any]] = []

    url = server.create_database()
    pg = PgVectorStore(url=url, params=PgVectorParams(exact_threshold=10**9))
    pg.open()
    ingest = _ingest(pg, ids, vecs)
    exact, exact_t = _search(pg, qvecs)
    pg.close()
    rows.append({"n": n, "store": "pgvector exact", "ingest_s": ingest,
                 "ingest_per_s": n / ingest, "recall": 1.0, **exact_t})
    hnsw_store = PgVectorStore(url=url, params=PgVectorParams(exact_threshold=0))
    hnsw_store.open()
    hnsw, hnsw_t = _search(hnsw_store, qvecs)
    hnsw_store.close()
    rows.append({"n": n, "store": "pgvector HNSW (m 16, ef_construction 64, ef_search 100)",
                 "ingest_s": None, "ingest_per_s": None, "recall": _recall(hnsw, exact),
                 **hnsw_t})
    server.drop_database(url)
    rows.insert(0, floor_row(n, vecs, qs, embedder, ids, exact))

    d = Path(tempfile.mkdtemp(prefix="hm-bench-edge-"))
    try:
        edge = QdrantEdgeVectorStore(path=str(d), hnsw=HnswParams())
        edge.open()
        ingest = _ingest(edge, ids, vecs)
        got, t = _search(edge, qvecs)
        rows.append({"n": n, "store": "Qdrant Edge as ingested (graph built past ~6,500)",
                     "ingest_s": ingest, "ingest_per_s": n / ingest,
                     "recall": _recall(got, exact), **t})
        start = time.perf_counter()
        edge.optimize(COL)
        built = time.perf_counter() - start
        got, t = _search(edge, qvecs)
        rows.append({"n": n, "store": "Qdrant Edge HNSW (after optimize)", "ingest_s": built,
                     "ingest_per_s": None, "recall": _recall(got, exact), **t,
                     "note": "ingest column: the optimize (graph build) time"})
        edge.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return rows


def _load(bases: list[str], seconds: float, clients: int = 8) -> dict[str, float]:
    """``clients`` threads, each sending search requests round-robin over ``bases`` for
    ``seconds``; requests/s and the median latency."""
    qs = queries(64, seed=5)
    done: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(k: int) -> None:
        with httpx.Client(timeout=60) as c:
            i = k
            while time.monotonic() < stop:
                t = time.perf_counter()
                r = c.post(f"{bases[i % len(bases)]}/v1/search", params={"namespace": NS},
                           json={"query": qs[i % len(qs)], "top_k": 10})
                r.raise_for_status()
                with lock:
                    done.append(time.perf_counter() - t)
                i += 1

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    return {"requests": len(done), "rps": len(done) / wall,
            "p50_ms": statistics.median(done) * 1000}


def serving_rows(server: PostgresServer, seconds: float) -> list[dict[str, Any]]:
    url = server.create_database()
    env = {**os.environ, "HELLO_MEMORY__RECORDS__URL": url,
           "HELLO_MEMORY__VECTOR__PROVIDER": "pgvector",
           "HELLO_MEMORY__API__AUTH_DISABLED": "true", "HF_HUB_OFFLINE": "1"}
    tmp = Path(tempfile.mkdtemp(prefix="hm-bench-fleet-"))
    rows = []
    try:
        for count in (1, 3):
            procs, bases = [], []
            try:
                for k in range(count):
                    port = free_port()
                    procs.append(start_serve(ROOT, tmp / f"s{count}-{k}", port, env))
                    bases.append(f"http://127.0.0.1:{port}")
                if count == 1:  # 2,000 memories to search, added through REST once
                    texts = corpus(2000, seed=3)
                    with httpx.Client(timeout=300) as c:
                        for i in range(0, len(texts), 100):
                            c.post(f"{bases[0]}/v1/memories/batch", params={"namespace": NS},
                                   json={"memories": [{"content": t}
                                                      for t in texts[i:i + 100]]}
                                   ).raise_for_status()
                _load(bases, 3)  # warm up every process
                rows.append({"servers": count, **_load(bases, seconds)})
            finally:
                for p in procs:
                    p.terminate()
                for p in procs:
                    p.wait(60)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        server.drop_database(url)
    return rows


def _f(x: float | None, digits: int = 1) -> str:
    return "" if x is None else f"{x:,.{digits}f}"


def render(meta: dict[str, Any], stores: list[dict[str, Any]],
           serving: list[dict[str, Any]]) -> str:
    lines = [
        "## pgvector next to Qdrant Edge; 1 vs 3 server processes (issue 30)",
        "",
        f"`{meta['command']}` on {meta['machine']} ({meta['date']}). Vectors: the real "
        "all-MiniLM-L6-v2 embeddings of `benchmarks/corpus.py`'s corpus (384-d, cached "
        f"once in `benchmarks/.cache`), {N_QUERIES} real query embeddings, top {K}, one "
        "namespace, through the `VectorStore` protocol (no REST, no embedding in the "
        "timings). pgvector on a throwaway PostgreSQL "
        f"{meta['postgres']} (fsync off, shared_buffers 64 MB) with its HNSW index kept "
        "on every insert; Qdrant Edge in-process with the default `vector.hnsw`: "
        "`auto_index` builds its graph on the write that passes `indexing_threshold_kb` "
        "(about 6,500 vectors), so the as-ingested rows are mostly on a graph; "
        "`optimize` indexes the rest. Recall@10 is "
        "against pgvector's exact answer. The floor row: a brute-force numpy top 10 over "
        "the same vectors (one BLAS thread, `benchmarks.run.Floor`), the work no store "
        "can avoid.",
        "",
        "| N | store | ingest s | ingest vectors/s | search p50 ms | p95 ms | queries/s "
        "(one client) | recall@10 |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in stores:
        lines.append(f"| {r['n']:,} | {r['store']} | {_f(r['ingest_s'])} | "
                     f"{_f(r['ingest_per_s'], 0)} | {_f(r['p50_ms'], 2)} | "
                     f"{_f(r['p95_ms'], 2)} | {_f(r['qps'], 0)} | {r['recall']:.3f} |")
    lines += [
        "",
        "Qdrant Edge's HNSW row: the ingest column is the `optimize` (graph build) time.",
        "",
        "Requests/s through REST (`POST /v1/search`, 2,000 memories, 8 client threads "
        f"spreading requests over the servers for {meta['seconds']:.0f} s after a warm-up), "
        "`hello-memory serve` processes on one PostgreSQL with records and pgvector:",
        "",
        "| server processes | requests | requests/s | p50 ms |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for r in serving:
        lines.append(f"| {r['servers']} | {r['requests']:,} | {_f(r['rps'])} | "
                     f"{_f(r['p50_ms'])} |")
    lines += ["", f"This machine has {meta['cpus']} CPU cores (shared with other work "
              "while it ran): each search embeds its query on the CPU, so more processes "
              "than cores cannot add throughput here; the second table shows the fleet "
              "serving correctly at the same load, not how it scales on more cores."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, action="append", help="corpus sizes (default 10000)")
    ap.add_argument("--seconds", type=float, default=20.0, help="REST load per setting")
    ap.add_argument("--no-write", action="store_true", help="print, do not write BENCHMARKS.md")
    args = ap.parse_args()
    sizes = args.n or [10_000]
    from hello_memory.embedding import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(batch_size=64)
    model = embedder._ensure_loaded()
    with PostgresServer() as server:
        with server.connect() as conn:
            version = conn.info.server_version
        stores = [row for n in sizes for row in store_rows(n, server, model, embedder)]
        serving = serving_rows(server, args.seconds)
    cmd = "python -m benchmarks.pgvector" + "".join(f" --n {n}" for n in args.n or [])
    meta = {"command": cmd, "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
            "postgres": f"{version // 10000}.{version % 10000}", "seconds": args.seconds}
    text = render(meta, stores, serving)
    print(text)
    if not args.no_write:
        out = ROOT / "benchmarks" / "results" / "pgvector.json"
        out.write_text(json.dumps({"meta": meta, "stores": stores, "serving": serving},
                                  indent=2) + "\n")
        write_section(ROOT / "BENCHMARKS.md", "pgvector", text)


if __name__ == "__main__":
    main()
