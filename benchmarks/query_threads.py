"""Query-embedding latency by torch intra-op thread count, idle and next to busy cores.

    python -m benchmarks.query_threads [--queries 150]

Embeds the LoCoMo questions of the first conversation one at a time with the default
thread count and with ``embedding.query_threads: 1``, first on an idle machine, then
while one busy process per core runs (plain Python loops: a stand-in for an agent's
other work). Prints p50 / p95 ms per setting; the numbers back the advice on
``embedding.query_threads`` in docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from collections.abc import Sequence

from benchmarks.corpus import locomo_questions, locomo_samples
from benchmarks.run import pct


def _spin(stop: float) -> None:
    x = 0
    while time.time() < stop:
        x += 1


def _measure(threads: int | None, qs: Sequence[str]) -> tuple[float, float]:
    from hello_memory.embedding import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(query_threads=threads)
    emb.embed_query("warm up")
    out = []
    for q in qs:
        t0 = time.perf_counter()
        emb.embed_query(q)
        out.append(1000 * (time.perf_counter() - t0))
    out.sort()
    return out[len(out) // 2], pct(out, 0.95)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--queries", type=int, default=150)
    args = ap.parse_args()
    qs = locomo_questions(locomo_samples()[0])[: args.queries]
    import torch

    print(f"{os.cpu_count()} cores, torch default threads {torch.get_num_threads()}, "
          f"{len(qs)} queries")
    print("| machine | threads | p50 ms | p95 ms |\n|---|---|---|---|")
    for label in ("idle", "one busy process per core"):
        procs = []
        if label != "idle":
            stop = time.time() + 600
            procs = [mp.Process(target=_spin, args=(stop,), daemon=True)
                     for _ in range(os.cpu_count() or 1)]
            for p in procs:
                p.start()
        try:
            for threads in (None, 1):
                p50, p95 = _measure(threads, qs)
                name = f"torch default ({torch.get_num_threads()})" if threads is None \
                    else str(threads)
                print(f"| {label} | {name} | {p50:.1f} | {p95:.1f} |", flush=True)
        finally:
            for p in procs:
                p.terminate()


if __name__ == "__main__":
    main()
