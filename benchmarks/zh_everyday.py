"""Chinese everyday messages (issue 26, item 7): does the full search recall more than
its own BM25 view on Chinese text, and what does the dense view add?

    python -m benchmarks.zh_everyday [DATA.json] [--embedder PRESET [PRESET ...]]
                                     [--limit N] [--json OUT] [--md BENCHMARKS.md]
                                     [--no-write]

The set is ``benchmarks/data/zh_everyday.json`` (written by us, before any run): 309
messages one user sends an assistant in Chinese over eight months (work, family, food,
travel, health, shopping, plans, feelings; some with English words and brands), each
with an id and an event time, and questions with the ids of the messages that answer
them. The questions paraphrase their messages rather than copy their words, so that
the dense view has something to add beyond BM25; the ones marked ``cross_language``
are asked in English.

For each embedder (library default, or each ``--embedder`` preset, which sets
``embedding.preset``; hello_memory/embedding/presets.py): one fresh embedded data dir,
library defaults otherwise (no LLM), the FastAPI app over it in-process
(``TestClient``: httpx over the ASGI app, real routing and validation). Every message
through ``POST /v1/memories/batch`` in chunks, with its event time and no memory type (as
a user would); ingest rate = messages / wall time of those calls, embedding included
(the model is warmed first). Then every question through ``POST /v1/search`` (top_k 10,
the set's ``reference_time``) with the recipes ``hybrid``, ``dense-only`` and
``bm25-only``, in the same run. Before each search the floor of the same run is
sampled (``benchmarks.run.Floor``): one query embedding by the default embedder plus a
brute-force numpy top 10 over the stored messages' vectors; each recipe's p50 is
reported over the floor's p50.

Scoring per question (as benchmarks/locomo.py): R@k = the share of its gold messages
within the first k hits, MRR = 1 / rank of the first gold message (0 when none in the
10); averaged over questions, overall, for the Chinese and the cross-language
questions, and per category.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.assistant import _p, is_chinese
from benchmarks.report import write_section

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "zh_everyday.json"
DEFAULT_JSON = Path("benchmarks/results/zh_everyday.json")
RECIPES = ("hybrid", "dense-only", "bm25-only")
KS = (1, 5, 10)
TOP_K = 10
CHUNK = 100  # messages per POST /v1/memories/batch (the endpoint takes up to 1000)
API_KEY = "zh-everyday-bench"
FIELDS = tuple(f"recall@{k}" for k in KS) + ("mrr",)


# --- the data set ------------------------------------------------------------------------
def load(path: Path = DEFAULT_DATA) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return data


def _aware(value: Any) -> bool:
    try:
        return datetime.fromisoformat(value).tzinfo is not None
    except (TypeError, ValueError):
        return False


def check(data: dict[str, Any]) -> list[str]:
    """Integrity problems of the set (empty list: fine)."""
    problems: list[str] = []
    msgs, qs = data.get("messages", []), data.get("questions", [])
    if not msgs or not qs:
        return ["needs messages and questions"]
    ids = [m.get("id") for m in msgs]
    dup = sorted({str(i) for i in ids if ids.count(i) > 1})
    if dup:
        problems.append("duplicate message ids: " + ", ".join(dup))
    for m in msgs:
        if not str(m.get("content", "")).strip():
            problems.append(f"{m.get('id')}: empty content")
        elif not is_chinese(m["content"]):
            problems.append(f"{m.get('id')}: not Chinese")
        if not _aware(m.get("event_time")):
            problems.append(f"{m.get('id')}: event_time must be a timezone-aware ISO 8601 time")
    known = set(ids)
    qids = [q.get("id") for q in qs]
    if len(set(qids)) != len(qids):
        problems.append("duplicate question ids")
    for q in qs:
        qid = q.get("id", "?")
        if not str(q.get("text", "")).strip() or not q.get("gold") or not q.get("category"):
            problems.append(f"{qid}: needs text, gold and category")
        for g in q.get("gold", []):
            if g not in known:
                problems.append(f"{qid}: unknown gold id {g!r}")
        cross = bool(q.get("cross_language"))
        if q.get("lang") != ("en" if cross else "zh"):
            problems.append(f"{qid}: lang must be 'zh', or 'en' with cross_language true")
        elif q.get("text") and is_chinese(q["text"]) == cross:
            problems.append(f"{qid}: text does not look like lang {q.get('lang')}")
        for g in q.get("gold", []):
            if g in known and q.get("text", "").strip() in {
                    m["content"] for m in msgs if m["id"] == g}:
                problems.append(f"{qid}: copies its gold message")
    if not _aware(data.get("reference_time")):
        problems.append("reference_time must be a timezone-aware ISO 8601 time")
    elif msgs and all(_aware(m.get("event_time")) for m in msgs):
        ref = datetime.fromisoformat(data["reference_time"])
        if any(datetime.fromisoformat(m["event_time"]) > ref for m in msgs):
            problems.append("a message's event_time is after reference_time")
    return problems


# --- scoring -----------------------------------------------------------------------------
def score(ranked: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    want = set(gold)
    row = {f"recall@{k}": len(want & set(ranked[:k])) / len(want) for k in KS}
    first = next((n for n, key in enumerate(ranked) if key in want), None)
    row["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    return row


def _mean(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"n": len(rows), **{f: round(statistics.fmean(r[f] for r in rows), 4)
                               for f in FIELDS}}


def summarise(per_q: Sequence[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    cats: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in per_q:
        groups["cross_language" if r["cross_language"] else "zh"].append(r)
        cats[r["category"]].append(r)
    return {"overall": _mean(per_q), "per_lang": {g: _mean(v) for g, v in groups.items()},
            "per_category": {c: _mean(v) for c, v in sorted(cats.items())}}


# --- the run -----------------------------------------------------------------------------
def run_one(data: dict[str, Any], preset: str | None,
            questions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One embedder: a fresh data dir, every message, every question x recipe."""
    from fastapi.testclient import TestClient

    from benchmarks.run import CapturingEmbedder, Floor, over_floor
    from hello_memory.config import load_settings
    from hello_memory.interfaces.rest import create_app
    from hello_memory.memory.manager import MemoryManager

    ns = data.get("namespace", "zh-everyday")
    auth = {"Authorization": f"Bearer {API_KEY}"}
    overrides: dict[str, Any] = {"embedding": {"preset": preset}} if preset else {}
    out: dict[str, Any] = {"embedder_preset": preset or "(default)"}
    with tempfile.TemporaryDirectory(prefix="hm-zh-everyday-") as tmp:
        # environ={}: a developer's HELLO_MEMORY__* variables must not change the numbers.
        settings = load_settings(environ={}, data_dir=Path(tmp),
                                 api={"api_keys": {API_KEY: [ns, "warm-up"]}}, **overrides)
        mm = MemoryManager.open(settings)
        try:
            out["model"] = mm.stores.embedder.name
            embedder = mm.stores.embedder
            capture = mm.stores.embedder = CapturingEmbedder(embedder)
            with TestClient(create_app(settings, manager=mm)) as client:
                def post(path: str, body: dict[str, Any], namespace: str = ns
                         ) -> dict[str, Any]:
                    r = client.post(path, params={"namespace": namespace}, headers=auth,
                                    json=body)
                    r.raise_for_status()
                    answer: dict[str, Any] = r.json()
                    return answer

                # First-use costs (model, tokenizer, jieba) land outside the measures.
                post("/v1/memories/batch", {"memories": [
                    {"content": "预热：我喜欢喝茶。"}, {"content": "Warm-up: I like tea."}]},
                    "warm-up")
                post("/v1/search", {"query": "我喜欢喝什么？"}, "warm-up")
                capture.take()  # the warm-up's vectors are not the set's
                msgs = data["messages"]
                ids: list[str] = []
                t0 = time.perf_counter()
                for start in range(0, len(msgs), CHUNK):
                    answer = post("/v1/memories/batch", {"memories": [
                        {"content": m["content"], "event_time": m["event_time"]}
                        for m in msgs[start:start + CHUNK]]})
                    ids += answer["ids"]
                ingest_s = time.perf_counter() - t0
                floor = Floor(embedder, capture.take(), [q["text"] for q in questions],
                              k=TOP_K)
                key_of = dict(zip(ids, (m["id"] for m in msgs), strict=True))
                out.update(messages=len(msgs), ingest_s=round(ingest_s, 3),
                           ingest_per_s=round(len(msgs) / ingest_s, 1))
                stored: dict[str, int] = defaultdict(int)
                superseded = []
                for memory_id, key in key_of.items():
                    r = client.get(f"/v1/memories/{memory_id}", params={"namespace": ns},
                                   headers=auth)
                    r.raise_for_status()
                    item = r.json()
                    stored[item["memory_type"]] += 1
                    if item["superseded_by"] is not None or item["valid_to"] is not None:
                        superseded.append({"id": key, "by": key_of.get(
                            item["superseded_by"], item["superseded_by"])})
                out["stored_types"] = dict(sorted(stored.items()))
                out["superseded_at_ingest"] = superseded
                out["recipes"] = {}
                for recipe in RECIPES:
                    per_q, lat, floor_ms = [], [], []
                    for q in questions:
                        floor.sampled(q["text"], floor_ms)
                        t0 = time.perf_counter()
                        hits = post("/v1/search", {
                            "query": q["text"], "top_k": TOP_K, "recipe": recipe,
                            "reference_time": data["reference_time"]})["hits"]
                        lat.append(time.perf_counter() - t0)
                        ranked = [key_of.get(h["id"], "?" + h["id"][:8]) for h in hits]
                        per_q.append({"id": q["id"], "text": q["text"], "gold": q["gold"],
                                      "category": q["category"],
                                      "cross_language": bool(q.get("cross_language")),
                                      "ranked": ranked, **score(ranked, q["gold"])})
                    out["recipes"][recipe] = {**summarise(per_q), "p50_ms": _p(lat, 0.5),
                                              "p95_ms": _p(lat, 0.95),
                                              **over_floor(lat, floor_ms),
                                              "per_question": per_q}
        finally:
            mm.close()
    hybrid, bm25 = out["recipes"]["hybrid"], out["recipes"]["bm25-only"]
    out["hybrid_minus_bm25_recall@10_points"] = round(
        100 * (hybrid["overall"]["recall@10"] - bm25["overall"]["recall@10"]), 1)
    return out


def run(path: Path = DEFAULT_DATA, embedders: Sequence[str | None] = (None,),
        limit: int | None = None) -> dict[str, Any]:
    data = load(path)
    problems = check(data)
    if problems:
        raise ValueError("zh_everyday set is inconsistent:\n  " + "\n  ".join(problems))
    questions = data["questions"][:limit]
    return {"data": str(path), "messages": len(data["messages"]),
            "questions": len(questions),
            "cross_language_questions": sum(bool(q.get("cross_language")) for q in questions),
            "reference_time": data["reference_time"], "top_k": TOP_K,
            "runs": [run_one(data, preset, questions) for preset in embedders]}


# --- reporting ---------------------------------------------------------------------------
def table(result: dict[str, Any]) -> str:
    """Markdown tables, at most 80 columns wide."""
    lines = ["| embedder | recipe | R@1 | R@5 | R@10 | MRR | p50 ms | p95 ms |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for run in result["runs"]:
        for recipe, r in run["recipes"].items():
            o = r["overall"]
            lines.append(f"| {run['embedder_preset']} | {recipe} | {o['recall@1']:.3f} | "
                         f"{o['recall@5']:.3f} | {o['recall@10']:.3f} | {o['mrr']:.3f} | "
                         f"{r['p50_ms']} | {r['p95_ms']} |")
    lines += ["", "| embedder | recipe | floor p50 ms | p50 / floor p50 |", "|---|---|---:|---:|"]
    for run in result["runs"]:
        for recipe, r in run["recipes"].items():
            lines.append(f"| {run['embedder_preset']} | {recipe} | "
                         f"{r.get('floor_p50_ms', '-')} | {r.get('p50_over_floor', '-')} |")
    lines += ["", "| embedder | ingest msg/s | hybrid - bm25 R@10 | superseded at ingest |",
              "|---|---:|---:|---:|"]
    for run in result["runs"]:
        lines.append(f"| {run['embedder_preset']} | {run['ingest_per_s']} | "
                     f"{run['hybrid_minus_bm25_recall@10_points']:+.1f} pts | "
                     f"{len(run['superseded_at_ingest'])} |")
    lines += ["", "Models: " + "; ".join(f"{run['embedder_preset']} = `{run['model']}`"
                                         for run in result["runs"]) + "."]
    for run in result["runs"]:
        recipes = list(run["recipes"])
        first = run["recipes"][recipes[0]]
        lines += ["", f"R@10 per question group, embedder {run['embedder_preset']}:", "",
                  "| group | n | " + " | ".join(recipes) + " |",
                  "|---|---:|" + "---:|" * len(recipes)]
        for kind in ("per_lang", "per_category"):
            for group, g in first[kind].items():
                cells = [f"{run['recipes'][rc][kind][group]['recall@10']:.3f}"
                         for rc in recipes]
                lines.append(f"| {group} | {g['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def misses(result: dict[str, Any]) -> str:
    out = []
    for run in result["runs"]:
        for recipe, r in run["recipes"].items():
            bad = [q for q in r["per_question"] if q["recall@10"] < 1]
            out.append(f"\n{run['embedder_preset']} {recipe}: {len(bad)} questions with a gold "
                       "message outside the top 10")
            for q in bad:
                out.append(f"  {q['id']} {q['text']}  gold {q['gold']}, got {q['ranked'][:3]}")
    return "\n".join(out)


def section(result: dict[str, Any], flag: str = "") -> str:
    """The BENCHMARKS.md section of a run (``flag``: the command's ``--embedder`` part)."""
    return ("## Chinese everyday messages: full search vs its own views\n\n"
            f"Produced by `python -m benchmarks.zh_everyday{flag}` on {result['date']}: "
            f"{result['messages']} Chinese messages written by us "
            "(`benchmarks/data/zh_everyday.json`, one user over eight months, some English "
            f"words and brands), {result['questions']} questions paraphrasing them "
            f"({result['cross_language_questions']} asked in English). A fresh embedded "
            "data dir per embedder, library defaults, no LLM, everything through REST "
            "in-process: `POST /v1/memories/batch` (no memory type, event times given; "
            "ingest rate embedding included), then `POST /v1/search` top_k 10 with each "
            "recipe. R@k: share of a question's gold messages in the first k; MRR of "
            "the first gold message. Floor: one query embedding plus a brute-force "
            "numpy top 10 over the stored messages' vectors (one BLAS thread, "
            "`benchmarks.run.Floor`), sampled just before each search (second table). "
            "The CPU is shared with other jobs: rates and latencies are noisy, the "
            "recalls are not.\n\n" + table(result))


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedder", nargs="+", default=None, metavar="PRESET",
                    help="embedding.preset per run (hello_memory/embedding/presets.py, e.g. "
                    "minilm multilingual); default: one run on the library default")
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true",
                    help="do not update the BENCHMARKS.md section")
    args = ap.parse_args(argv)
    embedders: list[str | None] = list(args.embedder) if args.embedder else [None]
    result = run(args.data, embedders, args.limit)
    result["date"] = time.strftime("%Y-%m-%d")
    print(table(result))
    print(misses(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    if not args.no_write:
        flag = (" --embedder " + " ".join(args.embedder)) if args.embedder else ""
        write_section(args.md, "zh_everyday", section(result, flag))
    print(f"\nwrote {args.json}" + ("" if args.no_write else f", updated {args.md}"),
          file=sys.stderr)


if __name__ == "__main__":
    main()
