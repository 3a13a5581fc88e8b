"""Assistant benchmark v2: our own set (benchmarks/data/assistant_v2.json), through REST only.

    python -m benchmarks.assistant_v2 [DATA.json] [--recipes R ...] [--limit N]
                                      [--memories N] [--json OUT] [--md FILE] [--no-write]

One fresh embedded data dir; the FastAPI app of ``hello_memory.interfaces.rest.create_app`` over it,
in-process (httpx ASGI transport through Starlette's TestClient: real routing, validation
and serialisation). Every memory of the set is added in file order with
``POST /v1/memories`` (content, event_time, and memory_type only where the set gives one:
about 40 % are added without a type, as a user would). Then, for each recipe (``hybrid``,
the default, and the ``dense-only`` and ``bm25-only`` baselines), every question is asked
with its own ``reference_time``:

  search   ``POST /v1/search {"query", "top_k": 10, "reference_time", "recipe"}``
  context  ``POST /v1/context {"query", "max_tokens": 300}`` plus ``reference_time`` and
           ``recipe`` when the app's OpenAPI schema has those fields (the result records
           what was sent; without ``recipe`` the block is the default search's, asked once)

Scores, per category, per language and overall:

  top-1     the first hit is one of the question's answers
  top-3     every answer is within the first 3 (a question that needs several lists them all)
  MRR       1 / rank of the first answer within the top 10 (0 when none)
  in ctx    every answer's whole text (whitespace folded) is in the context block; the
            block shows each memory as ``- [id] date type: content``, so an id with a cut
            text does not count (``id_in_context`` keeps the looser id check of v1)
  stale>cur a replaced memory (the question's ``stale`` ids) ranks above every answer, or
            is in the top 10 while no answer is

After ingest the stored memories are read back with ``GET /v1/memories/{id}``: which type
the untyped adds got, how many replaced memories were marked superseded, and how many
memories that nothing replaced were marked superseded anyway (a lost true fact).

Nothing is tuned per question; library defaults, ``environ={}`` so a developer's
``HELLO_MEMORY__*`` variables do not change the numbers. The set is checked by
:func:`check` before anything runs.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.assistant import _mean, _p, load, score
from benchmarks.report import write_section
from hello_memory.memory.manager import HANDLE_CHARS

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "assistant_v2.json"
DEFAULT_JSON = Path("benchmarks/results/assistant_v2.json")
RECIPES = ("hybrid", "dense-only", "bm25-only")
TOP_K = 10
CONTEXT_TOKENS = 300
API_KEY = "assistant-v2-bench"

# The fixed category list of the set (docs: the set's ``about`` and the module docstring).
CATEGORIES = {
    "fact": "holds and never changed",
    "changed": "the current fact answers; the replaced one is stale",
    "plan": "a plan with a date written without a year, asked before it happens",
    "time": "a relative time in the question; a dated event answers, not a habit",
    "recurring": "habits ('every Thursday') and 'this year' statements themselves",
    "relation": "a person reached through another ('my sister's husband')",
    "indirect": "the question does not name what answers it",
    "zh": "Chinese question over a Chinese memory",
    "cross-language": "English question over a Chinese memory, or the other way round",
}
MEMORY_TYPES = ("semantic", "episodic")
# The people around the user; check() wants at least four of them, each in several memories.
PEOPLE = ("Daniel", "Qing", "Marcus", "Lily", "Lotte", "Hannah", "Tomasz", "Ines", "嘉怡",
          "妈妈")

_MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|"
           "December")
# A day and month written without a year: "9 December", "18-21 December", "12月14号".
_DAY_MONTH = re.compile(rf"\b\d{{1,2}}(?:\s*(?:-|and)\s*\d{{1,2}})?\s+(?:{_MONTHS})\b"
                        r"|\d{1,2}月\d{1,2}[号日]")
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b|\d{4}年")
_RECURRING = re.compile(r"\bevery\b|\beach\b|每(?:个|周|天|星期)", re.I)
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_THIS_YEAR = re.compile(r"\bthis year\b|今年", re.I)


# --- the data set ------------------------------------------------------------------------
def chinese(text: str) -> bool:
    """Mostly Chinese: more CJK characters than Latin words (an English line that names
    林悦 once is English; a Chinese one that names a Dutch street is Chinese)."""
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    return cjk > len(_LATIN_WORD.findall(text))


def _when(value: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else None


def language(question: dict[str, Any], text_of: dict[str, str]) -> str:
    """``en``, ``zh`` or ``cross`` (the question's language differs from an answer's)."""
    q = chinese(question["text"])
    answers = {chinese(text_of[a]) for a in question["answers"] if a in text_of}
    if answers and answers != {q}:
        return "cross"
    return "zh" if q else "en"


def stats(data: dict[str, Any]) -> dict[str, Any]:
    """The counts that the set's requirements (issue 26, item 1) are about."""
    mems, qs = data.get("memories", []), data.get("questions", [])
    by_id = {m.get("id"): m for m in mems}
    text_of = {m["id"]: m.get("content", "") for m in mems if "id" in m}
    stale = sorted({s for q in qs for s in q.get("stale", [])})
    people = {p: sum(p in m.get("content", "") for m in mems) for p in PEOPLE}
    plans = [m["id"] for m in mems
             if _DAY_MONTH.search(m.get("content", "")) and not _YEAR.search(m["content"])]
    langs = Counter(language(q, text_of) for q in qs if q.get("text"))
    cross_dirs = Counter(("zh->en" if chinese(q["text"]) else "en->zh") for q in qs
                         if q.get("text") and language(q, text_of) == "cross")
    return {
        "memories": len(mems), "questions": len(qs),
        "untyped": sum(1 for m in mems if "memory_type" not in m),
        "typed": dict(Counter(m["memory_type"] for m in mems if "memory_type" in m)),
        "chinese_memories": sum(1 for m in mems if chinese(m.get("content", ""))),
        "chinese_questions": sum(1 for q in qs if chinese(q.get("text", ""))),
        "languages": dict(langs), "cross_directions": dict(cross_dirs),
        "categories": dict(Counter(q.get("category") for q in qs)),
        "changed_pairs": len(stale),
        "changed_pairs_chinese": sum(1 for s in stale if chinese(by_id.get(s, {}).get(
            "content", ""))),
        "questions_with_stale": sum(1 for q in qs if q.get("stale")),
        "yearless_dates": len(plans),
        "recurring_memories": sum(1 for m in mems if _RECURRING.search(m.get("content", ""))),
        "this_year_memories": sum(1 for m in mems if _THIS_YEAR.search(m.get("content", ""))),
        "people": people,
        "months": sorted({m["event_time"][:7] for m in mems if _when(m.get("event_time"))}),
    }


def check(data: dict[str, Any], *, counts: bool = True) -> list[str]:
    """Problems of the set (empty list: fine). Integrity always; with ``counts`` also the
    issue's requirements (a slice for a smoke run passes ``counts=False``)."""
    problems: list[str] = []
    mems, qs = data.get("memories", []), data.get("questions", [])
    for key in ("about", "license", "namespace", "memories", "questions"):
        if key not in data:
            problems.append(f"missing top-level {key!r}")
    keys = [m.get("id") for m in mems]
    dupes = sorted({k for k in keys if keys.count(k) > 1}, key=str)
    if dupes:
        problems.append("duplicate memory ids: " + ", ".join(map(str, dupes)))
    texts = [" ".join(str(m.get("content", "")).split()) for m in mems]
    same = sorted({t for t in texts if texts.count(t) > 1})
    if same:
        problems.append(f"repeated contents (an add would return the first): {same[:3]}")
    order = {k: n for n, k in enumerate(keys)}
    by_id = {m.get("id"): m for m in mems}
    for m in mems:
        mid = m.get("id")
        if not mid or not str(m.get("content", "")).strip():
            problems.append(f"{mid}: needs id and content")
        if "memory_type" in m and m["memory_type"] not in MEMORY_TYPES:
            problems.append(f"{mid}: memory_type must be semantic|episodic or left out")
        if _when(m.get("event_time")) is None:
            problems.append(f"{mid}: event_time must be a timezone-aware ISO 8601 time")
    for n, q in enumerate(qs):
        label = f"question {n} ({q.get('text')!r})"
        if not q.get("text") or not q.get("answers"):
            problems.append(f"{label}: needs text and answers")
        if q.get("category") not in CATEGORIES:
            problems.append(f"{label}: category {q.get('category')!r} is not one of "
                            + ", ".join(CATEGORIES))
        asked = _when(q.get("reference_time"))
        if asked is None:
            problems.append(f"{label}: reference_time must be a timezone-aware ISO 8601 time")
        for a in q.get("answers", []):
            if a not in by_id:
                problems.append(f"{label}: unknown answer {a!r}")
            elif asked and (said := _when(by_id[a].get("event_time"))) and said > asked:
                problems.append(f"{label}: answer {a} is said after the question is asked")
        for s in q.get("stale", []):
            if s not in by_id:
                problems.append(f"{label}: unknown stale id {s!r}")
            elif s in q.get("answers", []):
                problems.append(f"{label}: {s} is both answer and stale")
            else:
                for a in q.get("answers", []):
                    if a not in by_id:
                        continue
                    old, new = (_when(by_id[k].get("event_time")) for k in (s, a))
                    if order[s] > order[a] or (old and new and old >= new):
                        problems.append(f"{label}: stale {s} must come before answer {a} "
                                        "(file order and event time)")
    if counts and not problems:
        problems += _requirements(stats(data))
    return problems


def _requirements(s: dict[str, Any]) -> list[str]:
    """Issue 26, item 1: what the set must hold."""
    need = []

    def want(ok: bool, what: str) -> None:
        if not ok:
            need.append(what)

    m, q = s["memories"], s["questions"]
    want(m >= 150, f"at least 150 memories (has {m})")
    want(q >= 120, f"at least 120 questions (has {q})")
    want(0.33 <= s["untyped"] / m <= 0.47, f"about 40 % untyped memories (has {s['untyped']})")
    want(set(s["typed"]) == set(MEMORY_TYPES), "typed memories of both types")
    want(s["changed_pairs"] >= 30, f"at least 30 changed facts (has {s['changed_pairs']})")
    want(s["changed_pairs_chinese"] >= s["changed_pairs"] / 3,
         f"a third of the changed facts in Chinese (has {s['changed_pairs_chinese']})")
    want(0.12 <= s["chinese_memories"] / m <= 0.22,
         f"about 15 % Chinese memories (has {s['chinese_memories']})")
    zh_q = s["languages"].get("zh", 0)
    want(0.12 <= zh_q / q <= 0.22, f"about 15 % Chinese questions (has {zh_q})")
    want(min(s["cross_directions"].get("en->zh", 0), s["cross_directions"].get("zh->en", 0))
         >= 3, f"cross-language questions both ways (has {s['cross_directions']})")
    want(all(s["categories"].get(c, 0) >= 8 for c in CATEGORIES),
         f"every category at least 8 questions (has {s['categories']})")
    want(s["yearless_dates"] >= 8, f"plans with yearless dates (has {s['yearless_dates']})")
    want(s["recurring_memories"] >= 4 and s["this_year_memories"] >= 3,
         "recurring and 'this year' memories")
    want(sum(1 for n in s["people"].values() if n >= 3) >= 4,
         f"at least 4 people besides the user (has {s['people']})")
    want(len(s["months"]) >= 5, f"event times over several months (has {s['months']})")
    return need


def sliced(data: dict[str, Any], memories: int | None = None,
           limit: int | None = None) -> dict[str, Any]:
    """The first ``memories`` memories and the questions they answer (``stale`` kept only
    where present), then the first ``limit`` of those questions: a smoke run's set."""
    mems = data["memories"][:memories]
    kept = {m["id"] for m in mems}
    qs = []
    for q in data["questions"]:
        if set(q["answers"]) <= kept:
            q = dict(q)
            if "stale" in q:
                q["stale"] = [s for s in q["stale"] if s in kept]
                if not q["stale"]:
                    del q["stale"]
            qs.append(q)
    return {**data, "memories": mems, "questions": qs[:limit]}


# --- scoring -----------------------------------------------------------------------------
def fold(text: str) -> str:
    return " ".join(text.split())


def stale_above(ranked: Sequence[str], answers: Iterable[str], stale: Iterable[str]) -> bool:
    """A replaced memory ranks above every answer (or is found while no answer is)."""
    def first(keys: set[str]) -> float:
        return next((r for r, k in enumerate(ranked) if k in keys), math.inf)

    s = first(set(stale))
    return s != math.inf and s < first(set(answers))


def search_row(q: dict[str, Any], ranked: list[str]) -> dict[str, float]:
    row = score(ranked, q["answers"])
    row = {"top1": row["top1"], "top3": row["top3"], "mrr": row["mrr"]}
    row["stale_above"] = float(stale_above(ranked, q["answers"], q.get("stale", ())))
    return row


def context_row(q: dict[str, Any], block: str, text_of: dict[str, str],
                id_of: dict[str, str], tokens: int) -> dict[str, float]:
    flat = fold(block)
    return {
        "in_context": float(all(fold(text_of[a]) in flat for a in q["answers"])),
        # the block shows each memory's short handle (MemoryManager.short_id)
        "id_in_context": float(all(f"[{id_of[a][:HANDLE_CHARS]}" in block
                                   for a in q["answers"])),
        "stale_in_context": float(any(fold(text_of[s]) in flat for s in q.get("stale", ()))),
        "tokens": float(tokens),
        "empty": float(not block.strip()),
    }


SEARCH_FIELDS = ("top1", "top3", "mrr")
COUNT_FIELDS = ("stale_above",)
CONTEXT_FIELDS = ("in_context", "id_in_context")


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means of the rate fields, sums of the count fields, n."""
    out: dict[str, Any] = {"n": len(rows)}
    if not rows:
        return out
    rates = [f for f in (*SEARCH_FIELDS, *CONTEXT_FIELDS, "tokens") if f in rows[0]]
    out.update(_mean(rows, rates))
    for f in (*COUNT_FIELDS, "stale_in_context", "empty"):
        if f in rows[0]:
            out[f] = int(sum(r[f] for r in rows))
    return out


def grouped(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r[key]].append(r)
    return {g: summarise(rs) for g, rs in sorted(groups.items())}


# --- REST --------------------------------------------------------------------------------
def request_fields(app: Any, path: str) -> set[str]:
    """The body fields ``POST path`` accepts, read from the app's OpenAPI schema."""
    spec = app.openapi()
    schema = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"][
        "schema"]
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return set(schema.get("properties", {}))


def run(path: Path = DEFAULT_DATA, recipes: Sequence[str] = RECIPES,
        limit: int | None = None, memories: int | None = None,
        preset: str | None = None) -> dict[str, Any]:
    """Ingest the set over REST into a fresh data dir, then ask every question with every
    recipe. ``memories``/``limit`` take a slice (smoke runs; the full set otherwise)."""
    from fastapi.testclient import TestClient

    from hello_memory.config import load_settings
    from hello_memory.interfaces.rest import create_app

    full = load(path)
    problems = check(full)
    if problems:
        raise ValueError("benchmark data is inconsistent:\n  " + "\n  ".join(problems))
    data = sliced(full, memories, limit) if memories or limit else full
    ns = data.get("namespace", "assistant-v2")
    questions = data["questions"]
    text_of = {m["id"]: m["content"] for m in data["memories"]}
    result: dict[str, Any] = {
        "data": str(path), "set": stats(data), "memories": len(data["memories"]),
        "questions": len(questions), "recipes": list(recipes), "top_k": TOP_K,
        "context_tokens": CONTEXT_TOKENS, "sent": {}, "runs": {},
        "embedding_preset": preset or "default"}
    auth = {"Authorization": f"Bearer {API_KEY}"}
    with tempfile.TemporaryDirectory(prefix="hm-assistant-v2-") as tmp:
        # environ={}: a developer's HELLO_MEMORY__* variables must not change the numbers.
        extra: dict[str, Any] = {"embedding": {"preset": preset}} if preset else {}
        settings = load_settings(environ={}, data_dir=Path(tmp),
                                 api={"api_keys": {API_KEY: [ns]}}, **extra)
        app = create_app(settings)
        with TestClient(app) as client:
            def post(route: str, body: dict[str, Any]) -> Any:
                r = client.post(f"/v1{route}", params={"namespace": ns}, headers=auth,
                                json=body)
                r.raise_for_status()
                return r.json()

            search_fields = request_fields(app, "/v1/search")
            context_fields = request_fields(app, "/v1/context")
            result["sent"] = {
                "search": sorted({"reference_time", "recipe"} & search_fields),
                "context": sorted({"reference_time", "recipe"} & context_fields),
                "context_not_sent": sorted({"reference_time", "recipe"} - context_fields)}

            # 1. ingest, in file order, one POST /v1/memories each
            id_of: dict[str, str] = {}
            duplicates = []
            t0 = time.perf_counter()
            for m in data["memories"]:
                body = {"content": m["content"], "event_time": m["event_time"]}
                if "memory_type" in m:
                    body["memory_type"] = m["memory_type"]
                added = post("/memories", body)
                if added.get("duplicate_of"):
                    duplicates.append(m["id"])
                id_of[m["id"]] = added["id"]
            result["ingest_s"] = round(time.perf_counter() - t0, 2)
            result["duplicates"] = duplicates
            key_of = {v: k for k, v in id_of.items()}
            result["stored"] = _stored(client, ns, auth, data, id_of)

            def keys(hits: list[dict[str, Any]]) -> list[str]:
                return [key_of.get(h["id"], f"?{h['id'][:8]}") for h in hits]

            # 2. every question, every recipe: search, then the context block
            post("/search", {"query": "warm up", "top_k": TOP_K})
            context_per_recipe = "recipe" in context_fields
            for recipe in recipes:
                rows, lat, ctx_lat = [], [], []
                ask_context = context_per_recipe or recipe == "hybrid"
                for q in questions:
                    when = {"reference_time": q["reference_time"]}
                    t = time.perf_counter()
                    found = post("/search", {"query": q["text"], "top_k": TOP_K,
                                             "recipe": recipe, **when})
                    lat.append(time.perf_counter() - t)
                    ranked = keys(found["hits"])
                    row: dict[str, Any] = {
                        "text": q["text"], "category": q["category"],
                        "language": language(q, text_of), "answers": q["answers"],
                        "stale": q.get("stale", []), "ranked": ranked,
                        **search_row(q, ranked)}
                    if ask_context:
                        body = {"query": q["text"], "max_tokens": CONTEXT_TOKENS}
                        if "reference_time" in context_fields:
                            body.update(when)
                        if context_per_recipe:
                            body["recipe"] = recipe
                        t = time.perf_counter()
                        ctx = post("/context", body)
                        ctx_lat.append(time.perf_counter() - t)
                        block = ctx.get("context", "")
                        row.update(context_row(q, block, text_of, id_of,
                                               int(ctx.get("tokens", 0))))
                        row["shown"] = [k for k, i in id_of.items() if i in block]
                    rows.append(row)
                result["runs"][recipe] = {
                    "overall": summarise(rows), "per_category": grouped(rows, "category"),
                    "per_language": grouped(rows, "language"),
                    "search_p50_ms": _p(lat, 0.5), "search_p95_ms": _p(lat, 0.95),
                    **({"context_p50_ms": _p(ctx_lat, 0.5)} if ctx_lat else {}),
                    "per_question": rows}
    return result


def _stored(client: Any, ns: str, auth: dict[str, str], data: dict[str, Any],
            id_of: dict[str, str]) -> dict[str, Any]:
    """What the library made of the adds, read back over REST."""
    stale = {s for q in data["questions"] for s in q.get("stale", [])}
    untyped: Counter[str] = Counter()
    caught, lost = [], []
    for m in data["memories"]:
        r = client.get(f"/v1/memories/{id_of[m['id']]}", params={"namespace": ns},
                       headers=auth)
        r.raise_for_status()
        item = r.json()
        if "memory_type" not in m:
            untyped[item["memory_type"]] += 1
        replaced = bool(item.get("superseded_by") or item.get("valid_to"))
        if replaced and m["id"] in stale:
            caught.append(m["id"])
        elif replaced:
            lost.append(m["id"])
    return {"untyped_stored_as": dict(untyped), "stale_memories": len(stale),
            "stale_superseded": sorted(caught), "other_superseded": sorted(lost)}


# --- reporting ---------------------------------------------------------------------------
LABELS = {"hybrid": "hybrid", "dense-only": "dense-only", "bm25-only": "bm25-only"}


def _pct(summary: dict[str, Any], field: str) -> str:
    return f"{summary[field]:.0%}" if field in summary else "-"


def table(result: dict[str, Any]) -> str:
    s, runs, sent = result["set"], result["runs"], result["sent"]
    lines = [
        f"{result['memories']} memories ({s['untyped']} added without a type, "
        f"{s['chinese_memories']} in Chinese, {s['changed_pairs']} replaced by a later "
        f"one), {result['questions']} questions ({s['questions_with_stale']} with a "
        f"replaced fact); search top {result['top_k']}, context "
        f"{result['context_tokens']} tokens. `/v1/context` sent: "
        + (", ".join(sent["context"]) or "query and max_tokens only")
        + (f" (not in its schema: {', '.join(sent['context_not_sent'])})"
           if sent["context_not_sent"] else "") + "."
        + ("" if "recipe" in sent["context"] else " The block is the default search's, so "
           "in ctx is measured once, on the hybrid row."), "",
        "| recipe | top-1 | top-3 | MRR | in ctx | id in ctx | stale>cur | n |",
        "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for recipe, r in runs.items():
        o = r["overall"]
        lines.append(f"| {LABELS.get(recipe, recipe)} | {_pct(o, 'top1')} | "
                     f"{_pct(o, 'top3')} | {o['mrr']:.3f} | {_pct(o, 'in_context')} | "
                     f"{_pct(o, 'id_in_context')} | {o['stale_above']} | {o['n']} |")
    first = next(iter(runs))
    main = runs[first]
    lines += ["", f"Per category, `{first}`:", "",
              "| category | n | top-1 | top-3 | MRR | in ctx | stale>cur |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for cat, c in main["per_category"].items():
        lines.append(f"| {cat} | {c['n']} | {_pct(c, 'top1')} | {_pct(c, 'top3')} | "
                     f"{c['mrr']:.3f} | {_pct(c, 'in_context')} | {c['stale_above']} |")
    for group, title in (("per_category", "category"), ("per_language", "language")):
        names = sorted({g for r in runs.values() for g in r[group]})
        lines += ["", f"top-1 per {title} and recipe:", "",
                  f"| {title} | n | " + " | ".join(LABELS.get(x, x) for x in runs) + " |",
                  "|---|---:|" + "---:|" * len(runs)]
        for g in names:
            n = next(r[group][g]["n"] for r in runs.values() if g in r[group])
            cells = [_pct(r[group][g], "top1") if g in r[group] else "-"
                     for r in runs.values()]
            lines.append(f"| {g} | {n} | " + " | ".join(cells) + " |")
    st = result["stored"]
    lines += ["", f"Ingest over REST: {result['ingest_s']} s. Untyped adds stored as "
              + ", ".join(f"{t} {n}" for t, n in sorted(st["untyped_stored_as"].items()))
              + f"; replaced facts marked superseded: {len(st['stale_superseded'])} of "
              f"{st['stale_memories']}; other memories marked superseded: "
              f"{len(st['other_superseded'])}."]
    return "\n".join(lines)


def failures(result: dict[str, Any], recipe: str = "hybrid") -> str:
    run_ = result["runs"].get(recipe)
    if not run_:
        return ""
    out = [f"\n{recipe}: questions not answered at rank 1"]
    for q in run_["per_question"]:
        if q["top1"] and not q["stale_above"] and q.get("in_context", 1):
            continue
        rank = next((n + 1 for n, k in enumerate(q["ranked"]) if k in q["answers"]), None)
        flags = ("" if q["top1"] else f" rank {rank or '>10'}") + (
            " STALE" if q["stale_above"] else "") + (
            " not-in-ctx" if not q.get("in_context", 1) else "")
        out.append(f"  [{q['category']}] {q['text']}  ->{flags}\n      expected "
                   f"{q['answers']}, got {q['ranked'][:3]}")
    return "\n".join(out)


def section(result: dict[str, Any], command: str, label: str = "") -> str:
    return ("## Assistant memory v2 (our own set, through REST)\n\nProduced by "
            f"`{command}` on {time.strftime('%Y-%m-%d')}"
            + (f" ({label})" if label else "") + ", all-MiniLM-L6-v2 on the CPU, "
            "library defaults, a fresh embedded data dir, everything through the REST app "
            "(`POST /v1/memories`, `/v1/search`, `/v1/context`); data "
            "`benchmarks/data/assistant_v2.json` (written by us, issue 26: a user and the "
            "people around her over six months; facts that change, plans with dates "
            "without a year, habits, relations, indirect questions, Chinese and "
            "cross-language; each question asked at its own reference time). top-1: the "
            "first hit answers; top-3: every answer memory within the first 3; in ctx: "
            "every answer's whole text is in the 300-token `/v1/context` block (id in ctx: "
            "its short handle, the id's first 8 characters, is); stale>cur: "
            "questions where a replaced fact ranks above the current one. Two identical "
            "runs can differ by a question or two (recency is measured from the clock, "
            "and near-ties flip; see the note on the v1 set).\n\n"
            + table(result))


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--memories", type=int, default=None,
                    help="first N memories only (and the questions they answer)")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true",
                    help="do not update the BENCHMARKS.md section")
    ap.add_argument("--label", default="", help="which tree ran, for the section")
    ap.add_argument("--preset", default=None, choices=["minilm", "multilingual",
                                                      "multilingual-use"],
                    help="embedding preset (default: the library default)")
    ap.add_argument("--check", action="store_true", help="only check the set and print "
                    "its counts")
    args = ap.parse_args(argv)
    if args.check:
        data = load(args.data)
        print(json.dumps(stats(data), indent=1, ensure_ascii=False))
        problems = check(data)
        print("\n".join(problems) or "ok")
        sys.exit(1 if problems else 0)
    result = run(args.data, args.recipes, args.limit, args.memories, args.preset)
    print(table(result))
    print(failures(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    if not args.no_write:
        write_section(args.md, "assistant-v2",
                      section(result, "python -m benchmarks.assistant_v2", args.label))
    print(f"\nwrote {args.json}" + ("" if args.no_write else f", updated {args.md}"),
          file=sys.stderr)


if __name__ == "__main__":
    main()
