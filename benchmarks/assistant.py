"""Assistant-memory benchmark: our own hand-written set (benchmarks/data/assistant.json).

    python -m benchmarks.assistant [DATA.json] [--json OUT] [--no-write] [--limit N]

One fresh embedded data dir, namespace ``assistant``: every memory of the set stored with
``MemoryManager.add_many`` (memory type, event time, metadata as written; importance left
to the library's estimate). Every question is then asked three ways:

  api      ``mm.search(q, top_k=5, namespace=...)``
  rest     ``POST /v1/search {"query": q, "top_k": 5}`` on the FastAPI app built over the
           same manager (in-process, httpx ASGI transport, real routing and validation)
  context  ``MemoryTool(mm, namespace=...).get_context_for_query(q)``: is every answer
           memory's id in the block, and how many tokens the block has

``reference_time`` (the moment the questions are asked, from the set) is passed to each
of the three only where its signature / request model has that parameter; the result
says where it was sent.

Scoring: top-1 = the first hit is one of the question's answer memories; top-k (k = 3, 5)
= every answer memory is within the first k (a multi-hop question lists every memory on
its path). In-context = every answer memory's id appears in the context block.
Nothing is tuned per question; the settings are the library defaults.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.report import write_section

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "assistant.json"
DEFAULT_JSON = Path("benchmarks/results/assistant.json")
MODES = ("api", "rest", "context")
KS = (1, 3, 5)
TOP_K = 5
API_KEY = "assistant-bench"


# --- the data set ------------------------------------------------------------------------
def load(path: Path = DEFAULT_DATA) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def is_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def check(data: dict[str, Any]) -> list[str]:
    """Integrity problems of the set (empty list: fine)."""
    problems: list[str] = []
    mems, qs = data.get("memories", []), data.get("questions", [])
    keys = [m.get("id") for m in mems]
    if len(set(keys)) != len(keys):
        problems.append("duplicate memory ids: "
                        + ", ".join(sorted({k for k in keys if keys.count(k) > 1})))
    for m in mems:
        if not m.get("content") or m.get("memory_type") not in ("semantic", "episodic"):
            problems.append(f"{m.get('id')}: needs content and memory_type semantic|episodic")
        if "event_time" in m:
            try:
                when = datetime.fromisoformat(m["event_time"])
            except ValueError:
                problems.append(f"{m['id']}: event_time is not ISO 8601")
                continue
            if when.tzinfo is None:
                problems.append(f"{m['id']}: event_time has no timezone")
    known = set(keys)
    for n, q in enumerate(qs):
        if not q.get("text") or not q.get("answers") or not q.get("category"):
            problems.append(f"question {n}: needs text, answers and category")
        for a in q.get("answers", []):
            if a not in known:
                problems.append(f"question {n} ({q.get('text')!r}): unknown answer {a!r}")
    ref = data.get("reference_time")
    if not ref or datetime.fromisoformat(ref).tzinfo is None:
        problems.append("reference_time must be a timezone-aware ISO 8601 time")
    return problems


def entries(data: dict[str, Any], namespace: str) -> list[dict[str, Any]]:
    out = []
    for m in data["memories"]:
        e: dict[str, Any] = {"content": m["content"], "memory_type": m["memory_type"],
                             "namespace": namespace,
                             "metadata": {**m.get("metadata", {}), "key": m["id"]}}
        if m.get("event_time"):
            e["event_time"] = datetime.fromisoformat(m["event_time"])
        out.append(e)
    return out


# --- scoring -----------------------------------------------------------------------------
def score(ranked: Sequence[str], answers: Sequence[str]) -> dict[str, float]:
    """Per-question scores from the ranked memory keys."""
    gold = set(answers)
    row = {"top1": float(bool(ranked) and ranked[0] in gold)}
    for k in KS[1:]:
        row[f"top{k}"] = float(gold <= set(ranked[:k]))
    first = next((r for r, key in enumerate(ranked) if key in gold), None)
    row["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    return row


def _mean(rows: list[dict[str, float]], fields: Sequence[str]) -> dict[str, float]:
    return {f: round(statistics.fmean(r[f] for r in rows), 4) for f in fields}


def _p(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(1000 * s[int(q * (len(s) - 1))], 1)


def evaluate(questions: Sequence[dict[str, Any]], search: Callable[[str], list[str]],
             label: str = "search", floor: Any = None) -> dict[str, Any]:
    """Ask every question through ``search(text) -> ranked memory keys``; ``floor`` (a
    ``benchmarks.run.Floor`` over the set's memories) is sampled just before each
    question, and its p50 and the search's p50 over it are reported."""
    rows, per_q, lat = [], [], []
    floor_ms: list[float] = []
    per_cat: dict[str, list[dict[str, float]]] = defaultdict(list)
    for q in questions:
        if floor is not None:
            floor.sampled(q["text"], floor_ms)
        t0 = time.perf_counter()
        ranked = search(q["text"])
        lat.append(time.perf_counter() - t0)
        row = score(ranked, q["answers"])
        rows.append(row)
        per_cat[q["category"]].append(row)
        per_q.append({"text": q["text"], "category": q["category"], "answers": q["answers"],
                      "ranked": ranked, **row})
    fields = [f"top{k}" for k in KS] + ["mrr"]
    out = {"mode": label, "questions": len(rows), "overall": _mean(rows, fields),
           "per_category": {c: {"n": len(rs), **_mean(rs, fields)}
                            for c, rs in sorted(per_cat.items())},
           "p50_ms": _p(lat, 0.5), "p95_ms": _p(lat, 0.95), "per_question": per_q}
    from benchmarks.run import over_floor

    out.update(over_floor(lat, floor_ms))
    return out


def evaluate_context(questions: Sequence[dict[str, Any]], context: Callable[[str], str],
                     key_of_id: dict[str, str], count: Callable[[str], int]) -> dict[str, Any]:
    """Ask every question through ``context(text) -> block``: are the answers in it."""
    from hello_memory.memory.manager import HANDLE_CHARS

    # the block names each memory by its short handle (MemoryManager.short_id), not its
    # whole id, as benchmarks/assistant_v2.py reads it
    handle_of_key = {k: f"[{i[:HANDLE_CHARS]}" for i, k in key_of_id.items()}
    rows, per_q, lat, tokens = [], [], [], []
    per_cat: dict[str, list[dict[str, float]]] = defaultdict(list)
    for q in questions:
        t0 = time.perf_counter()
        block = context(q["text"])
        lat.append(time.perf_counter() - t0)
        shown = [k for k, h in handle_of_key.items() if h in block]
        row = {"in_context": float(all(handle_of_key[a] in block for a in q["answers"])),
               "any_in_context": float(any(handle_of_key[a] in block for a in q["answers"])),
               "tokens": float(count(block)) if block else 0.0}
        tokens.append(row["tokens"])
        rows.append(row)
        per_cat[q["category"]].append(row)
        per_q.append({"text": q["text"], "category": q["category"], "answers": q["answers"],
                      "shown": shown, **row})
    fields = ["in_context", "any_in_context", "tokens"]
    return {"mode": "context", "questions": len(rows), "overall": _mean(rows, fields),
            "per_category": {c: {"n": len(rs), **_mean(rs, fields)}
                             for c, rs in sorted(per_cat.items())},
            "empty_blocks": sum(1 for t in tokens if t == 0),
            "p50_ms": _p(lat, 0.5), "p95_ms": _p(lat, 0.95), "per_question": per_q}


def accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


# --- the run -----------------------------------------------------------------------------
def run(path: Path = DEFAULT_DATA, modes: Sequence[str] = MODES,
        limit: int | None = None) -> dict[str, Any]:
    """Ingest the set into a fresh data dir, then evaluate each mode."""
    from hello_memory.config import load_settings
    from hello_memory.interfaces.tools.memory_tool import MemoryTool
    from hello_memory.memory.manager import MemoryManager

    data = load(path)
    problems = check(data)
    if problems:
        raise ValueError("benchmark data is inconsistent:\n  " + "\n  ".join(problems))
    ns = data.get("namespace", "assistant")
    ref = datetime.fromisoformat(data["reference_time"])
    questions = data["questions"][:limit]
    result: dict[str, Any] = {
        "data": str(path), "memories": len(data["memories"]), "questions": len(questions),
        "chinese_memories": sum(1 for m in data["memories"] if is_chinese(m["content"])),
        "reference_time": data["reference_time"], "reference_time_sent": {}, "modes": {}}
    with tempfile.TemporaryDirectory(prefix="hm-assistant-") as tmp:
        # environ={}: a developer's HELLO_MEMORY__* variables must not change the numbers.
        settings = load_settings(environ={}, data_dir=Path(tmp),
                                 api={"api_keys": {API_KEY: [ns]}})
        mm = MemoryManager.open(settings)
        try:
            mm.stores.embedder.embed(["warm up"])
            t0 = time.perf_counter()
            items = mm.add_many(entries(data, ns))
            result["ingest_s"] = round(time.perf_counter() - t0, 3)
            key_of_id = {i.id: m["id"] for i, m in zip(items, data["memories"], strict=True)}
            # the floor: one query embedding + a brute-force top TOP_K over the stored
            # memories' vectors (embedded again here, not timed)
            from benchmarks.run import Floor

            floor = Floor(mm.stores.embedder, mm.stores.embedder.embed(
                [i.content for i in items]), [q["text"] for q in questions], k=TOP_K)

            def keys(ids: list[str]) -> list[str]:
                return [key_of_id.get(i, f"?{i[:8]}") for i in ids]

            if "api" in modes:
                extra = {"reference_time": ref} if accepts(mm.search, "reference_time") else {}
                result["reference_time_sent"]["api"] = bool(extra)
                mm.search("warm up", top_k=TOP_K, namespace=ns, **extra)
                result["modes"]["api"] = evaluate(questions, lambda q: keys(
                    [h.id for h in mm.search(q, top_k=TOP_K, namespace=ns, **extra)]), "api",
                    floor)

            if "rest" in modes:
                from fastapi.testclient import TestClient

                from hello_memory.interfaces.rest import create_app
                from hello_memory.interfaces.rest.routes import SearchRequest

                send_ref = "reference_time" in SearchRequest.model_fields
                result["reference_time_sent"]["rest"] = send_ref
                body_ref = {"reference_time": data["reference_time"]} if send_ref else {}
                with TestClient(create_app(settings, manager=mm)) as client:
                    def rest(q: str) -> list[str]:
                        r = client.post("/v1/search", params={"namespace": ns},
                                        headers={"Authorization": f"Bearer {API_KEY}"},
                                        json={"query": q, "top_k": TOP_K, **body_ref})
                        r.raise_for_status()
                        return keys([h["id"] for h in r.json()["hits"]])
                    rest("warm up")
                    result["modes"]["rest"] = evaluate(questions, rest, "rest", floor)

            if "context" in modes:
                tool = MemoryTool(mm, namespace=ns)
                ctx_ref = ({"reference_time": ref}
                           if accepts(tool.get_context_for_query, "reference_time") else {})
                result["reference_time_sent"]["context"] = bool(ctx_ref)
                result["context_budget_tokens"] = tool.context_tokens
                result["modes"]["context"] = evaluate_context(
                    questions, lambda q: tool.get_context_for_query(q, **ctx_ref), key_of_id,
                    tool.counter.count)
        finally:
            mm.close()
    return result


# --- reporting ---------------------------------------------------------------------------
def table(result: dict[str, Any]) -> str:
    modes = result["modes"]
    sent = result["reference_time_sent"]
    lines = [f"{result['memories']} memories ({result['chinese_memories']} in Chinese), "
             f"{result['questions']} questions, reference time {result['reference_time']}; "
             "reference_time sent to: "
             + (", ".join(m for m, s in sent.items() if s) or "none (no such parameter)"), ""]
    search_modes = [m for m in ("api", "rest") if m in modes]
    if search_modes:
        lines += ["| mode | top-1 | top-3 | top-5 | MRR | p50 ms | p95 ms | floor p50 ms "
                  "| p50 / floor |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for m in search_modes:
            o, r = modes[m]["overall"], modes[m]
            label = {"api": "Python `mm.search`", "rest": "REST `POST /v1/search`"}[m]
            lines.append(f"| {label} | {o['top1']:.1%} | {o['top3']:.1%} | {o['top5']:.1%} | "
                         f"{o['mrr']:.3f} | {r['p50_ms']} | {r['p95_ms']} | "
                         f"{r.get('floor_p50_ms', '-')} | {r.get('p50_over_floor', '-')} |")
    if "context" in modes:
        c = modes["context"]
        lines += ["", "`MemoryTool.get_context_for_query` (budget "
                  f"{result.get('context_budget_tokens')} tokens): every answer in the block "
                  f"{c['overall']['in_context']:.1%}, at least one "
                  f"{c['overall']['any_in_context']:.1%}, mean block "
                  f"{c['overall']['tokens']:.0f} tokens, {c['empty_blocks']} empty blocks, "
                  f"p50 {c['p50_ms']} ms, p95 {c['p95_ms']} ms"]
    cats = sorted({c for r in modes.values() for c in r["per_category"]})
    head = "| category | n |" + "".join(
        {"api": " api top-1 | api top-3 |", "rest": " rest top-1 |",
         "context": " in context |"}[m] for m in modes)
    lines += ["", head, "|---|---|" + "---|" * sum(2 if m == "api" else 1 for m in modes)]
    for cat in cats:
        n = next(r["per_category"][cat]["n"] for r in modes.values() if cat in r["per_category"])
        cells = []
        for m, r in modes.items():
            pc = r["per_category"].get(cat)
            if m == "api":
                cells += [f"{pc['top1']:.0%}", f"{pc['top3']:.0%}"] if pc else ["-", "-"]
            elif m == "rest":
                cells.append(f"{pc['top1']:.0%}" if pc else "-")
            else:
                cells.append(f"{pc['in_context']:.0%}" if pc else "-")
        lines.append(f"| {cat} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def failures(result: dict[str, Any]) -> str:
    out = []
    for m, r in result["modes"].items():
        if m == "context":
            bad = [q for q in r["per_question"] if not q["in_context"]]
            out.append(f"\n{m}: {len(bad)} questions with an answer missing from the block")
            for q in bad:
                out.append(f"  [{q['category']}] {q['text']}\n      expected {q['answers']}, "
                           f"block has {q['shown'] or '(empty)'} ({q['tokens']:.0f} tokens)")
        else:
            bad = [q for q in r["per_question"] if not q["top1"]]
            out.append(f"\n{m}: {len(bad)} questions not answered at rank 1")
            for q in bad:
                rank = next((n + 1 for n, k in enumerate(q["ranked"]) if k in q["answers"]),
                            None)
                out.append(f"  [{q['category']}] {q['text']}\n      expected {q['answers']} "
                           f"(first at rank {rank or '>5'}), got {q['ranked'][:3]}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true",
                    help="do not update the BENCHMARKS.md section")
    args = ap.parse_args(argv)
    result = run(args.data, args.modes, args.limit)
    print(table(result))
    print(failures(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    if not args.no_write:
        from benchmarks.run import engine

        write_section(args.md, "assistant", "## Assistant memory (our own set)\n\nProduced by "
                      f"`python -m benchmarks.assistant` on {time.strftime('%Y-%m-%d')}, "
                      f"all-MiniLM-L6-v2 on {engine()}, library defaults, a fresh embedded "
                      "data dir; data `benchmarks/data/assistant.json` (written by us: facts, "
                      "preferences and dated events about a user and five people around "
                      "her, a fifth in Chinese). top-1: the first hit answers the question; "
                      "top-k: every memory the question needs is within the first k. The "
                      "floor: one query embedding plus a brute-force numpy top 5 over the "
                      "stored memories' vectors (one BLAS thread, `benchmarks.run.Floor`), "
                      "sampled just before each question; p50 / floor is the ratio of the "
                      "two p50s of the same run.\n\n"
                      + table(result))
    print(f"\nwrote {args.json}" + ("" if args.no_write else f", updated {args.md}"),
          file=sys.stderr)


if __name__ == "__main__":
    main()
