"""``POST /v1/context`` latency at 10k and 100k memories, query embedding excluded.

    python -m benchmarks.context_latency [--n 10000 100000] [--queries 100] [--out BENCHMARKS.md]

One namespace of N memories built from the synthetic corpus of ``benchmarks.corpus``
with its cached real MiniLM embeddings (``benchmarks/.cache``; computed once, the
first run at a new largest N pays for it), shaped like an agent's memory: sessions of
20 turns (the loader's timelines), one memory in ten semantic, importance spread over
0.3 .. 0.9 (the standing facts), one in fifty with a ``metadata["topic"]`` shared by
~N/650 memories (a large topic whose timeline must still be a LIMIT read).

Timed: ``POST /v1/context`` through the real REST app (``create_app`` over the
manager, httpx's ASGI transport, one client and event loop), ``max_tokens`` 1500, over
``--queries`` queries of ``benchmarks.corpus.queries``. Query embedding is excluded by
a warm cache: an untimed first pass over the same queries embeds every (sub-)query
the engine asks for and the timed pass is served from it (its misses are reported,
and are 0 when the exclusion held). The same store is measured as exact search and
after ``MemoryManager.optimize()`` (the embedded engine's HNSW graph). For scale, the
search alone (``MemoryManager.search``, top 20 as the loader asks) is timed too. Beside
them, the floor of the same run without the query embedding (``benchmarks.run.Floor``,
its top-k alone): a brute-force numpy top 20 over the N stored vectors, sampled just
before each timed call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.corpus import CACHE_DIR, CachedEmbedder, cached_embeddings, corpus, queries
from benchmarks.report import write_section
from benchmarks.run import (
    RESULTS,
    ROOT,
    Floor,
    QueryVectors,
    lat_ms,
    load,
    max_batch,
    open_manager,
    pct,
    versions,
)

NS = "b"
KEY = "bench-key"
TARGET_P95_MS = 60.0


class WarmQueryCache(QueryVectors):
    """Query vectors embedded once and served from memory afterwards (any text the
    engine asks for, sub-queries included); ``misses`` counts embeddings done."""

    def __init__(self, inner: Any, qs: Sequence[str]) -> None:
        super().__init__(inner, qs)
        self.misses = 0

    def embed_query(self, text: str) -> Any:
        if text not in self._q:
            self.misses += 1
            self._q[text] = self.inner.embed_query(text)
        return self._q[text]


def entries(texts: Sequence[str], start: int, now: datetime) -> list[dict[str, Any]]:
    out = []
    for n, text in enumerate(texts, start):
        entry: dict[str, Any] = {
            "content": text, "namespace": NS, "session_id": f"s{n // 20}",
            "memory_type": "semantic" if n % 10 == 0 else "episodic",
            "importance": round(0.3 + 0.1 * (n % 7), 1),
            "event_time": now - timedelta(minutes=n)}
        if n % 50 == 25:
            entry["metadata"] = {"topic": f"topic-{n % 13}"}
        out.append(entry)
    return out


def build(n: int, data: Path, batch: int) -> tuple[Any, Any, float, float]:
    """The manager over N memories; (manager, their vectors, embed s, ingest s)."""
    from hello_memory.embedding import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(batch_size=batch)
    model = embedder._ensure_loaded()
    embedder.embed(["warm up"])
    texts = corpus(n)
    t0 = time.perf_counter()
    vecs = cached_embeddings(model, texts, batch, "synthetic-minilm")
    embed_s = time.perf_counter() - t0
    mm = open_manager(data, CachedEmbedder(embedder, texts, vecs))
    now = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    step = max_batch()  # the largest add_many the library allows
    for i in range(0, n, step):
        mm.add_many(entries(texts[i:i + step], i, now))
    return mm, vecs, embed_s, time.perf_counter() - t0


def time_context(mm: Any, data: Path, qs: Sequence[str], cache: WarmQueryCache,
                 floor: Floor) -> dict[str, Any]:
    """p50 / p95 ms of POST /v1/context after an untimed warm pass, ``floor``'s top-k
    sampled before each call; mean tokens, empty blocks, and the query embeddings the
    timed pass still needed (0 expected)."""
    import httpx

    from hello_memory.config import load_settings
    from hello_memory.interfaces.rest import create_app

    settings = load_settings(environ={}, data_dir=data, api={"api_keys": {KEY: [NS]}})
    app = create_app(settings, manager=mm)
    headers = {"Authorization": f"Bearer {KEY}"}

    async def go() -> tuple[list[float], list[int], int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            async def call(q: str) -> dict[str, Any]:
                r = await client.post("/v1/context", params={"namespace": NS}, headers=headers,
                                      json={"query": q, "max_tokens": 1500})
                r.raise_for_status()
                return dict(r.json())

            for q in qs:  # warm: query embeddings, SQLite pages, the app's first call
                await call(q)
            times, tokens = [], []
            misses = cache.misses
            for q in qs:
                floor.topk(q)
                t0 = time.perf_counter()
                body = await call(q)
                times.append(time.perf_counter() - t0)
                tokens.append(int(body["tokens"]))
        return times, tokens, cache.misses - misses

    times, tokens, misses = asyncio.run(go())
    return {"p50_ms": 1000 * statistics.median(times), "p95_ms": 1000 * pct(times, 0.95),
            "mean_tokens": statistics.mean(tokens),
            "empty": sum(1 for t in tokens if t == 0), "timed_misses": misses}


def bench(n: int, n_queries: int, batch: int) -> dict[str, Any]:
    qs = queries(n_queries)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "hm"
        print(f"  build N={n}", flush=True)
        mm, vecs, embed_s, ingest_s = build(n, data, batch)
        cache = WarmQueryCache(mm.stores.embedder, qs)
        mm.stores.embedder = cache
        floor = Floor(cache, np.asarray(vecs, np.float32), qs, k=20)
        res: dict[str, Any] = {"n": n, "queries": n_queries, "embed_s": embed_s,
                               "ingest_s": ingest_s}
        for label in ("exact", "hnsw"):
            if label == "hnsw":
                print(f"  optimize N={n}", flush=True)
                t0 = time.perf_counter()
                mm.optimize()
                res["optimize_s"] = time.perf_counter() - t0
            print(f"  context {label} N={n}", flush=True)
            res[label] = time_context(mm, data, qs, cache, floor)
            res[label]["search_p50_ms"], res[label]["search_p95_ms"] = lat_ms(
                lambda q: mm.search(q, top_k=20, namespace=NS), qs, before=floor.topk)
        res["floor_p50_ms"] = statistics.median(floor.topk_ms)
        res["query_embeddings"] = len(cache._q)
        mm.close()
    return res


def render(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    lines = [
        "## Context block latency (`POST /v1/context`)", "",
        f"Produced by `python -m benchmarks.context_latency --n "
        f"{' '.join(str(r['n']) for r in rows)}` on {meta['date']} in {meta['minutes']:.0f} "
        f"min, {meta['cores']} cores, {meta['versions']}; {meta['load_start']} at the start, "
        f"{meta['load_end']} at the end (a shared machine: absolute numbers move with the "
        "load).", "",
        "One namespace of N synthetic memories (cached MiniLM embeddings; sessions of 20 "
        "turns, one in ten semantic, importance 0.3 .. 0.9, one in fifty in a shared "
        "metadata topic). Each call goes through the REST app (httpx ASGI transport, "
        f"`max_tokens` 1500) for {rows[0]['queries']} queries; query embedding excluded by a "
        "warm cache (an untimed first pass embeds every query and sub-query; the timed "
        "pass needs none: \"misses\" below). Exact = the embedded engine's brute-force "
        "search; HNSW = after `hello-memory jobs optimize`. Search alone = "
        "`MemoryManager.search(q, top_k=20)`, the loader's one search, for scale. "
        "p50 / p95 ms. Floor = a brute-force numpy top 20 over the same N vectors, no "
        "query embedding (one BLAS thread, `benchmarks.run.Floor`), sampled just before "
        "each timed call; x floor = context p50 over the floor's p50.", "",
        f"| N | build s (embed + ingest) | context, exact (target p95 <= {TARGET_P95_MS:.0f} "
        "at 100k) | search alone, exact | context, HNSW | search alone, HNSW | mean block "
        "tokens | empty blocks | misses | floor p50 | x floor, exact / HNSW |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        e, h = r["exact"], r["hnsw"]
        lines.append(
            f"| {r['n']} | {r['embed_s']:.0f} + {r['ingest_s']:.0f} | {e['p50_ms']:.1f} / "
            f"{e['p95_ms']:.1f} | {e['search_p50_ms']:.1f} / {e['search_p95_ms']:.1f} | "
            f"{h['p50_ms']:.1f} / {h['p95_ms']:.1f} | {h['search_p50_ms']:.1f} / "
            f"{h['search_p95_ms']:.1f} | {e['mean_tokens']:.0f} | {e['empty']} | "
            f"{e['timed_misses'] + h['timed_misses']} | {r['floor_p50_ms']:.1f} | "
            f"{e['p50_ms'] / r['floor_p50_ms']:.1f} / {h['p50_ms'] / r['floor_p50_ms']:.1f} |")
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        lines += ["", f"Growth from N = {a['n']} to {b['n']}, context p50: exact "
                  f"{b['exact']['p50_ms'] / a['exact']['p50_ms']:.2f}x, HNSW "
                  f"{b['hnsw']['p50_ms'] / a['hnsw']['p50_ms']:.2f}x."]
    if meta.get("note"):
        lines += ["", meta["note"]]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--note", default="", help="a sentence added under the table")
    ap.add_argument("--out", type=Path, default=ROOT / "BENCHMARKS.md")
    ap.add_argument("--json", type=Path, default=RESULTS / "context_latency.json")
    args = ap.parse_args()
    started = time.time()
    meta: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(),
                            "versions": versions(), "load_start": load(), "note": args.note,
                            "cache": str(CACHE_DIR)}
    rows = []
    for n in sorted(args.n):
        print(f"N={n} ...", flush=True)
        rows.append(bench(n, args.queries, args.batch))
        print(json.dumps(rows[-1]), flush=True)
    meta["load_end"] = load()
    meta["minutes"] = (time.time() - started) / 60
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
    write_section(args.out, "context-latency", render(meta, rows))
    print(f"wrote {args.out} (section context-latency) in {meta['minutes']:.1f} min")


if __name__ == "__main__":
    main()
