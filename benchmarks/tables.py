"""The BENCHMARKS.md section written by ``benchmarks.run`` (tables from one run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _f(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def _floor(r: dict[str, Any], key: str = "floor") -> dict[str, Any]:
    return dict(r.get(key) or {})


def _pair(x: float | None, y: float | None) -> str:
    return f"{_f(x)} / {_f(y)}"


def _link(p: Path) -> str:
    try:
        return f"[{p.name}]({p.relative_to(ROOT).as_posix()})"
    except ValueError:  # a results directory outside the checkout (--results)
        return f"[{p.name}]({p.as_posix()})"


def render(meta: dict[str, Any], rows: list[dict[str, Any]], peer: dict[str, Any] | None,
           pngs: list[Path]) -> str:
    if meta.get("argv") is not None:  # the command as run (a partial run says so)
        cmd = " ".join(["python -m benchmarks.run", *meta["argv"]])
    else:
        cmd = "make bench-quick" if meta["quick"] else "make bench"
    lines = [
        "## Ingest, search and footprint next to the raw stack and a peer", "",
        f"Produced by `{cmd}`" +
        f" on {meta['date']} in {meta['minutes']:.0f} min, {meta['cores']} cores, "
        f"{meta['versions']}. Model all-MiniLM-L6-v2 on the CPU, batch {meta['batch']}. "
        f"Machine load at start: {meta['load_start']}; at the end: {meta['load_end']} (the "
        "machine is shared: compare the ratios, measured side by side in one process; "
        "absolute numbers move with the load). Raw stack = the same loaded model's encode "
        f"(the default model runs on {meta.get('engine', 'torch (`embedding/bert.py`)')}) "
        "+ embedded qdrant-client "
        "(local mode, one collection, no filter). hello-memory = `MemoryManager` on its "
        "embedded defaults (SQLite records + outbox, Qdrant Edge vectors, SQLite graph), "
        "ingest through `add_many` in calls of at most "
        f"{meta.get('max_batch', 1000)} memories (`limits.max_batch`), the raw stack "
        "ingesting the same slices in turn with them. Synthetic corpus "
        "with a fixed seed, 20% Chinese. Floor = one query embedding plus a brute-force "
        "numpy top-5 over the same vectors the store holds, measured in the same run; "
        "top-k alone = the same without the embedding.", "",
        *([" ".join(f"The N = {r['n']} row comes from an earlier run ({r['measured']['date']}, "
                    f"{r['measured']['load_start']})." for r in rows
                    if r.get("measured", {}).get("load_start") not in (None, meta["load_start"]))
           + " Each row's ratios are from one run.", ""]
          if any(r.get("measured", {}).get("load_start") not in (None, meta["load_start"])
                 for r in rows) else []),
        "### Ingest", "",
        "| N | raw items/s | hello-memory items/s | ratio (target >= 0.9 at 10k) | note |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        hm = r["n"] / r["hm_ingest_s"]
        if r.get("raw_ingest_s") is None:  # N >= RAW_BELOW: hello-memory alone
            lines.append(f"| {r['n']} | n/a | {hm:.0f} | n/a | cached embeddings: store "
                         "path only; raw stack not run at this N |")
            continue
        raw = r["n"] / r["raw_ingest_s"]
        note = ("cached embeddings on both sides: store path only" if r["cached"]
                else "embedding included on both sides")
        lines.append(f"| {r['n']} | {raw:.0f} | {hm:.0f} | {hm / raw:.2f} | {note} |")
    curves = [r for r in rows if len(r.get("ingest_curve") or []) > 1]
    for r in curves:
        steps = []
        curve = r["ingest_curve"]
        for (n0, t0), (n1, t1) in zip([(0, 0.0), *curve[:-1]], curve, strict=True):
            steps.append(f"{n0 // 1000}k-{n1 // 1000}k {(n1 - n0) / max(t1 - t0, 1e-9):.0f}/s")
        lines += ["", f"Store path at N = {r['n']}, memories/s by stretch of the ingest: "
                  + ", ".join(steps) + "."]
    if meta["quick"]:
        lines += ["", "Quick mode: no 100k row (`make bench` adds it, with the 100k corpus "
                  "embedded once into `benchmarks/.cache`)."]
    lines += [
        "", "### Search (top 5, p50 / p95 ms)", "",
        "Query embedding is included everywhere except in the \"top-k alone\" and "
        "\"fused, no embedding\" columns (query vectors computed beforehand: the 100k "
        "target's measure). Dense = `MemoryManager.search(q, [\"episodic\"], "
        "recipe=\"per-type\")`; fused = `MemoryManager.search(q)`, the one search, with "
        "every view (dense + BM25 + symbolic + graph, no LLM). Ratios are of p50s, to the "
        "floor of the same run. The fused column is each question's first asking through "
        "the one search (no warm-up: the record cache, the multilingual view's "
        "vectors and the per-namespace values are read on the way); \"fused, no "
        "embedding\" asks the same questions again. The one search's steady state, with "
        "the first asking apart, is in \"The one search against the per-type search\" "
        "(`python -m benchmarks.search_cost`).", "",
        "| N | floor | raw dense | hello-memory dense | dense / floor | fused | fused / floor "
        "(target <= 1.5 at 10k) | top-k alone | fused, no embedding (target p95 <= 50 at "
        "100k) | no embedding / top-k |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fl = _floor(r)
        lines.append(
            f"| {r['n']} | {_pair(fl.get('p50_ms'), fl.get('p95_ms'))} | "
            f"{_pair(r.get('raw_p50_ms'), r.get('raw_p95_ms'))} | "
            f"{_pair(r['dense_p50_ms'], r['dense_p95_ms'])} | "
            f"{_ratio(r['dense_p50_ms'], fl.get('p50_ms'))} | "
            f"{_pair(r.get('fused_p50_ms'), r.get('fused_p95_ms'))} | "
            f"{_ratio(r.get('fused_p50_ms'), fl.get('p50_ms'))} | "
            f"{_f(fl.get('topk_p50_ms'), 2)} / {_f(fl.get('topk_p95_ms'), 2)} | "
            f"{_pair(r.get('fused_noembed_p50_ms'), r.get('fused_noembed_p95_ms'))} | "
            f"{_ratio(r.get('fused_noembed_p50_ms'), fl.get('topk_p50_ms'))} |")
    graph = [r for r in rows if "optimize_s" in r]
    if graph:
        lines += [
            "", "### Search on the HNSW graph (`hello-memory jobs optimize`)", "",
            "The same store after `MemoryManager.optimize()` built the embedded engine's "
            "HNSW segments (`vector.hnsw`: m 16, payload_m 16, ef 128; segments and "
            "filters under 10 MB of vectors stay exact, so small N gets no graph). Recall = "
            "overlap of the store's top 10 ids with the exact ones (brute force in numpy over the "
            "stored memories' embeddings), same queries. Search p50 / "
            "p95 ms as above; the floor (brute force, same run) is the one of the table "
            "above. Since `vector.hnsw.auto_index` (default on, issue 27) the write path "
            "builds the graph itself once ~6,700 memories were written since the last "
            "build, so the table above already searches it for all but the latest writes; "
            "`optimize` here builds what is left, often nothing.", "",
            "| N | optimize s | graph built | floor | dense | fused | fused / floor | fused, "
            "no embedding (target p95 <= 50 at 100k) | no embedding / top-k | recall@10 vs "
            "exact | disk bytes per memory |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in graph:
            fl = _floor(r)
            lines.append(
                f"| {r['n']} | {r['optimize_s']:.1f} | "
                f"{'yes' if r['optimize_built'] else 'no (nothing left to build)'} | "
                f"{_pair(fl.get('p50_ms'), fl.get('p95_ms'))} | "
                f"{_pair(r['hnsw_dense_p50_ms'], r['hnsw_dense_p95_ms'])} | "
                f"{_pair(r.get('hnsw_fused_p50_ms'), r.get('hnsw_fused_p95_ms'))} | "
                f"{_ratio(r.get('hnsw_fused_p50_ms'), fl.get('p50_ms'))} | "
                f"{_pair(r.get('hnsw_fused_noembed_p50_ms'), r.get('hnsw_fused_noembed_p95_ms'))}"
                f" | {_ratio(r.get('hnsw_fused_noembed_p50_ms'), fl.get('topk_p50_ms'))} | "
                f"{r['hnsw_recall_at_10']:.3f} | {r['hnsw_disk_bytes_per_memory']:.0f} |")
        if len(graph) > 1:
            a, b = graph[-2], graph[-1]
            key, hkey = "fused_noembed_p50_ms", "hnsw_fused_noembed_p50_ms"
            lines += ["", f"Growth from N = {a['n']} to {b['n']} ({b['n'] / a['n']:.0f}x the "
                      "memories), fused search without query embedding, p50: exact "
                      f"{_ratio(b.get(key), a.get(key))}x, HNSW graph "
                      f"{_ratio(b.get(hkey), a.get(hkey))}x."]
    lines += [
        "", "### Other namespaces' data", "",
        "Dense search p50 / p95 ms in a small namespace (1,000 memories; 40 in a smoke "
        "run), before and after N memories of another namespace are added to the same "
        "store; floor = one query embedding + brute-force top-5 over that namespace's "
        "vectors, same run.", "",
        "| N others | namespace size | floor | before | after | after / before p50 | after / "
        "floor p50 |", "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fl = _floor(r, "solo_floor")
        lines.append(f"| {r['n']} | {r.get('solo_n', 1000)} | "
                     f"{_pair(fl.get('p50_ms'), fl.get('p95_ms'))} | "
                     f"{_pair(r['solo_before_p50_ms'], r['solo_before_p95_ms'])} | "
                     f"{_pair(r['solo_after_p50_ms'], r['solo_after_p95_ms'])} | "
                     f"{_ratio(r['solo_after_p50_ms'], r['solo_before_p50_ms'])} | "
                     f"{_ratio(r['solo_after_p50_ms'], fl.get('p50_ms'))} |")
    lines += [
        "", "### Footprint (a fresh process opening the store)", "",
        "Cold start = import hello-memory + open the store + first search; the embedder's "
        "import and model load (ONNX Runtime or torch, and the weights) are reported apart, "
        "as the "
        "target excludes them.", "",
        "| memories | cold start s (target <= 3) | import / open / first search s | embedder "
        "import + load s | RSS after open MB | RSS after searches MB (searches) | disk bytes "
        "per memory |", "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fp = r["footprint"]
        lines.append(
            f"| {r['n'] + r.get('solo_n', 1000)} | {fp['cold_start_s']:.2f} | "
            f"{fp['import_s']:.2f} / "
            f"{fp['open_s']:.2f} / {fp['first_search_s']:.2f} | "
            f"{fp['embedder_import_load_s']:.1f} | {fp['rss_open_mb']:.0f} | "
            f"{fp['rss_after_searches_mb']:.0f} ({int(fp['searches'])}) | "
            f"{r['disk_bytes_per_memory']:.0f} |")
    if peer is not None:
        lines += [
            "", "### Peer: LoCoMo dev turns", "",
            f"{peer['conversations']} conversation(s), one namespace / user each; search = top "
            f"5 for the {peer['questions']} questions (categories 1-4) of the first "
            "conversation, with only it loaded and then with every conversation loaded. "
            "hello-memory: `MemoryManager.search(q, [\"episodic\"], 5)`, the one search "
            "(dense, BM25, symbolic and graph views fused, no LLM); mem0 and the raw stack "
            "search the dense vector alone. "
            "mem0: `add(..., infer=False)` per session, embedded Qdrant, the same local "
            "MiniLM through its huggingface embedder, offline, in its own venv "
            "(`.venv-peer`).", "",
            "| system | turns | ingest turns/s | search p50 / p95 ms (one conversation) | "
            "search p50 / p95 ms (all loaded) | p50 / floor (one / all) |",
            "|---|---|---|---|---|---|",
        ]
        fl = _floor(peer)
        for p in peer["rows"]:
            if "skipped" in p:
                lines.append(f"| {p['system']} | skipped: {p['skipped']} | | | | |")
                continue
            lines.append(
                f"| {p['system']} | {p['turns']} | {p['ingest_per_s']:.1f} | "
                f"{p['search_one_p50_ms']:.1f} / {p['search_one_p95_ms']:.1f} | "
                f"{p['search_all_p50_ms']:.1f} / {p['search_all_p95_ms']:.1f} | "
                f"{_ratio(p['search_one_p50_ms'], fl.get('p50_ms'))} / "
                f"{_ratio(p['search_all_p50_ms'], fl.get('p50_ms'))} |")
        if fl:
            lines.append(
                f"| floor: query embedding + numpy top-5 over the first conversation's "
                f"{int(fl['vectors'])} turns (every system searches that conversation "
                f"alone) | | | {_pair(fl['p50_ms'], fl['p95_ms'])} | "
                f"{_pair(fl['p50_ms'], fl['p95_ms'])} | 1.00 / 1.00 |")
    if pngs:
        lines += ["", "Plots: " + ", ".join(_link(p) for p in pngs) + "."]
    lines += ["", "Where the embedded path is brute force and when to move to the Qdrant "
              "server: [docs/PERFORMANCE.md](docs/PERFORMANCE.md).", ""]
    return "\n".join(lines)
