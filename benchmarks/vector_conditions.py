"""What the conditions every point meets cost the one search (issue 27).

    python -m benchmarks.vector_conditions [--n 10000] [--queries 100] [--rounds 6]
                                           [--no-write] [--md BENCHMARKS.md]

Since issue 27 the search's vector queries leave out a payload condition that every
point of the namespace meets (memory/episodic.py ``payload_filters``): the memory type
when both stored types are asked for, the status where the namespace holds active
memories only. Qdrant Edge checks each condition on each point it scores, so they cost
time and changed no result.

One embedded store of N synthetic memories (benchmarks.corpus, 20 % Chinese) through
``add_many``, then the same questions through ``MemoryManager.search`` (query
embedding included), in rounds alternating between the search as it is (``without``)
and the same search whose vector queries get those two conditions back (``with``: the
store's ``nearest`` adds them, what every search sent before). Per mode: the p50 of
each dense and BM25 query of the memory collection, and the search's p50 / p95 beside
the floor (``benchmarks.run.Floor``: one query embedding plus a brute-force numpy top 5
over the same vectors, sampled just before each search); then whether every question's
top 5 is the same both ways. Compare the ratios of one run: the machine is shared.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.corpus import corpus, queries
from benchmarks.report import write_section
from benchmarks.run import (
    CapturingEmbedder,
    Floor,
    add_in_batches,
    engine,
    load,
    open_manager,
    over_floor,
    pct,
)

ROOT = Path(__file__).resolve().parents[1]
MODES = ("without", "with")


def measure(n: int, n_queries: int, rounds: int) -> dict[str, Any]:
    """The two modes on one store of ``n`` memories (module docstring)."""
    from hello_memory.embedding import SentenceTransformerEmbedder
    from hello_memory.ports.vector import VectorFilter
    from hello_memory.types import SparseVector

    qs = queries(n_queries)
    with tempfile.TemporaryDirectory(prefix="hm-conditions-") as tmp:
        embedder = SentenceTransformerEmbedder()
        capture = CapturingEmbedder(embedder)
        mm = open_manager(Path(tmp), capture)
        try:
            t0 = time.perf_counter()
            add_in_batches(mm, corpus(n), "b", datetime.now(timezone.utc))
            ingest = time.perf_counter() - t0
            floor = Floor(embedder, capture.take(), qs)
            floor_ms: dict[str, list[float]] = defaultdict(list)
            store = mm.stores.vectors
            real = store.nearest
            mode = ["without"]
            queried: dict[tuple[str, str], list[float]] = defaultdict(list)

            def nearest(collection: str, query: Any, **kwargs: Any) -> Any:
                flt = kwargs.get("filters")
                if mode[0] == "with" and flt is not None:
                    kwargs["filters"] = VectorFilter({"memory_type": ("episodic", "semantic"),
                                                      "status": "active", **flt.conditions})
                t = time.perf_counter()
                try:
                    return real(collection, query, **kwargs)
                finally:
                    kind = "BM25" if isinstance(query, SparseVector) else "dense"
                    queried[(mode[0], kind)].append(1000 * (time.perf_counter() - t))

            store.nearest = nearest  # type: ignore[method-assign]

            def top5(q: str) -> list[str]:
                return [h.id for h in mm.search(q, top_k=5, namespace="b", touch=False)]

            for q in qs:  # the first asking reads what later ones find cached
                top5(q)
            searched: dict[str, list[float]] = defaultdict(list)
            for r in range(rounds):
                for m in (MODES if r % 2 == 0 else MODES[::-1]):
                    mode[0] = m
                    for q in qs:
                        floor.sampled(q, floor_ms[m])
                        t = time.perf_counter()
                        top5(q)
                        searched[m].append(1000 * (time.perf_counter() - t))
            differ = 0
            for q in qs:
                mode[0] = "without"
                a = top5(q)
                mode[0] = "with"
                differ += a != top5(q)
        finally:
            mm.close()
    return {"n": n, "ingest_s": ingest, "queries": len(qs), "rounds": rounds,
            "query_p50": {f"{m} {k}": statistics.median(v) for (m, k), v in queried.items()},
            "search": {m: (statistics.median(v), pct(v, 0.95)) for m, v in searched.items()},
            "floor": {m: over_floor([x / 1000 for x in searched[m]], floor_ms[m])
                      for m in searched},
            "differ": differ}


def table(rows: Sequence[dict[str, Any]]) -> str:
    out = ["| N | vector query | p50 ms with the conditions | p50 ms without | without / with |",
           "|---|---|---|---|---|"]
    for r in rows:
        p = r["query_p50"]
        for kind in ("dense", "BM25"):
            w, wo = p[f"with {kind}"], p[f"without {kind}"]
            out.append(f"| {r['n']:,} | {kind} | {w:.2f} | {wo:.2f} | {wo / w:.2f} |")
        (w50, w95), (o50, o95) = r["search"]["with"], r["search"]["without"]
        out.append(f"| {r['n']:,} | the one search, p50 / p95 | {w50:.1f} / {w95:.1f} | "
                   f"{o50:.1f} / {o95:.1f} | {o50 / w50:.2f} |")
        fw, fo = r["floor"]["with"], r["floor"]["without"]
        out.append(f"| {r['n']:,} | the floor, p50 | {fw['floor_p50_ms']:.1f} | "
                   f"{fo['floor_p50_ms']:.1f} |  |")
        out.append(f"| {r['n']:,} | the one search's p50 / the floor's | "
                   f"{fw['p50_over_floor']:.2f} | {fo['p50_over_floor']:.2f} |  |")
    lines = "\n".join(out)
    same = "; ".join(f"N = {r['n']:,}: {r['queries'] - r['differ']} of {r['queries']} "
                     f"questions' top 5 the same both ways" for r in rows)
    return f"{lines}\n\n{same}."


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--md", type=Path, default=ROOT / "BENCHMARKS.md")
    args = ap.parse_args()
    started = load()
    rows = []
    for n in args.n:
        print(f"N = {n:,}: ingesting", flush=True)
        rows.append(measure(n, args.queries, args.rounds))
    body = table(rows)
    print(body)
    if not args.no_write:
        command = "python -m benchmarks.vector_conditions " + " ".join(
            f"--n {n}" if i == 0 else str(n) for i, n in enumerate(args.n))
        write_section(args.md, "vector-conditions", (
            "## The conditions every point meets, in the search's vector queries "
            "(issue 27)\n\n"
            f"Produced by `{command}` on {datetime.now(timezone.utc):%Y-%m-%d}, "
            f"{engine()}, one embedded store per N (Qdrant Edge), {args.queries} "
            f"questions x {args.rounds} rounds alternating between the modes, query "
            f"embedding included. The floor: one query embedding plus a brute-force "
            "numpy top 5 over the same vectors (one BLAS thread, `benchmarks.run.Floor`), "
            "sampled just before each search, its p50 per mode. "
            f"`with`: the search's vector queries also carry the "
            "memory type (both stored types) and the status (active), as every search "
            "sent them before; `without`: as it is now (memory/episodic.py "
            f"`payload_filters`). Machine {started} at start, {load()} at the end. "
            "Compare ratios of one run.\n\n" + body))


if __name__ == "__main__":
    main()
