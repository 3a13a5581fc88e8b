"""What the one search costs against the per-type search it replaced, where users meet it.

    python -m benchmarks.search_cost [--n 10000] [--queries 100] [--no-write] [--out FILE]

One embedded store of N synthetic memories (the corpus of ``benchmarks.run``, 20 %
Chinese), one namespace, ingested through ``add_many`` in calls of at most
``limits.max_batch`` memories. The same questions are asked, interleaved, through
``MemoryManager.search`` with the ``per-type`` recipe (what every interface ran before
issue 13: each type's own dense ranking) and with the default ``hybrid`` recipe (the
one search), and through ``POST /v1/search`` on a real HTTP server: the FastAPI app
under uvicorn on 127.0.0.1 in this process, asked over one kept-alive ``http.client``
connection, as a client of ``hello-memory serve`` asks it (Starlette's TestClient,
used before, added about 5 ms of its own thread hand-offs per request). Query
embedding is included everywhere (the same model call on both sides).

Twice: on the store as ingested, and again after ``jobs optimize``
(:func:`hello_memory.interfaces.jobs.run_optimize`, which the server's scheduler runs; it builds
the HNSW segments), the state of a store that has been running. Since
``vector.hnsw.auto_index`` the write path builds the graph itself every ~6,700 memories,
so at 10k the first pass already searches it for all but the latest writes. The dense
view's candidates after optimize, against the exact ones (brute force in numpy over the
stored memories' vectors), say what the approximate index changes. (Whole top-5
lists are no measure of that here: the synthetic texts tie in BM25 by the dozen, and
Edge orders equal scores by its segment layout, which optimize rebuilds.)

The floor (``benchmarks.run.Floor``: one query embedding plus a brute-force numpy top-5
over the very vectors the store was given) is sampled just before each query's modes,
so every row is also a ratio to it (issue 27: the one search p50 <= 1.5 x the floor
in-process, <= 2 x over REST; hybrid <= 1.3 x per-type). Before the measured loop every
question is asked once through the one search, timed as its own row: the first time a
Chinese memory reaches the multilingual view its text is read by the multilingual model
(retrieval/multilingual.py caches the vector), so a first asking costs more than the
steady state the other rows measure. Ratios, not absolute numbers, are what a noisy
machine can compare.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.corpus import corpus, queries
from benchmarks.report import write_section
from benchmarks.run import (
    CapturingEmbedder,
    Floor,
    add_in_batches,
    exact_top_ids,
    open_manager,
    pct,
)

API_KEY = "search-cost"
Mode = Callable[[str], object]


def _timed(fn: Mode, q: str, out: list[float]) -> None:
    t0 = time.perf_counter()
    fn(q)
    out.append((time.perf_counter() - t0) * 1000)


@contextmanager
def http_server(app: Any) -> Iterator[Mode]:
    """``app`` under uvicorn on a free loopback port, in a thread of this process; yields
    a function that asks ``POST /v1/search`` over one kept-alive connection."""
    import uvicorn

    from benchmarks.serving import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="on",
                                           # the in-process phases between two REST
                                           # asks can outlast uvicorn's 5 s default
                                           timeout_keep_alive=600))
    thread = threading.Thread(target=server.run, name="search-cost-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}

    def ask(q: str) -> object:
        conn.request("POST", "/v1/search?namespace=b", headers=headers,
                     body=json.dumps({"query": q, "top_k": 5}))
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"POST /v1/search answered {response.status}: {body[:200]!r}")
        return json.loads(body)

    try:
        yield ask
    finally:
        conn.close()
        server.should_exit = True
        thread.join(timeout=30)


def _measure(modes: dict[str, Mode], qs: Sequence[str], floor: Floor, first_mode: str
             ) -> dict[str, list[float]]:
    """Each question's first asking through ``first_mode`` (``<mode>-first``), then
    every mode per question, interleaved (load changes hit every mode alike), the floor
    sampled before each question."""
    for fn in modes.values():  # warm every path once
        fn(qs[0])
    first: list[float] = []
    for q in qs:
        floor.full(q)
        _timed(modes[first_mode], q, first)
    times: dict[str, list[float]] = {m: [] for m in modes}
    for q in qs:
        floor.full(q)
        for mode, fn in modes.items():
            _timed(fn, q, times[mode])
    times[f"{first_mode}-first"] = first
    return times


def run(n: int, n_queries: int) -> dict[str, Any]:
    from hello_memory.config import load_settings
    from hello_memory.embedding import SentenceTransformerEmbedder
    from hello_memory.interfaces.jobs import run_optimize
    from hello_memory.interfaces.rest import create_app

    embedder = SentenceTransformerEmbedder()
    embedder.embed(["warm up"])
    capture = CapturingEmbedder(embedder)
    texts, qs = corpus(n), queries(n_queries)
    now = datetime.now(timezone.utc)
    res: dict[str, Any] = {"n": n, "queries": n_queries}
    with tempfile.TemporaryDirectory() as tmp:
        mm = open_manager(Path(tmp), capture)
        t0 = time.perf_counter()
        add_in_batches(mm, texts, "b", now)
        res["ingest_s"] = round(time.perf_counter() - t0, 1)
        floor = Floor(embedder, capture.take(), qs)
        settings = load_settings(environ={}, data_dir=Path(tmp),
                                 api={"api_keys": {API_KEY: ["b"]}})

        def hybrid(q: str) -> object:
            return mm.search(q, top_k=5, namespace="b")

        def dense_pool() -> list[list[str]]:
            """The semantic view's candidates for each question (its filter, its limit)."""
            from hello_memory.memory.episodic import payload_filters
            from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION
            from hello_memory.stores.records import ItemFilter

            limit = mm.retriever.settings.candidates
            flt = payload_filters(ItemFilter(memory_types=["episodic", "semantic"]))
            return [[h.id for h in mm.stores.vectors.nearest(
                MEMORY_COLLECTION, floor.qv[q].tolist(), namespace="b", using=DENSE,
                limit=limit, filters=flt, with_payload=False)] for q in qs]

        # brute force (the store's own search is on its graph already: auto_index),
        # before the server starts (its kept-alive connection would time out meanwhile)
        exact = exact_top_ids(mm, qs, floor.qv.__getitem__, capture,
                              k=mm.retriever.settings.candidates,
                              memory_types=["episodic", "semantic"])
        with http_server(create_app(settings, manager=mm)) as rest:
            times = _measure({
                "per-type": lambda q: mm.search(q, top_k=5, namespace="b", recipe="per-type"),
                "hybrid": hybrid, "hybrid-rest": rest}, qs, floor, "hybrid")
            t0 = time.perf_counter()
            run_optimize(mm)  # the scheduled job: HNSW segments for every collection
            res["optimize_s"] = round(time.perf_counter() - t0, 1)
            after = _measure({"hybrid-opt": hybrid, "hybrid-rest-opt": rest}, qs, floor,
                             "hybrid-opt")
            found = dense_pool()
            res["dense_recall"] = round(sum(len(set(a) & set(b)) for a, b in zip(
                exact, found, strict=True)) / max(1, sum(map(len, exact))), 3)
        mm.close()
    res["spacy_ner_ms"] = spacy_ner_ms(qs)
    times.update(after)
    for mode, ms in times.items():
        res[f"{mode}_p50_ms"] = round(statistics.median(ms), 1)
        res[f"{mode}_p95_ms"] = round(pct(ms, 0.95), 1)
    fl = floor.result()
    res["floor_p50_ms"], res["floor_p95_ms"] = round(fl["p50_ms"], 1), round(fl["p95_ms"], 1)
    for mode in times:
        res[f"{mode}_per_type"] = round(res[f"{mode}_p50_ms"] / res["per-type_p50_ms"], 2)
        res[f"{mode}_floor"] = round(res[f"{mode}_p50_ms"] / fl["p50_ms"], 2)
    return res


ROWS = [
    ("floor", "floor: one query embedding + brute-force numpy top-5 over the same vectors"),
    ("per-type", "`MemoryManager.search(recipe=\"per-type\")` (before)"),
    ("hybrid", "`MemoryManager.search()` (the one search; target <= 1.5 x floor)"),
    ("hybrid-rest", "`POST /v1/search` (the one search over REST; target <= 2 x floor)"),
    ("hybrid-first", "`MemoryManager.search()`, each question's first asking"),
    ("hybrid-opt", "after `jobs optimize`: `MemoryManager.search()` (target <= 1.5 x)"),
    ("hybrid-rest-opt", "after `jobs optimize`: `POST /v1/search` (target <= 2 x)"),
    ("hybrid-opt-first", "after `jobs optimize`: each question's first asking"),
]


def spacy_ner_ms(qs: Sequence[str]) -> float | None:
    """p50 of spaCy's NER of each question (the nlp extra's entity extractor), in this
    run; None without spaCy. The searches above read entities with the rule extractor
    of the core and server installs (benchmarks.run.open_manager)."""
    from hello_memory.text.entities import SpacyExtractor

    spacy = SpacyExtractor()
    if not spacy.available():  # the nlp extra is not installed
        return None
    spacy.extract(qs[0], "b")  # the first call builds the pipeline's caches
    out: list[float] = []
    for q in qs:
        _timed(lambda text: spacy.extract(text, "b"), q, out)
    return round(statistics.median(out), 2)


def table(r: dict[str, Any]) -> str:
    ner = r.get("spacy_ner_ms")
    lines = [
        f"N = {r['n']} memories, {r['queries']} queries, top 5, query embedding included; "
        f"ingest {r['ingest_s']} s, `jobs optimize` {r['optimize_s']} s; after it the "
        f"dense view's 50 candidates hold {100 * r['dense_recall']:.1f} % of the exact "
        "ones (the HNSW graph is approximate). Ratios are of p50s, measured in the same "
        "run. Entities come from the rule extractor (the core and server installs); "
        + (f"with the nlp extra, spaCy's NER of a question adds {ner} ms (p50, this run)."
           if ner is not None else "spaCy (the nlp extra) was not installed.")
        + "", "",
        "| search | p50 ms | p95 ms | p50 / floor p50 | p50 / per-type p50 (target <= 1.3) |",
        "|---|---|---|---|---|",
    ]
    for key, label in ROWS:
        if key == "floor":
            lines.append(f"| {label} | {r['floor_p50_ms']} | {r['floor_p95_ms']} | 1.00 | "
                         f"{r['floor_p50_ms'] / r['per-type_p50_ms']:.2f} |")
            continue
        lines.append(f"| {label} | {r[f'{key}_p50_ms']} | {r[f'{key}_p95_ms']} | "
                     f"{r[f'{key}_floor']:.2f} | {r[f'{key}_per_type']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"),
                    help="the file whose search-cost section is rewritten")
    args = ap.parse_args()
    from benchmarks.run import engine, load

    started = load()
    r = run(args.n, args.queries)
    body = table(r)
    print(body)
    if not args.no_write:
        write_section(args.out, "search-cost",
                      "## The one search against the per-type search and the floor\n\n"
                      f"Produced by `python -m benchmarks.search_cost --n {args.n} --queries "
                      f"{args.queries}` on {time.strftime('%Y-%m-%d')}, {os.cpu_count()} "
                      f"cores, all-MiniLM-L6-v2 on {engine()}, modes interleaved per query, "
                      f"the floor sampled before each query. Machine {started} at start, "
                      f"{load()} at the end.\n\n" + body)


if __name__ == "__main__":
    main()
