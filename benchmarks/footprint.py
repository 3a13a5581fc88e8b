"""Footprint of an existing store, measured in a fresh process (run by benchmarks.run).

    python -m benchmarks.footprint DATA_DIR NAMESPACE --searches 1000

Prints one JSON object: the embedder's import + model load (excluded from cold start,
as the issue's target says), hello-memory's import, open, first search, RSS after open
and after ``--searches`` searches, and the data directory's size on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")  # pragma: no cover - non-Linux


def disk_bytes(path: Path) -> int:
    # Allocated blocks, not st_size: the WAL files are sparse (32 MiB apparent each).
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir", type=Path)
    ap.add_argument("namespace")
    ap.add_argument("--searches", type=int, default=1000)
    args = ap.parse_args()
    out: dict[str, float] = {"rss_start_mb": rss_mb()}

    t0 = time.perf_counter()
    from benchmarks.corpus import queries
    from hello_memory.config import load_settings
    from hello_memory.embedding import SentenceTransformerEmbedder
    from hello_memory.factory import open_stores
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.text.entities import RuleExtractor

    out["import_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    embedder = SentenceTransformerEmbedder()
    embedder._ensure_loaded()  # the engine + the weights (embedding/onnx_bert.py): not cold start
    out["embedder_import_load_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    settings = load_settings(environ={}, data_dir=args.data_dir)
    mm = MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor())
    out["open_s"] = time.perf_counter() - t0
    out["rss_open_mb"] = rss_mb()
    qs = queries(max(args.searches, 1), seed=23)
    t0 = time.perf_counter()
    mm.search(qs[0], ["episodic"], 5, namespace=args.namespace)
    out["first_search_s"] = time.perf_counter() - t0
    out["cold_start_s"] = out["import_s"] + out["open_s"] + out["first_search_s"]
    for q in qs[1:]:
        mm.search(q, ["episodic"], 5, namespace=args.namespace)
    out["rss_after_searches_mb"] = rss_mb()
    out["searches"] = float(args.searches)
    mm.close()
    out["disk_bytes"] = float(disk_bytes(args.data_dir))
    print(json.dumps(out))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
