"""The figures of docs/RELIABILITY.md "Concurrency (issue 28)", fair service: 8 parallel
9,990-character searches from one API key while another key runs small searches,
against a live ``hello-memory serve`` of the tree on the path (30 memories per
namespace). Prints one JSON line: each latency alone, the burst's statuses and time,
the other key's small searches during it.

    .venv/bin/python -m tests.reliability.heavy_queries
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.reliability.live_server import KEY, LiveServer

WORDS = ("apple", "harbour", "violin", "glacier", "pepper", "tractor", "orchid", "comet",
         "lantern", "walrus", "meadow", "circuit", "saffron", "canyon", "trumpet", "velvet")
NAMES = ("Alice", "Bruno", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hiroshi")


def heavy(rng: random.Random) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < 9_990:
        words.append(rng.choice(NAMES) if rng.random() < 0.25 else rng.choice(WORDS))
    return " ".join(words)[:9_990]


def measure(srv: LiveServer) -> dict[str, Any]:
    rng = random.Random(1)
    a = httpx.Client(base_url=srv.base, headers={"Authorization": "Bearer A"}, timeout=300)
    b = httpx.Client(base_url=srv.base, headers={"Authorization": "Bearer B"}, timeout=300)
    for c, ns in ((a, "heavy"), (b, "light")):
        c.post("/v1/memories/batch", params={"namespace": ns}, json={"memories": [
            {"content": f"{rng.choice(NAMES)} and {rng.choice(NAMES)}: "
             + " ".join(rng.sample(WORDS, 6)), "memory_type": "semantic"}
            for _ in range(30)]}).raise_for_status()

    def small() -> tuple[float, int]:
        t = time.perf_counter()
        r = b.post("/v1/search", params={"namespace": "light"},
                   json={"query": "where is the violin"})
        return time.perf_counter() - t, r.status_code

    alone = statistics.median(small()[0] for _ in range(3))
    t = time.perf_counter()
    a.post("/v1/search", params={"namespace": "heavy"}, json={"query": heavy(rng)})
    heavy_alone = time.perf_counter() - t
    statuses: list[int] = []
    latencies: list[float] = []
    barrier = threading.Barrier(8)

    def burst(k: int) -> None:
        with httpx.Client(base_url=srv.base, headers={"Authorization": "Bearer A"},
                          timeout=300) as c:
            barrier.wait()
            t = time.perf_counter()
            r = c.post("/v1/search", params={"namespace": "heavy"},
                       json={"query": heavy(random.Random(k))})
            statuses.append(r.status_code)
            latencies.append(time.perf_counter() - t)

    threads = [threading.Thread(target=burst, args=(k,)) for k in range(8)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    time.sleep(0.05)
    during = [small() for _ in range(3)]
    for th in threads:
        th.join()
    return {"small_alone_s": round(alone, 3), "heavy_alone_s": round(heavy_alone, 3),
            "burst_total_s": round(time.perf_counter() - t0, 2),
            "burst_statuses": sorted(statuses), "burst_max_s": round(max(latencies), 2),
            "small_during_s": [round(d, 3) for d, _ in during],
            "small_during_status": [s for _, s in during]}


def main() -> None:
    keys = {KEY: ["*"], "A": ["heavy"], "B": ["light"]}
    srv = LiveServer(Path(tempfile.mkdtemp()) / "data",
                     env={"HELLO_MEMORY__API__API_KEYS": json.dumps(keys)})
    srv.start()
    try:
        print(json.dumps(measure(srv)))
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
