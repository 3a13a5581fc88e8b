"""The embedded vector backends side by side, through the ``VectorStore`` protocol.

    python -m benchmarks.backends [--n 10000 100000] [--local-max 10000] [--queries 50]

Qdrant Edge (``QdrantEdgeVectorStore``) against qdrant-client's local mode
(``QdrantVectorStore(path=)``), with the payload hello-memory writes: ten namespaces of
equal size, two memory types, a status. Points are synthetic unit vectors (384-d): exact
search costs the same whatever the values, and no memory layer stores them. Printed:
upsert throughput and p50 / p95 search ms for no extra filter, the namespace filter, and
namespace + type + status (what ``MemoryManager.search`` sends).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from typing import Any

import numpy as np

from benchmarks.run import pct
from hello_memory.ports.vector import PayloadIndex, VectorFilter

SPEC_FIELDS: dict[str, PayloadIndex] = {"memory_type": "keyword", "status": "keyword"}


def run(kind: str, n: int, n_queries: int) -> dict[str, Any]:
    from hello_memory.stores.vector import CollectionSpec, QdrantEdgeVectorStore, QdrantVectorStore
    from hello_memory.types import VectorPoint

    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((n, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with tempfile.TemporaryDirectory() as tmp:
        store: Any = (QdrantEdgeVectorStore(path=tmp) if kind == "edge"
                      else QdrantVectorStore(path=tmp))
        store.open()
        store.ensure_collection(CollectionSpec("m", {"dense": 384}, payload_indexes=SPEC_FIELDS))
        t0 = time.perf_counter()
        for s in range(0, n, 2048):
            store.upsert("m", [VectorPoint(str(uuid.uuid4()), {"dense": vecs[i].tolist()}, {
                "namespace": f"ns{i % 10}", "memory_type": ("episodic", "semantic")[i % 2],
                "status": "active"}) for i in range(s, min(n, s + 2048))])
        out: dict[str, Any] = {"backend": kind, "n": n,
                               "upsert_per_s": n / (time.perf_counter() - t0)}
        for label, flt in (("namespace", None),
                           ("namespace+type+status",
                            VectorFilter.where(memory_type="episodic", status="active"))):
            lat = []
            for j in range(n_queries):
                t0 = time.perf_counter()
                store.nearest("m", vecs[j].tolist(), namespace="ns3", limit=20, filters=flt)
                lat.append(1000 * (time.perf_counter() - t0))
            out[label] = (statistics.median(lat), pct(lat, 0.95))
        store.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--local-max", type=int, default=10_000,
                    help="largest N for qdrant-client local mode (it scans in Python)")
    ap.add_argument("--queries", type=int, default=50)
    args = ap.parse_args()
    print("| backend | N | upsert points/s | namespace p50 / p95 ms | "
          "namespace+type+status p50 / p95 ms |\n|---|---|---|---|---|")
    for n in args.n:
        for kind in ("edge", "local"):
            if kind == "local" and n > args.local_max:
                continue
            r = run(kind, n, args.queries)
            a, b = r["namespace"], r["namespace+type+status"]
            print(f"| {kind} | {n} | {r['upsert_per_s']:.0f} | {a[0]:.1f} / {a[1]:.1f} | "
                  f"{b[0]:.1f} / {b[1]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
