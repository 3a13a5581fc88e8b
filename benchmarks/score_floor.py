"""The relevance floor (issue 26, scores a person can read): does ``retrieval.min_score``
tell a question the memories answer from one they do not?

    python -m benchmarks.score_floor [--memories N] [--limit N] [--json OUT] [--no-write]

Through REST (``POST /v1/memories``, ``POST /v1/search``) on a fresh data dir: the
assistant v2 set's memories are added as benchmarks/assistant_v2.py adds them; then every
v2 question (each has an answer among the memories) and every question of UNRELATED
(our own writing, nothing in the set answers them) is asked at its reference time. For
each floor the table gives:

* answered kept: v2 questions whose evidence (the ``evidence`` of the score's
  breakdown, the same for all of a question's hits) is at least the floor, so their
  context block is not empty, and of those, how many have an answer among the top 10;
* unrelated refused: unrelated questions whose evidence is under the floor (an empty
  block);
* precision: of all questions with a hit at or above the floor, the share that the set
  answers.

The floor sorts questions, not the memories of one question: the context block of a
question that is answered follows the search's order (docs/RETRIEVAL.md).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.assistant_v2 import API_KEY, DEFAULT_DATA, load, sliced
from benchmarks.report import write_section

DEFAULT_JSON = Path("benchmarks/results/score_floor.json")
FLOORS = (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
TOP_K = 10
ASKED_AT = "2026-12-02T10:00:00+01:00"
# Questions nothing in the assistant v2 set answers (our own writing).
UNRELATED = (
    "What is the boiling point of tungsten?",
    "Who wrote the Brothers Karamazov?",
    "How many moons does Neptune have?",
    "What is the capital of Mongolia?",
    "How do I reset a Cisco router to factory settings?",
    "What is the half-life of carbon-14?",
    "Which team won the 1998 football World Cup?",
    "How do you conjugate the Finnish verb olla?",
    "What does a quantum dot laser emit?",
    "Who painted the ceiling of the Sistine Chapel?",
    "What is the GDP of Brazil?",
    "How long do I boil a soft-boiled ostrich egg?",
    "What is the airspeed of an unladen swallow?",
    "Which programming language has a borrow checker?",
    "What is the tallest mountain in Africa?",
    "How many bones are in a giraffe's neck?",
    "What year did the Berlin Wall fall?",
    "Explain the rules of cricket's follow-on.",
    "What is the chemical formula of ozone?",
    "Who invented the telephone?",
    "月球上有水吗？",
    "长城有多长？",
    "光合作用需要哪些条件？",
    "谁写了《红楼梦》？",
    "量子计算机的原理是什么？",
    "世界上最深的海沟叫什么？",
)


def run(path: Path = DEFAULT_DATA, memories: int | None = None,
        limit: int | None = None) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from hello_memory.config import load_settings
    from hello_memory.interfaces.rest import create_app

    data = load(path)
    if memories or limit:
        data = sliced(data, memories, limit)
    ns = data.get("namespace", "assistant-v2")
    auth = {"Authorization": f"Bearer {API_KEY}"}
    unrelated = list(UNRELATED[: limit or None])
    with tempfile.TemporaryDirectory(prefix="hm-score-floor-") as tmp:
        settings = load_settings(environ={}, data_dir=Path(tmp),
                                 api={"api_keys": {API_KEY: [ns]}})
        with TestClient(create_app(settings)) as client:
            def post(route: str, body: dict[str, Any]) -> Any:
                r = client.post(f"/v1{route}", params={"namespace": ns}, headers=auth,
                                json=body)
                r.raise_for_status()
                return r.json()

            id_of = {}
            for m in data["memories"]:
                body = {"content": m["content"], "event_time": m["event_time"]}
                if "memory_type" in m:
                    body["memory_type"] = m["memory_type"]
                id_of[m["id"]] = post("/memories", body)["id"]
            asked = []
            for q in data["questions"]:
                hits = post("/search", {"query": q["text"], "top_k": TOP_K,
                                        "reference_time": q["reference_time"]})["hits"]
                answers = {id_of[a] for a in q["answers"]}
                asked.append({"text": q["text"], "answered": True,
                              "scores": [h["score"] for h in hits],
                              "evidence": hits[0]["breakdown"]["evidence"] if hits else 0.0,
                              "is_answer": [h["id"] in answers for h in hits]})
            for text in unrelated:
                hits = post("/search", {"query": text, "top_k": TOP_K,
                                        "reference_time": ASKED_AT})["hits"]
                asked.append({"text": text, "answered": False,
                              "scores": [h["score"] for h in hits],
                              "evidence": hits[0]["breakdown"]["evidence"] if hits else 0.0,
                              "is_answer": [False for _ in hits]})
    rows = []
    answered = [a for a in asked if a["answered"]]
    others = [a for a in asked if not a["answered"]]
    for floor in FLOORS:
        kept = [a for a in answered if a["evidence"] >= floor]
        with_answer = [a for a in kept if any(a["is_answer"])]
        refused = [a for a in others if a["evidence"] < floor]
        passed = len(kept) + len(others) - len(refused)
        rows.append({"floor": floor, "answered": len(answered), "kept": len(kept),
                     "kept_with_answer": len(with_answer), "unrelated": len(others),
                     "unrelated_refused": len(refused),
                     "precision": round(len(kept) / passed, 3) if passed else None})
    return {"data": str(path), "default_floor": settings.retrieval.min_score,
            "questions": len(answered), "unrelated": len(others),
            "rows": rows, "asked": asked}


def table(result: dict[str, Any]) -> str:
    lines = ["| floor | answered kept | of which answer in top 10 | unrelated refused "
             "| precision |", "|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        p = "-" if r["precision"] is None else f"{100 * r['precision']:.0f}%"
        lines.append(f"| {r['floor']:.2f} | {r['kept']}/{r['answered']} | "
                     f"{r['kept_with_answer']}/{r['kept']} | "
                     f"{r['unrelated_refused']}/{r['unrelated']} | {p} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=None, help="first N memories only")
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true", help="do not update BENCHMARKS.md")
    args = ap.parse_args(argv)
    result = run(memories=args.memories, limit=args.limit)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    print(table(result))
    if not args.no_write:
        body = ("## The relevance floor: answered and unrelated questions (issue 26)\n\n"
                "Produced by `python -m benchmarks.score_floor`: the assistant v2 set "
                "through REST, its questions (each answered by a memory) and "
                f"{result['unrelated']} questions of our own that nothing answers, asked "
                "through `POST /v1/search`. A question is kept when its evidence is at "
                "least the floor (its context block is not empty). "
                f"`retrieval.min_score` is {result['default_floor']}.\n\n" + table(result))
        write_section(args.md, "The relevance floor: answered and unrelated questions",
                      body)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
