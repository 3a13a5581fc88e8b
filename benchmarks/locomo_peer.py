"""The peer comparison on LoCoMo dev turns: hello-memory, the raw stack and mem0, in one
run, on the same conversations (every conversation is its own namespace / user).

hello-memory searches as its users do: ``MemoryManager.search(q, ["episodic"], 5)``, the
one search (dense, BM25, symbolic and graph views fused; no LLM) over the turns, which
are episodic; mem0 and the raw stack search by the dense vector alone.

Search latency is measured on the first conversation's questions (categories 1-4) twice:
with only that conversation loaded, then with all of them loaded: a memory layer whose
filtered search scans every point slows down as other users' data grows.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
import uuid
from datetime import timezone
from pathlib import Path
from typing import Any

from benchmarks.corpus import locomo_questions, locomo_samples

ROOT = Path(__file__).resolve().parents[1]
PEER_PYTHON = ROOT / ".venv-peer" / "bin" / "python"


def _workload(n_convs: int) -> list[dict[str, Any]]:
    from benchmarks.locomo import turns

    out = []
    for sample in locomo_samples()[:n_convs]:
        rows = turns(sample)
        for row in rows:
            row["event_time"] = row["event_time"].astimezone(timezone.utc)
        sessions: dict[str, list[str]] = {}
        for row in rows:
            sessions.setdefault(row["session_id"], []).append(row["content"])
        out.append({"id": sample["sample_id"], "rows": rows, "sessions": list(sessions.values()),
                    "questions": locomo_questions(sample)})
    return out


def _hello_memory(convs: list[dict[str, Any]], batch: int) -> dict[str, Any]:
    from benchmarks.run import lat_ms, open_manager
    from hello_memory.embedding import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(batch_size=batch)
    embedder.embed(["warm up"])
    qs = convs[0]["questions"]
    with tempfile.TemporaryDirectory() as tmp:
        mm = open_manager(Path(tmp), embedder)
        t0 = time.perf_counter()
        mm.add_many(convs[0]["rows"])
        ingest = time.perf_counter() - t0
        one = lat_ms(lambda q: mm.search(q, ["episodic"], 5, namespace=convs[0]["id"]), qs)
        t0 = time.perf_counter()
        for conv in convs[1:]:
            mm.add_many(conv["rows"])
        ingest += time.perf_counter() - t0
        every = lat_ms(lambda q: mm.search(q, ["episodic"], 5, namespace=convs[0]["id"]), qs)
        mm.close()
    turns = sum(len(c["rows"]) for c in convs)
    return {"system": "hello-memory (the one search, episodic)", "turns": turns,
            "ingest_per_s": turns / ingest,
            "search_one_p50_ms": one[0], "search_one_p95_ms": one[1],
            "search_all_p50_ms": every[0], "search_all_p95_ms": every[1]}


def _raw(convs: list[dict[str, Any]], batch: int) -> dict[str, Any]:
    """encode + qdrant-client local mode, one collection per conversation (no filter)."""
    from qdrant_client import QdrantClient, models

    from benchmarks.run import lat_ms
    from hello_memory.embedding import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder(batch_size=batch)._ensure_loaded()
    model.encode(["warm up"])
    with tempfile.TemporaryDirectory() as tmp:
        client = QdrantClient(path=tmp)
        elapsed = 0.0
        lat: dict[str, tuple[float, float]] = {}
        for i, conv in enumerate(convs):
            t0 = time.perf_counter()
            texts = [r["content"] for r in conv["rows"]]
            vecs = model.encode(texts, batch_size=batch, normalize_embeddings=True)
            client.create_collection(conv["id"], vectors_config=models.VectorParams(
                size=vecs.shape[1], distance=models.Distance.COSINE))
            client.upsert(conv["id"], [models.PointStruct(id=str(uuid.uuid4()), vector=v.tolist(),
                                                          payload={"text": t})
                                       for t, v in zip(texts, vecs, strict=True)], wait=True)
            elapsed += time.perf_counter() - t0

            def query(q: str) -> None:
                v = model.encode([q], normalize_embeddings=True)[0]
                client.query_points(convs[0]["id"], v.tolist(), limit=5)

            if i == 0:
                lat["one"] = lat_ms(query, convs[0]["questions"])
        lat["all"] = lat_ms(query, convs[0]["questions"])
        client.close()
    turns = sum(len(c["rows"]) for c in convs)
    return {"system": "raw stack (encode + qdrant-client)", "turns": turns,
            "ingest_per_s": turns / elapsed,
            "search_one_p50_ms": lat["one"][0], "search_one_p95_ms": lat["one"][1],
            "search_all_p50_ms": lat["all"][0], "search_all_p95_ms": lat["all"][1]}


def _mem0(convs: list[dict[str, Any]]) -> dict[str, Any]:
    if not PEER_PYTHON.exists():
        reason = f"{PEER_PYTHON} missing: run `make bench-peer-venv`"
        print(f"  mem0 skipped: {reason}", flush=True)
        return {"system": "mem0", "skipped": reason}
    with tempfile.TemporaryDirectory() as tmp:
        work, out = Path(tmp) / "work.json", Path(tmp) / "out.json"
        work.write_text(json.dumps({"conversations": [
            {k: c[k] for k in ("id", "sessions", "questions")} for c in convs]}))
        proc = subprocess.run([str(PEER_PYTHON), str(ROOT / "benchmarks" / "peer_mem0.py"),
                               str(work), str(out)], capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0 or not out.exists():
            reason = f"mem0 run failed: {proc.stderr.strip().splitlines()[-1:]}"
            print(f"  mem0 skipped: {reason}", flush=True)
            return {"system": "mem0", "skipped": reason}
        return dict(json.loads(out.read_text()))


def run(n_convs: int, batch: int) -> dict[str, Any]:
    convs = _workload(n_convs)
    print(f"LoCoMo peer run: {len(convs)} conversations, "
          f"{sum(len(c['rows']) for c in convs)} turns", flush=True)
    rows = [_raw(convs, batch), _hello_memory(convs, batch), _mem0(convs)]
    for r in rows:
        print("  ", json.dumps(r), flush=True)
    return {"conversations": len(convs), "questions": len(convs[0]["questions"]), "rows": rows}
