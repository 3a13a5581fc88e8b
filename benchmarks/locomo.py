"""LoCoMo retrieval benchmark (no LLM), per ../shared/data/locomo/README.md.

    python -m benchmarks.locomo [PATH.json] [--modes dense bm25 fused] [--json OUT]

Every conversation is its own namespace; one episodic memory per dialog turn
("{speaker}: {text}" + the shared image's caption), event time = the session's date,
the speakers as ``metadata["persons"]``. Each question of categories 1-4 is searched
with the question alone through the public API; evidence recall@k, hit@k and MRR are
reported overall and per category, with ingest throughput and search latency measured in
the same run. The protocol gives no importance, so every turn is stored with 0.5 (the
heuristic would otherwise reorder turns by their wording).

Modes: ``dense`` = ``MemoryManager.search`` over episodic memory (the default search);
``bm25`` = the BM25 sparse view (``stores.lexical_search``); ``fused`` = reciprocal-rank
fusion (k = 60) of the two lists.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.report import write_section

DEFAULT_DATA = (Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"
                / "locomo_dev.json")
KS = (1, 5, 10, 20)
RRF_K = 60


def session_time(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    conv = sample["conversation"]
    persons = [conv["speaker_a"], conv["speaker_b"]]
    out = []
    n = 1
    while f"session_{n}" in conv:
        when = session_time(conv[f"session_{n}_date_time"])
        for t in conv[f"session_{n}"]:
            text = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [shared an image: {t['blip_caption']}]"
            out.append({"content": text, "memory_type": "episodic", "importance": 0.5,
                        "namespace": sample["sample_id"], "event_time": when,
                        "session_id": f"session_{n}",
                        "metadata": {"dia_id": t["dia_id"], "persons": persons,
                                     "speaker": t["speaker"]}})
        n += 1
    return out


def evidence_ids(raw: list[str], known: set[str]) -> set[str]:
    out = set()
    for chunk in raw:
        for part in re.split(r"[;\s]+", chunk):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m and f"D{m.group(1)}:{m.group(2)}" in known:
                out.add(f"D{m.group(1)}:{m.group(2)}")
    return out


def rrf(*rankings: list[str]) -> list[str]:
    score: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        for rank, key in enumerate(ranking):
            score[key] += 1.0 / (RRF_K + rank + 1)
    return sorted(score, key=lambda k: -score[k])


def run(path: Path, modes: list[str], limit: int | None) -> dict[str, Any]:
    from hello_memory.config import load_settings
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.text.entities import RuleExtractor

    samples = json.loads(path.read_text(encoding="utf-8"))[:limit]
    result: dict[str, Any] = {"data": str(path), "conversations": len(samples), "modes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(environ={}, data_dir=Path(tmp))
        from hello_memory.factory import open_stores

        mm = MemoryManager(open_stores(settings), extractor=RuleExtractor())
        mm.stores.embedder.embed(["warm up"])
        n_turns, t0 = 0, time.perf_counter()
        id_of: dict[str, dict[str, str]] = {}
        for s in samples:
            entries = turns(s)
            items = mm.add_many(entries)
            id_of[s["sample_id"]] = {i.id: i.metadata["dia_id"] for i in items}
            n_turns += len(items)
        result["ingest_turns_per_s"] = n_turns / (time.perf_counter() - t0)
        result["turns"] = n_turns

        def dense(ns: str, q: str) -> list[str]:
            return [h.id for h in mm.search(q, ["episodic"], 20, namespace=ns)]

        def bm25(ns: str, q: str) -> list[str]:
            return [h.item.id for h in mm.stores.lexical_search(ns, q, limit=20)]

        def fused(ns: str, q: str) -> list[str]:
            return rrf(dense(ns, q), bm25(ns, q))[:20]

        searchers: dict[str, Callable[[str, str], list[str]]] = {
            "dense": dense, "bm25": bm25, "fused": fused}
        for mode in modes:
            result["modes"][mode] = evaluate(samples, id_of, searchers[mode])
        mm.close()
    return result


def evaluate(samples: list[dict[str, Any]], id_of: dict[str, dict[str, str]],
             search: Callable[[str, str], list[str]]) -> dict[str, Any]:
    per_cat: dict[int, list[dict[str, float]]] = defaultdict(list)
    latencies = []
    for s in samples:
        ns, dia = s["sample_id"], id_of[s["sample_id"]]
        known = set(dia.values())
        for qa in s["qa"]:
            if qa.get("category") == 5:
                continue
            gold = evidence_ids([str(e) for e in qa.get("evidence", [])], known)
            if not gold:
                continue
            t0 = time.perf_counter()
            ranked = [dia[i] for i in search(ns, qa["question"]) if i in dia]
            latencies.append(time.perf_counter() - t0)
            row = {f"recall@{k}": len(gold & set(ranked[:k])) / len(gold) for k in KS}
            row["hit@5"] = float(bool(gold & set(ranked[:5])))
            first = next((r for r, d in enumerate(ranked) if d in gold), None)
            row["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
            per_cat[int(qa["category"])].append(row)
    rows = [r for rs in per_cat.values() for r in rs]

    def mean(rs: list[dict[str, float]]) -> dict[str, float]:
        return {k: round(statistics.fmean(r[k] for r in rs), 4) for k in rs[0]}

    lat = sorted(latencies)
    return {"questions": len(rows), "overall": mean(rows),
            "per_category": {c: {"n": len(rs), **mean(rs)} for c, rs in sorted(per_cat.items())},
            "search_p50_ms": round(1000 * statistics.median(lat), 1),
            "search_p95_ms": round(1000 * lat[int(0.95 * (len(lat) - 1))], 1)}


def table(result: dict[str, Any]) -> str:
    lines = [f"LoCoMo retrieval, {result['conversations']} conversations, {result['turns']} turns, "
             f"ingest {result['ingest_turns_per_s']:.0f} turns/s", "",
             "| mode | questions | R@1 | R@5 | R@10 | R@20 | hit@5 | MRR | p50 ms | p95 ms |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for mode, r in result["modes"].items():
        o = r["overall"]
        lines.append(f"| {mode} | {r['questions']} | {o['recall@1']:.3f} | {o['recall@5']:.3f} | "
                     f"{o['recall@10']:.3f} | {o['recall@20']:.3f} | {o['hit@5']:.3f} | "
                     f"{o['mrr']:.3f} | {r['search_p50_ms']} | {r['search_p95_ms']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--modes", nargs="+", default=["dense", "bm25", "fused"],
                    choices=["dense", "bm25", "fused"])
    ap.add_argument("--limit", type=int, default=None, help="first N conversations only")
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/locomo.json"))
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"),
                    help="section to update (--md '' to skip)")
    args = ap.parse_args()
    if args.md is not None and str(args.md) in ("", "."):
        args.md = None
    result = run(args.data, args.modes, args.limit)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(table(result))
    print(f"wrote {args.json}")
    if args.md is not None:
        write_section(args.md, "locomo", f"## LoCoMo retrieval (no LLM)\n\nProduced by "
                      f"`make bench-locomo` (`python -m benchmarks.locomo`) on "
                      f"{time.strftime('%Y-%m-%d')}, 2-core machine, all-MiniLM-L6-v2 on the "
                      "CPU, protocol of `shared/data/locomo/README.md`, dev split; evidence "
                      "recall at turn level, categories 1-4.\n\n" + table(result))
        print(f"updated {args.md}")


if __name__ == "__main__":
    main()
