"""Matplotlib PNGs for BENCHMARKS.md: latency and throughput vs N, and the peer run."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def draw(rows: list[dict[str, Any]], peer: dict[str, Any] | None, out: Path) -> list[Path]:
    """Write the plots into ``out``; returns their paths (none without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing (pip install 'hello-memory[bench]'): no plots")
        return []
    out.mkdir(parents=True, exist_ok=True)
    ns = [r["n"] for r in rows]
    paths = []

    fig, ax = plt.subplots(figsize=(6, 4))
    for key, label in (("raw", "raw dense (qdrant-client local)"),
                       ("dense", "hello-memory dense"), ("fused", "hello-memory fused"),
                       ("fused_noembed", "hello-memory fused, no query embedding"),
                       ("hnsw_dense", "hello-memory dense, HNSW graph"),
                       ("hnsw_fused_noembed", "hello-memory fused, HNSW, no query embedding")):
        have = [r for r in rows if r.get(f"{key}_p95_ms") is not None]  # raw: not at 1M
        if have:
            ax.plot([r["n"] for r in have], [float(r[f"{key}_p95_ms"]) for r in have],
                    marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("memories (N)")
    ax.set_ylabel("search p95 ms (top 5)")
    ax.set_title("Search latency vs N")
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(out / "latency_vs_n.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    raw = [r for r in rows if r.get("raw_ingest_s")]  # not run at 1M (benchmarks/run.py)
    ax.plot([r["n"] for r in raw], [r["n"] / r["raw_ingest_s"] for r in raw], marker="o",
            label="raw stack")
    ax.plot(ns, [r["n"] / r["hm_ingest_s"] for r in rows], marker="o", label="hello-memory")
    ax.set_xscale("log")
    ax.set_xlabel("memories (N); from 100k on cached embeddings (store path)")
    ax.set_ylabel("ingest items/s")
    ax.set_title("Ingest throughput vs N")
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(out / "throughput_vs_n.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    done = [p for p in (peer or {}).get("rows", []) if "skipped" not in p]
    if done:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 4))
        names = [p["system"].split(" (")[0] for p in done]
        a1.bar(names, [p["ingest_per_s"] for p in done])
        a1.set_ylabel("ingest turns/s")
        width = 0.4
        xs = range(len(done))
        a2.bar([x - width / 2 for x in xs], [p["search_one_p95_ms"] for p in done], width,
               label="one conversation loaded")
        a2.bar([x + width / 2 for x in xs], [p["search_all_p95_ms"] for p in done], width,
               label="all loaded")
        a2.set_xticks(list(xs), names)
        a2.set_ylabel("search p95 ms")
        a2.legend(fontsize=8)
        for a in (a1, a2):
            a.tick_params(axis="x", labelsize=8)
        fig.suptitle("LoCoMo dev turns: hello-memory, raw stack, mem0")
        fig.tight_layout()
        paths.append(out / "peer_locomo.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    return paths
