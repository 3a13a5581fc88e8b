"""Supersession dev set (issue 26, item 2): does a new memory replace the old one it
changes, and only that one? Rules only, no LLM.

    python -m benchmarks.supersede_dev [DATA.json] [--modes untyped semantic]
                                       [--limit N] [--json OUT] [--md BENCHMARKS.md]
                                       [--no-write]

The set is ``benchmarks/data/supersede_dev.json`` (written by us, before any run): pairs
of an old and a new memory a user tells an assistant, labelled ``change`` (the new one
states a new value of the same attribute of the same person: the old one should stop
being current) or ``no_change`` (both hold: the same value restated, another person,
another attribute, an addition, a past or planned fact, a negation, a question; ``kind``
says which), with the attribute, the language and, for most pairs, event times.

One fresh embedded data dir, library defaults except ``memory.supersede: rules`` (and no
LLM configured); the FastAPI app over it, in-process (``TestClient``: httpx over the
ASGI app, real routing and validation). For every pair and mode a namespace of its own:
``POST /v1/memories`` the old memory, then the new one, then ``GET
/v1/memories/{old id}``. The pair is predicted a change when the old memory lost its
validity (``superseded_by`` or ``valid_to`` set, hello_memory/memory/supersede.py).

Modes: ``untyped`` adds both with no ``memory_type`` (as a user would: the library
chooses); ``semantic`` adds both as ``memory_type: semantic``.

Reported per mode: precision, recall and F1 of ``change`` (a false supersede loses a
true fact, so both matter), overall, per language, per attribute and per kind, and every
error (pair, expected, got, the types the memories were stored as).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.assistant import is_chinese
from benchmarks.report import write_section

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "supersede_dev.json"
DEFAULT_JSON = Path("benchmarks/results/supersede_dev.json")
MODES = ("untyped", "semantic")
LABELS = ("change", "no_change")
LANGS = ("en", "zh")
NO_CHANGE_KINDS = ("restated", "other_person", "other_attribute", "addition", "past",
                   "plan", "negation", "question")
API_KEY = "supersede-dev-bench"
NS_PREFIX = "supersede-dev"


# --- the data set ------------------------------------------------------------------------
def load(path: Path = DEFAULT_DATA) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return data


def _time(value: Any, where: str, problems: list[str]) -> datetime | None:
    try:
        when = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        problems.append(f"{where}: event_time is not ISO 8601")
        return None
    if when.tzinfo is None:
        problems.append(f"{where}: event_time has no timezone")
        return None
    return when


def check(data: dict[str, Any]) -> list[str]:
    """Integrity problems of the set (empty list: fine)."""
    problems: list[str] = []
    pairs = data.get("pairs")
    if not isinstance(pairs, list) or not pairs:
        return ["no pairs"]
    ids = [p.get("id") for p in pairs]
    dup = sorted({str(i) for i in ids if ids.count(i) > 1})
    if dup:
        problems.append("duplicate pair ids: " + ", ".join(dup))
    for p in pairs:
        pid = p.get("id", "?")
        if p.get("label") not in LABELS:
            problems.append(f"{pid}: label must be one of {LABELS}")
        if p.get("lang") not in LANGS:
            problems.append(f"{pid}: lang must be one of {LANGS}")
        if not isinstance(p.get("attribute"), str) or not p["attribute"].strip():
            problems.append(f"{pid}: needs an attribute name")
        kind = p.get("kind")
        if p.get("label") == "change" and kind != "change":
            problems.append(f"{pid}: a change pair has kind 'change'")
        if p.get("label") == "no_change" and kind not in NO_CHANGE_KINDS:
            problems.append(f"{pid}: a no_change pair's kind must be one of {NO_CHANGE_KINDS}")
        times: dict[str, datetime | None] = {}
        for side in ("old", "new"):
            m = p.get(side)
            if not isinstance(m, dict) or not str(m.get("content", "")).strip():
                problems.append(f"{pid}: needs {side}.content")
                continue
            if p.get("lang") in LANGS and is_chinese(m["content"]) != (p["lang"] == "zh"):
                problems.append(f"{pid}: {side}.content does not look like lang {p['lang']}")
            if "event_time" in m:
                times[side] = _time(m["event_time"], f"{pid}.{side}", problems)
        if len(times) == 1:
            problems.append(f"{pid}: event_time on both memories or on neither")
        old_t, new_t = times.get("old"), times.get("new")
        if old_t is not None and new_t is not None and not new_t > old_t:
            problems.append(f"{pid}: the new memory's event_time is not after the old one's")
    return problems


# --- scoring -----------------------------------------------------------------------------
def prf(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Counts and precision / recall / F1 of predicting ``change`` (None where the
    denominator is 0)."""
    c = Counter((r["label"] == "change", r["predicted"]) for r in rows)
    tp, fp, fn, tn = c[True, True], c[False, True], c[True, False], c[False, False]
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = (2 * precision * recall / (precision + recall)
          if precision is not None and recall is not None and precision + recall else
          (0.0 if precision is not None and recall is not None else None))
    return {"pairs": tp + fp + fn + tn, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": _r(precision), "recall": _r(recall), "f1": _r(f1)}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, dict[str, list[dict[str, Any]]]] = {
        "per_lang": defaultdict(list), "per_attribute": defaultdict(list),
        "per_kind": defaultdict(list)}
    for r in rows:
        groups["per_lang"][r["lang"]].append(r)
        groups["per_attribute"][r["attribute"]].append(r)
        groups["per_kind"][r["kind"]].append(r)
    stored = Counter(f"{r['old_type']}/{r['new_type']}" for r in rows)
    return {"overall": prf(rows),
            **{g: {k: prf(v) for k, v in sorted(d.items())} for g, d in groups.items()},
            "stored_types": dict(sorted(stored.items())),
            "errors": [r for r in rows if r["predicted"] != (r["label"] == "change")]}


# --- the run -----------------------------------------------------------------------------
def _entry(memory: dict[str, Any], mode: str) -> dict[str, Any]:
    body = {"content": memory["content"]}
    if memory.get("event_time"):
        body["event_time"] = memory["event_time"]
    if mode == "semantic":
        body["memory_type"] = "semantic"
    return body


def run(path: Path = DEFAULT_DATA, modes: Sequence[str] = MODES,
        limit: int | None = None) -> dict[str, Any]:
    """Every pair of the set through REST in a fresh data dir, once per mode."""
    from fastapi.testclient import TestClient

    from hello_memory.config import load_settings
    from hello_memory.interfaces.rest import create_app
    from hello_memory.memory.manager import MemoryManager

    data = load(path)
    problems = check(data)
    if problems:
        raise ValueError("supersession set is inconsistent:\n  " + "\n  ".join(problems))
    pairs = data["pairs"][:limit]
    result: dict[str, Any] = {"data": str(path), "pairs": len(pairs),
                              "labels": dict(Counter(p["label"] for p in pairs)),
                              "langs": dict(Counter(p["lang"] for p in pairs)), "modes": {}}
    auth = {"Authorization": f"Bearer {API_KEY}"}
    with tempfile.TemporaryDirectory(prefix="hm-supersede-dev-") as tmp:
        # environ={}: a developer's HELLO_MEMORY__* variables must not change the numbers;
        # no LLM is configured, and the rules are asked for explicitly.
        settings = load_settings(environ={}, data_dir=Path(tmp), memory={"supersede": "rules"},
                                 api={"api_keys": {API_KEY: [f"{NS_PREFIX}/*"]}})
        result["settings"] = {"memory.supersede": settings.memory.supersede,
                              "llm.provider": settings.llm.provider}
        mm = MemoryManager.open(settings)
        try:
            with TestClient(create_app(settings, manager=mm)) as client:
                def add(ns: str, body: dict[str, Any]) -> dict[str, Any]:
                    r = client.post("/v1/memories", params={"namespace": ns}, headers=auth,
                                    json=body)
                    r.raise_for_status()
                    out: dict[str, Any] = r.json()
                    return out

                def get(ns: str, memory_id: str) -> dict[str, Any]:
                    r = client.get(f"/v1/memories/{memory_id}", params={"namespace": ns},
                                   headers=auth)
                    r.raise_for_status()
                    out: dict[str, Any] = r.json()
                    return out

                add(f"{NS_PREFIX}/warm-up", {"content": "Warm-up: I like tea."})
                for mode in modes:
                    t0 = time.perf_counter()
                    rows = []
                    for p in pairs:
                        ns = f"{NS_PREFIX}/{mode}/{p['id']}"
                        old = add(ns, _entry(p["old"], mode))
                        new = add(ns, _entry(p["new"], mode))
                        old_now, new_now = get(ns, old["id"]), get(ns, new["id"])
                        predicted = (old_now["superseded_by"] is not None
                                     or old_now["valid_to"] is not None)
                        rows.append({
                            "id": p["id"], "lang": p["lang"], "label": p["label"],
                            "kind": p["kind"], "attribute": p["attribute"],
                            "predicted": predicted,
                            "by_new": old_now["superseded_by"] == new["id"],
                            "new_superseded": new_now["superseded_by"] is not None
                            or new_now["valid_to"] is not None,
                            "old_type": old_now["memory_type"], "new_type": new_now["memory_type"],
                            "old": p["old"]["content"], "new": p["new"]["content"]})
                    result["modes"][mode] = {"seconds": round(time.perf_counter() - t0, 2),
                                             **summarise(rows), "rows": rows}
        finally:
            mm.close()
    return result


# --- reporting ---------------------------------------------------------------------------
def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def table(result: dict[str, Any]) -> str:
    """Markdown tables, at most 80 columns wide."""
    modes = result["modes"]
    lines = ["| mode | group | pairs | TP | FP | FN | TN | precision | recall | F1 |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m, r in modes.items():
        for group, s in [("all", r["overall"]), *r["per_lang"].items()]:
            lines.append(f"| {m} | {group} | {s['pairs']} | {s['tp']} | {s['fp']} | {s['fn']} "
                         f"| {s['tn']} | {_pct(s['precision'])} | {_pct(s['recall'])} | "
                         f"{_pct(s['f1'])} |")
    names = list(modes)
    attrs = sorted({a for r in modes.values() for a in r["per_attribute"]})
    lines += ["", "Per attribute and mode: changes caught / changes, false supersedes / "
              "no-change pairs.", "",
              "| attribute | " + " | ".join(f"{m[:5]} caught | {m[:5]} false" for m in names)
              + " |",
              "|---|" + "---:|---:|" * len(names)]
    for a in attrs:
        cells = []
        for m in names:
            s = modes[m]["per_attribute"].get(a)
            if s is None:
                cells += ["-", "-"]
                continue
            cells += [f"{s['tp']}/{s['tp'] + s['fn']}", f"{s['fp']}/{s['fp'] + s['tn']}"]
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    kinds = [k for k in NO_CHANGE_KINDS
             if any(k in r["per_kind"] for r in modes.values())]
    if kinds:
        lines += ["", "Per no-change kind: false supersedes / pairs.", "",
                  "| kind | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for k in kinds:
            cells = []
            for m in names:
                s = modes[m]["per_kind"].get(k)
                cells.append("-" if s is None else f"{s['fp']}/{s['pairs']}")
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
    for m, r in modes.items():
        lines += ["", f"Stored types in `{m}` (old/new): "
                  + ", ".join(f"{k} {v}" for k, v in r["stored_types"].items())]
    return "\n".join(lines)


def errors(result: dict[str, Any], width: int = 80) -> str:
    out = []
    for m, r in result["modes"].items():
        missed = [e["id"] for e in r["errors"] if e["label"] == "change"]
        false = [f"{e['id']} ({e['kind']})" for e in r["errors"] if e["label"] != "change"]
        for title, ids in ((f"`{m}` changes missed", missed),
                           (f"`{m}` false supersedes", false)):
            text = f"{title} ({len(ids)}): " + (", ".join(ids) or "none")
            out.append(_wrap(text, width))
    return "\n\n".join(out)


def _wrap(text: str, width: int) -> str:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def error_details(result: dict[str, Any]) -> str:
    out = []
    for m, r in result["modes"].items():
        out.append(f"\n{m}: {len(r['errors'])} errors")
        for e in r["errors"]:
            got = "superseded" if e["predicted"] else "kept"
            out.append(f"  {e['id']} [{e['lang']} {e['attribute']} {e['kind']}] expected "
                       f"{e['label']}, old {got} ({e['old_type']}/{e['new_type']})\n"
                       f"      old: {e['old']}\n      new: {e['new']}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    ap.add_argument("--limit", type=int, default=None, help="first N pairs only")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true",
                    help="do not update the BENCHMARKS.md section")
    args = ap.parse_args(argv)
    result = run(args.data, args.modes, args.limit)
    result["date"] = time.strftime("%Y-%m-%d")
    print(table(result))
    print(error_details(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    if not args.no_write:
        labels, langs = result["labels"], result["langs"]
        write_section(args.md, "supersede_dev", (
            "## Facts that update: supersession dev set (rules only)\n\n"
            f"Produced by `python -m benchmarks.supersede_dev` on {result['date']}: "
            f"{result['pairs']} pairs written by us in "
            "`benchmarks/data/supersede_dev.json` "
            f"({labels.get('change', 0)} changes, {labels.get('no_change', 0)} no-change; "
            f"{langs.get('en', 0)} English, {langs.get('zh', 0)} Chinese). Each pair in a "
            "namespace of its own of one fresh embedded data dir, through REST "
            "(`POST /v1/memories` old, then new; `GET /v1/memories/{old}`), "
            "`memory.supersede: rules`, no LLM. A pair counts as predicted `change` when "
            "the old memory lost its validity (`superseded_by` / `valid_to`). `untyped`: "
            "no `memory_type` sent (the library chooses); `semantic`: both sent as "
            "semantic. Precision and recall are of `change`.\n\n"
            + table(result) + "\n\n" + errors(result)))
    print(f"\nwrote {args.json}" + ("" if args.no_write else f", updated {args.md}"),
          file=sys.stderr)


if __name__ == "__main__":
    main()
