"""LoCoMo retrieval benchmark (no LLM), per ../shared/data/locomo/README.md.

    python -m benchmarks.locomo [PATH.json] [--modes dense bm25 fused] [--json OUT]

Every conversation is its own namespace; one episodic memory per dialog turn
("{speaker}: {text}" + the shared image's caption), event time = the session's date,
the speakers as ``metadata["persons"]``. Each question of categories 1-4 is searched
with the question alone through the public API; evidence recall@k, hit@k and MRR are
reported overall and per category, with ingest throughput and search latency measured in
the same run. The protocol gives no importance, so every turn is stored with 0.5 (the
heuristic would otherwise reorder turns by their wording).

Every mode is a search recipe (hello_memory.retrieval.recipes) of the one search,
``MemoryManager.search(question, 20, namespace=..., reference_time=..., recipe=MODE)``,
asked through the Python API or, with ``--via rest``, through ``POST /v1/search`` on the
real FastAPI app (in-process; routing, validation and serialisation included):

  hybrid          every view, fusion, neighbour context and the scoring profiles: the
                  default search of every interface, the one the targets are measured on
  per-type        each memory type's own dense ranking merged by final score (what
                  every interface ran before the hybrid engine)
  bm25-only       lexical view (BM25 sparse vectors in Qdrant)
  dense-only      semantic view (all-MiniLM-L6-v2 cosine)
  fused           semantic + lexical, weighted reciprocal-rank fusion
  fused+symbolic  + symbolic view (persons / entities / calendar-true time ranges)
  fused+graph     + graph view (entity neighbourhood; episodic turns do not feed the
                  entity graph, so on LoCoMo this view finds nothing by design)
  fused+context   semantic + lexical with neighbouring-turn context (neighbor_weight)

The ablation rows other than fused+context and hybrid switch neighbour context off, so
each shows its views alone.

The reference time of a question is its conversation's last session time. Settings
are the library defaults; nothing is tuned per question or per conversation.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.report import write_section

DEFAULT_DATA = (Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"
                / "locomo_dev.json")
KS = (1, 5, 10, 20)
# The recipes measured, in table order (names of hello_memory.retrieval.recipes).
MODES = ("per-type", "bm25-only", "dense-only", "fused", "fused+symbolic", "fused+graph",
         "fused+context", "hybrid")
API_KEY = "locomo-bench"


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


def last_session_time(sample: dict[str, Any]) -> datetime:
    conv = sample["conversation"]
    n = max(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
    return session_time(conv[f"session_{n}_date_time"])


def run(path: Path, modes: list[str], limit: int | None,
        on_mode: Callable[[dict[str, Any]], None] | None = None,
        via: str = "python", preset: str | None = None) -> dict[str, Any]:
    """Ingest, then evaluate each mode through ``via`` (python or rest);
    ``on_mode(result)`` runs after every mode, so a long run leaves its finished modes
    behind."""
    from hello_memory.config import load_settings
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.text.entities import RuleExtractor

    samples = json.loads(path.read_text(encoding="utf-8"))[:limit]
    result: dict[str, Any] = {"data": str(path), "conversations": len(samples), "via": via,
                              "modes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        extra: dict[str, Any] = {"embedding": {"preset": preset}} if preset else {}
        settings = load_settings(environ={}, data_dir=Path(tmp),
                                 api={"api_keys": {API_KEY: ["*"]}}, **extra)
        result["embedding_preset"] = preset or "default"
        from hello_memory.factory import open_stores

        mm = MemoryManager(open_stores(settings), extractor=RuleExtractor())
        mm.stores.embedder.embed(["warm up"])
        n_turns, t0 = 0, time.perf_counter()
        id_of: dict[str, dict[str, str]] = {}
        from tqdm import tqdm

        for s in tqdm(samples, desc="ingest", unit="conversation", leave=False):
            entries = turns(s)
            items = mm.add_many(entries)
            id_of[s["sample_id"]] = {i.id: i.metadata["dia_id"] for i in items}
            n_turns += len(items)
        result["ingest_turns_per_s"] = n_turns / (time.perf_counter() - t0)
        result["turns"] = n_turns
        floors = conversation_floors(mm.stores.embedder, samples)

        reference = {s["sample_id"]: last_session_time(s) for s in samples}
        with searchers(settings, mm, via) as make:
            for mode in modes:
                search = make(mode, reference)
                result["modes"][mode] = evaluate(samples, id_of, search, mode, floors)
                if on_mode is not None:
                    on_mode(result)
        mm.close()
    return result


def conversation_floors(embedder: Any, samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Each conversation's floor (``benchmarks.run.Floor``): one query embedding plus a
    brute-force top 20 over its turns' vectors, embedded again here as they were
    stored (not timed), sampled just before each question is searched."""
    from benchmarks.run import Floor

    floors = {}
    for s in samples:
        texts = [t["content"] for t in turns(s)]
        qs = [qa["question"] for qa in s["qa"] if qa.get("category") != 5]
        floors[s["sample_id"]] = Floor(embedder, embedder.embed(texts), qs, k=20)
    return floors


@contextmanager
def searchers(settings: Any, mm: Any, via: str
              ) -> Iterator[Callable[[str, dict[str, datetime]], Callable[[str, str], list[str]]]]:
    """``make(recipe, reference_times)`` -> ``search(namespace, question) -> ids``
    through the Python API or ``POST /v1/search``."""
    if via == "python":
        def make(recipe: str, reference: dict[str, datetime]) -> Callable[[str, str], list[str]]:
            def search(ns: str, q: str) -> list[str]:
                return [h.id for h in mm.search(q, top_k=20, namespace=ns, recipe=recipe,
                                                reference_time=reference[ns])]
            return search
        yield make
        return
    from fastapi.testclient import TestClient

    from hello_memory.interfaces.rest import create_app

    with TestClient(create_app(settings, manager=mm)) as client:
        def make_rest(recipe: str, reference: dict[str, datetime]
                      ) -> Callable[[str, str], list[str]]:
            def search(ns: str, q: str) -> list[str]:
                r = client.post("/v1/search", params={"namespace": ns},
                                headers={"Authorization": f"Bearer {API_KEY}"},
                                json={"query": q, "top_k": 20, "recipe": recipe,
                                      "reference_time": reference[ns].isoformat()})
                r.raise_for_status()
                return [h["id"] for h in r.json()["hits"]]
            return search
        yield make_rest


def evaluate(samples: list[dict[str, Any]], id_of: dict[str, dict[str, str]],
             search: Callable[[str, str], list[str]], label: str = "search",
             floors: dict[str, Any] | None = None) -> dict[str, Any]:
    """Recall, hit@5, MRR and latency of ``search`` over the questions; ``floors``
    (:func:`conversation_floors`): the floor sampled before each question, its p50 and
    the search's p50 over it reported beside the latency."""
    from tqdm import tqdm

    per_cat: dict[int, list[dict[str, float]]] = defaultdict(list)
    latencies = []
    floor_ms: list[float] = []
    total = sum(1 for s in samples for qa in s["qa"] if qa.get("category") != 5)
    bar = tqdm(total=total, desc=label, unit="q", leave=False)
    for s in samples:
        ns, dia = s["sample_id"], id_of[s["sample_id"]]
        known = set(dia.values())
        for qa in s["qa"]:
            if qa.get("category") == 5:
                continue
            gold = evidence_ids([str(e) for e in qa.get("evidence", [])], known)
            if not gold:
                continue
            if floors is not None:
                floor = floors[ns]
                floor.sampled(qa["question"], floor_ms)
            t0 = time.perf_counter()
            ranked = [dia[i] for i in search(ns, qa["question"]) if i in dia]
            latencies.append(time.perf_counter() - t0)
            row = {f"recall@{k}": len(gold & set(ranked[:k])) / len(gold) for k in KS}
            row["hit@5"] = float(bool(gold & set(ranked[:5])))
            first = next((r for r, d in enumerate(ranked) if d in gold), None)
            row["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
            per_cat[int(qa["category"])].append(row)
            bar.update(1)
    bar.close()
    rows = [r for rs in per_cat.values() for r in rs]

    def mean(rs: list[dict[str, float]]) -> dict[str, float]:
        return {k: round(statistics.fmean(r[k] for r in rs), 4) for k in rs[0]}

    lat = sorted(latencies)
    out = {"questions": len(rows), "overall": mean(rows),
           "per_category": {c: {"n": len(rs), **mean(rs)} for c, rs in sorted(per_cat.items())},
           "search_p50_ms": round(1000 * statistics.median(lat), 1),
           "search_p95_ms": round(1000 * lat[int(0.95 * (len(lat) - 1))], 1)}
    from benchmarks.run import over_floor

    out.update(over_floor(lat, floor_ms))
    return out


def table(result: dict[str, Any]) -> str:
    lines = [f"LoCoMo retrieval, {result['conversations']} conversations, {result['turns']} turns, "
             f"ingest {result['ingest_turns_per_s']:.0f} turns/s", "",
             "| mode | questions | R@1 | R@5 | R@10 | R@20 | hit@5 | MRR | p50 ms | p95 ms "
             "| floor p50 ms | p50 / floor |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for mode, r in result["modes"].items():
        o = r["overall"]
        lines.append(f"| {mode} | {r['questions']} | {o['recall@1']:.3f} | {o['recall@5']:.3f} | "
                     f"{o['recall@10']:.3f} | {o['recall@20']:.3f} | {o['hit@5']:.3f} | "
                     f"{o['mrr']:.3f} | {r['search_p50_ms']} | {r['search_p95_ms']} | "
                     f"{r.get('floor_p50_ms', '-')} | {r.get('p50_over_floor', '-')} |")
    cats = sorted({c for r in result["modes"].values() for c in r["per_category"]})
    lines += ["", "Per category (LoCoMo: 1 multi-hop, 2 temporal, 3 open-domain, "
              "4 single-hop), recall@5 / recall@10 / MRR:", "",
              "| mode | " + " | ".join(f"cat {c} (n={_n(result, c)})" for c in cats) + " |",
              "|---|" + "---|" * len(cats)]
    for mode, r in result["modes"].items():
        cells = []
        for c in cats:
            pc = r["per_category"].get(c)
            cells.append(f"{pc['recall@5']:.3f} / {pc['recall@10']:.3f} / {pc['mrr']:.3f}"
                         if pc else "-")
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _n(result: dict[str, Any], cat: Any) -> int:
    for r in result["modes"].values():
        if cat in r["per_category"]:
            return int(r["per_category"][cat]["n"])
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES),
                    help="ablations to run, in this order (default: all)")
    ap.add_argument("--limit", type=int, default=None, help="first N conversations only")
    ap.add_argument("--via", choices=("python", "rest"), default="rest",
                    help="ask through MemoryManager.search or POST /v1/search (default)")
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/locomo.json"))
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"),
                    help="section to update (--md '' to skip)")
    ap.add_argument("--preset", default=None,
                    choices=["minilm", "multilingual", "multilingual-use"],
                    help="embedding preset (default: the library default)")
    args = ap.parse_args()
    if args.md is not None and str(args.md) in ("", "."):
        args.md = None
    from benchmarks.run import engine

    model = engine()

    def save(result: dict[str, Any]) -> None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
        if args.md is not None:
            write_section(args.md, "locomo", f"## LoCoMo retrieval (no LLM)\n\nProduced by "
                          f"`make bench-locomo` (`python -m benchmarks.locomo`) on "
                          f"{time.strftime('%Y-%m-%d')}, 2-core machine, all-MiniLM-L6-v2 on "
                          f"{model}, protocol of `shared/data/locomo/README.md`, dev split; "
                          "evidence recall at turn level, categories 1-4; every mode is a "
                          "search recipe asked through "
                          + ("`POST /v1/search` (the REST API, in-process)" if args.via == "rest"
                             else "`MemoryManager.search`")
                          + " (see docs/RETRIEVAL.md). The floor: one query embedding plus a "
                          "brute-force numpy top 20 over the conversation's turn vectors (one "
                          "BLAS thread, `benchmarks.run.Floor`), sampled just before each "
                          "question; p50 / floor is the ratio of the two p50s, both measured "
                          "in the same run.\n\n" + table(result))

    result = run(args.data, args.modes, args.limit, on_mode=save, via=args.via,
                 preset=args.preset)
    print(table(result))
    print(f"wrote {args.json}" + (f", updated {args.md}" if args.md is not None else ""))


if __name__ == "__main__":
    main()
