"""What the one search costs against the per-type search it replaced, where users meet it.

    python -m benchmarks.search_cost [--n 10000] [--queries 100] [--no-write]

One embedded store of N synthetic memories (the corpus of ``benchmarks.run``, 20 %
Chinese), one namespace. The same questions are asked, interleaved, through
``MemoryManager.search`` with the ``per-type`` recipe (what every interface ran before
issue 13: each type's own dense ranking) and with the default ``hybrid`` recipe (the
one search), and through ``POST /v1/search`` (in-process FastAPI app, real routing and
serialisation) with the default recipe. Query embedding is included everywhere (the
same model call on both sides). Target: hybrid p50 <= 1.3 x per-type p50 at 10k,
measured in the same run (the ratio, not the absolute numbers, is what a noisy machine
can compare).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.corpus import corpus, queries
from benchmarks.report import write_section
from benchmarks.run import entries, open_manager, pct

API_KEY = "search-cost"


def _timed(fn: Callable[[str], object], q: str, out: list[float]) -> None:
    t0 = time.perf_counter()
    fn(q)
    out.append((time.perf_counter() - t0) * 1000)


def run(n: int, n_queries: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from hello_memory.api import create_app
    from hello_memory.config import load_settings
    from hello_memory.embedding import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    embedder.embed(["warm up"])
    texts, qs = corpus(n), queries(n_queries)
    now = datetime.now(timezone.utc)
    res: dict[str, Any] = {"n": n, "queries": n_queries}
    with tempfile.TemporaryDirectory() as tmp:
        mm = open_manager(Path(tmp), embedder)
        t0 = time.perf_counter()
        for i in range(0, n, 10_000):
            mm.add_many(entries(texts[i:i + 10_000], "b", now))
        res["ingest_s"] = round(time.perf_counter() - t0, 1)
        settings = load_settings(environ={}, data_dir=Path(tmp),
                                 api={"api_keys": {API_KEY: ["b"]}})
        with TestClient(create_app(settings, manager=mm)) as client:
            def rest(q: str) -> object:
                r = client.post("/v1/search", params={"namespace": "b"},
                                headers={"Authorization": f"Bearer {API_KEY}"},
                                json={"query": q, "top_k": 5})
                r.raise_for_status()
                return r.json()

            modes: dict[str, Callable[[str], object]] = {
                "per-type": lambda q: mm.search(q, top_k=5, namespace="b", recipe="per-type"),
                "hybrid": lambda q: mm.search(q, top_k=5, namespace="b"),
                "hybrid-rest": rest,
            }
            for fn in modes.values():  # warm every path once
                fn(qs[0])
            times: dict[str, list[float]] = {m: [] for m in modes}
            for q in qs:  # interleaved: load changes hit every mode alike
                for mode, fn in modes.items():
                    _timed(fn, q, times[mode])
        mm.close()
    for mode, ms in times.items():
        res[f"{mode}_p50_ms"] = round(statistics.median(ms), 1)
        res[f"{mode}_p95_ms"] = round(pct(ms, 0.95), 1)
    res["ratio_p50"] = round(res["hybrid_p50_ms"] / res["per-type_p50_ms"], 2)
    res["ratio_rest_p50"] = round(res["hybrid-rest_p50_ms"] / res["per-type_p50_ms"], 2)
    return res


def table(r: dict[str, Any]) -> str:
    return "\n".join([
        f"N = {r['n']} memories, {r['queries']} queries, top 5, query embedding included; "
        f"ingest {r['ingest_s']} s.", "",
        "| search | p50 ms | p95 ms | p50 / per-type p50 (target <= 1.3) |",
        "|---|---|---|---|",
        f"| `MemoryManager.search(recipe=\"per-type\")` (before) | {r['per-type_p50_ms']} | "
        f"{r['per-type_p95_ms']} | 1.00 |",
        f"| `MemoryManager.search()` (the one search) | {r['hybrid_p50_ms']} | "
        f"{r['hybrid_p95_ms']} | {r['ratio_p50']:.2f} |",
        f"| `POST /v1/search` (the one search over REST) | {r['hybrid-rest_p50_ms']} | "
        f"{r['hybrid-rest_p95_ms']} | {r['ratio_rest_p50']:.2f} |",
    ])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    r = run(args.n, args.queries)
    body = table(r)
    print(body)
    if not args.no_write:
        write_section(Path("BENCHMARKS.md"), "search-cost",
                      "## The one search against the per-type search\n\nProduced by "
                      f"`python -m benchmarks.search_cost --n {args.n}` on "
                      f"{time.strftime('%Y-%m-%d')}, 2-core machine, all-MiniLM-L6-v2 on "
                      "the CPU, modes interleaved per query.\n\n" + body)


if __name__ == "__main__":
    main()
