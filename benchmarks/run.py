"""Ingest and search benchmarks: hello-memory next to the raw stack, in one run.

    python -m benchmarks.run [--n 1000] [--queries 100] [--out BENCHMARKS.md]

Raw stack = sentence-transformers ``encode`` (same model, same batch size) + an embedded
qdrant-client collection (``path=``), i.e. the least any memory layer on these parts
must do. hello-memory = ``MemoryManager.add_many`` / ``search`` on its embedded defaults
(SQLite records + outbox, embedded Qdrant, SQLite graph). Both sides run in this process,
on the same synthetic corpus (fixed seed), so the ratios are comparable even on a noisy
machine; absolute numbers are not.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from benchmarks.report import write_section

NAMES = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Hana", "Ivan", "Judy"]
PLACES = ["Berlin", "Paris", "Tokyo", "Lisbon", "Hangzhou", "Toronto", "Nairobi", "Lima"]
THINGS = ["green tea", "jazz records", "mountain bikes", "sushi", "board games", "kayaks",
          "old maps", "espresso", "sci-fi novels", "houseplants"]
EVENTS = ["moved to {p}", "flew to {p} for a conference", "bought {t} in {p}",
          "met {o} in {p}", "started learning about {t}", "lost a bag of {t} in {p}",
          "hosted a dinner for {o}", "signed a lease in {p}"]
ZH = ["{n}上周在{p}买了{t}。", "{n}喜欢{t}，预算在一千元以内。", "{n}和{o}在{p}讨论了项目进度。"]


def corpus(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        n1, n2 = rng.sample(NAMES, 2)
        p, t = rng.choice(PLACES), rng.choice(THINGS)
        if i % 5 == 4:
            out.append(rng.choice(ZH).format(n=n1, o=n2, p=p, t=t) + f" #{i}")
        else:
            ev = rng.choice(EVENTS).format(p=p, t=t, o=n2)
            out.append(f"{n1} {ev} (note {i}).")
    return out


def queries(k: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    forms = ["Where did {n} move?", "What does {n} like?", "Who went to {p}?",
             "{n}在{p}做了什么？", "Tell me about {t}"]
    return [rng.choice(forms).format(n=rng.choice(NAMES), p=rng.choice(PLACES),
                                     t=rng.choice(THINGS)) for _ in range(k)]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench(n: int, n_queries: int, batch: int) -> dict[str, float]:
    from qdrant_client import QdrantClient, models

    from hello_memory.config import load_settings
    from hello_memory.embedding import SentenceTransformerEmbedder
    from hello_memory.factory import open_stores
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.memory.working import WorkingMemory
    from hello_memory.text.entities import RuleExtractor

    texts, qs = corpus(n), queries(n_queries)
    embedder = SentenceTransformerEmbedder(batch_size=batch)
    model = embedder._ensure_loaded()  # the same loaded model serves both sides
    embedder.embed(["warm up"])
    now = datetime.now(timezone.utc)
    res: dict[str, float] = {"n": n}

    with tempfile.TemporaryDirectory() as tmp:
        # raw: encode + embedded qdrant upsert
        client = QdrantClient(path=str(Path(tmp) / "raw"))
        client.create_collection("raw", vectors_config=models.VectorParams(
            size=embedder.dimension, distance=models.Distance.COSINE))

        def raw_ingest() -> None:
            vecs = model.encode(texts, batch_size=batch, normalize_embeddings=True)
            pts = [models.PointStruct(id=str(uuid.uuid4()), vector=v.tolist(),
                                      payload={"namespace": "b", "text": t})
                   for t, v in zip(texts, vecs, strict=True)]
            for i in range(0, len(pts), 256):
                client.upsert("raw", pts[i:i + 256], wait=True)

        res["raw_ingest_s"] = timed(raw_ingest)
        raw_lat = []
        for q in qs:
            def raw_q(q: str = q) -> None:
                v = model.encode([q], normalize_embeddings=True)[0]
                client.query_points("raw", v.tolist(), limit=5)
            raw_lat.append(timed(raw_q))
        client.close()

        settings = load_settings(environ={}, data_dir=Path(tmp) / "hm")
        mm = MemoryManager(open_stores(settings, embedder=embedder), working=WorkingMemory(),
                           extractor=RuleExtractor())
        entries = [{"content": t, "memory_type": "episodic", "namespace": "b",
                    "importance": 0.5, "event_time": now - timedelta(minutes=i)}
                   for i, t in enumerate(texts)]
        res["hm_ingest_s"] = timed(lambda: mm.add_many(entries))
        sem = [{**e, "memory_type": "semantic", "namespace": "s"} for e in entries]
        res["hm_semantic_ingest_s"] = timed(lambda: mm.add_many(sem))
        hm_lat, hm_all = [], []
        for q in qs:
            hm_lat.append(timed(lambda q=q: mm.search(q, ["episodic"], 5, namespace="b")))
            hm_all.append(timed(lambda q=q: mm.search(q, None, 5, namespace="s")))
        mm.close()

    for name, lat in (("raw", raw_lat), ("hm_episodic", hm_lat), ("hm_all_types", hm_all)):
        res[f"{name}_p50_ms"] = 1000 * statistics.median(lat)
        res[f"{name}_p95_ms"] = 1000 * pct(lat, 0.95)
    return res


def versions() -> str:
    from importlib.metadata import version

    import qdrant_client  # noqa: F401
    import sentence_transformers
    import sqlalchemy
    import torch

    return (f"Python {platform.python_version()}, torch {torch.__version__}, "
            f"sentence-transformers {sentence_transformers.__version__}, "
            f"qdrant-client {version('qdrant-client')}, SQLAlchemy {sqlalchemy.__version__}")


def report(rows: list[dict[str, float]], batch: int) -> str:
    lines = [
        "## Ingest and search next to the raw stack", "",
        f"Produced by `make bench` (`python -m benchmarks.run`) on {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} cores, {versions()}. Model all-MiniLM-L6-v2 on the CPU, batch "
        f"{batch}. Each row is one run in one process: hello-memory next to the raw stack "
        "(sentence-transformers encode + embedded qdrant-client upsert / query) on the same "
        "synthetic corpus (fixed seed, 20% Chinese). Compare the ratios; absolute numbers "
        "move with the machine's load.", "",
        "### Ingest", "",
        "| N | raw items/s | hello-memory episodic items/s | ratio | semantic (with entity "
        "graph) items/s | ratio |", "|---|---|---|---|---|---|",
    ]
    for r in rows:
        raw, hm, sem = (r["n"] / r[k] for k in ("raw_ingest_s", "hm_ingest_s",
                                                  "hm_semantic_ingest_s"))
        lines.append(f"| {int(r['n'])} | {raw:.0f} | {hm:.0f} | {hm / raw:.2f} | {sem:.0f} | "
                     f"{sem / raw:.2f} |")
    lines += ["", "### Search (top 5, query embedding included)", "",
              "| N | raw p50 / p95 ms | episodic p50 / p95 ms | ratio p95 | all types "
              "(working + episodic + semantic with graph) p50 / p95 ms | ratio p95 |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {int(r['n'])} | {r['raw_p50_ms']:.1f} / {r['raw_p95_ms']:.1f} | "
            f"{r['hm_episodic_p50_ms']:.1f} / {r['hm_episodic_p95_ms']:.1f} | "
            f"{r['hm_episodic_p95_ms'] / r['raw_p95_ms']:.2f} | "
            f"{r['hm_all_types_p50_ms']:.1f} / {r['hm_all_types_p95_ms']:.1f} | "
            f"{r['hm_all_types_p95_ms'] / r['raw_p95_ms']:.2f} |")
    lines += ["", "Embedded Qdrant (local mode) searches by brute force: its cost grows "
              "linearly with N. Past a few tens of thousands of memories per collection, "
              "point `vector.url` at a Qdrant server (HNSW index).", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"))
    args = ap.parse_args()
    rows = []
    for n in args.n:
        print(f"N={n} ...", flush=True)
        rows.append(bench(n, args.queries, args.batch))
        print(rows[-1], flush=True)
    write_section(args.out, "ingest-search", report(rows, args.batch))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
