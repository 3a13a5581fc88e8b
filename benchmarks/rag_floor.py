"""The relevance floor of ``RAGPipeline.ask``: passages shown against answer recall.

    python -m benchmarks.rag_floor [DATA.json] [--json OUT] [--no-write]

Our own question set (benchmarks/data/rag_questions.json, written by us): ten short
documents (router manual, leave policy, expenses, runbook, ...) and 40 questions, 32
with the phrase of the one passage that answers them, 8 that nothing in the documents
answers. The documents are added with ``rag.add_text`` to a fresh embedded data dir
(library defaults, all-MiniLM-L6-v2 on the CPU, no LLM); every question is searched
once with ``ask``'s depth (``rag.ask_top_k``); each floor is then applied to the same
hits, and the survivors packed under ``rag.context_tokens`` as ``ask`` does.

For each floor: **recall** = share of answerable questions whose answer passage is
among the passages shown; **shown** = mean passages shown for answerable questions,
**shown (none)** = mean passages shown for the unanswerable ones, **silent (none)** =
share of unanswerable questions for which nothing is shown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import write_section

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "rag_questions.json"
DEFAULT_JSON = Path("benchmarks/results/rag_floor.json")
# (min_score, relative_score): absolute cosine floor, share of the best passage's
FLOORS: list[tuple[float, float]] = [
    (-1.0, 0.0), (0.1, 0.0), (0.2, 0.0), (0.25, 0.0), (0.3, 0.0), (0.35, 0.0), (0.4, 0.0),
    (0.5, 0.0), (-1.0, 0.5), (-1.0, 0.6), (-1.0, 0.7), (-1.0, 0.8), (-1.0, 0.9),
    (0.2, 0.5), (0.2, 0.6), (0.25, 0.5), (0.25, 0.6), (0.25, 0.7), (0.3, 0.6), (0.3, 0.7),
]


def run(data: dict[str, Any]) -> dict[str, Any]:
    from hello_memory.config import load_settings
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.rag import RAGPipeline
    from hello_memory.rag.ask import pack_context
    from hello_memory.rag.pipeline import relevance_floor

    with tempfile.TemporaryDirectory() as tmp, \
            MemoryManager.open(load_settings(environ={}, data_dir=Path(tmp) / "data")) as mm:
        rag = RAGPipeline.from_manager(mm, llm=None)
        s = rag.settings
        for doc in data["documents"]:
            rag.add_text(doc["text"], namespace="kb", source=doc["name"])
        chunks = rag.stats("kb")["chunks"]
        searched = [(q, rag.search(q["question"], namespace="kb", top_k=s.ask_top_k))
                    for q in data["questions"]]
        rows = []
        for min_score, relative in FLOORS:
            hit_answer, shown_ans, shown_none, silent = [], [], [], []
            for q, hits in searched:
                kept = relevance_floor(hits, min_score, relative)
                passages, _ = pack_context(kept, s.context_tokens, rag.counter)
                if q["answer"] is None:
                    shown_none.append(len(passages))
                    silent.append(not passages)
                else:
                    shown_ans.append(len(passages))
                    hit_answer.append(any(q["answer"] in p.content for p in passages))
            rows.append({"min_score": min_score, "relative_score": relative,
                         "recall": statistics.mean(hit_answer),
                         "shown": statistics.mean(shown_ans),
                         "shown_none": statistics.mean(shown_none),
                         "silent_none": statistics.mean(silent)})
        defaults = {"min_score": s.min_score, "relative_score": s.relative_score,
                    "ask_top_k": s.ask_top_k, "context_tokens": s.context_tokens}
    answerable = sum(1 for q in data["questions"] if q["answer"] is not None)
    return {"date": time.strftime("%Y-%m-%d"), "documents": len(data["documents"]),
            "chunks": chunks, "questions": len(data["questions"]), "answerable": answerable,
            "defaults": defaults, "floors": rows}


def table(result: dict[str, Any]) -> str:
    d = result["defaults"]
    lines = ["| min_score | relative_score | recall | shown | shown (none) | silent (none) |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in result["floors"]:
        default = (r["min_score"], r["relative_score"]) == (d["min_score"], d["relative_score"])
        mark = " **(default)**" if default else ""
        lines.append(
            f"| {'off' if r['min_score'] <= -1 else r['min_score']} "
            f"| {'off' if not r['relative_score'] else r['relative_score']}{mark} "
            f"| {r['recall']:.1%} | {r['shown']:.2f} | {r['shown_none']:.2f} "
            f"| {r['silent_none']:.0%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true", help="leave BENCHMARKS.md alone")
    args = ap.parse_args(argv)
    result = run(json.loads(args.data.read_text(encoding="utf-8")))
    print(table(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    if not args.no_write:
        d = result["defaults"]
        write_section(args.md, "rag_floor", (
            "## RAG: the relevance floor of `ask` (our own questions)\n\nProduced by "
            f"`python -m benchmarks.rag_floor` on {result['date']}, all-MiniLM-L6-v2 on the "
            "CPU, no LLM, library defaults otherwise (`ask_top_k` "
            f"{d['ask_top_k']}, `context_tokens` {d['context_tokens']}); data "
            "`benchmarks/data/rag_questions.json` (written by us: "
            f"{result['documents']} documents, {result['chunks']} chunks, "
            f"{result['questions']} questions of which {result['answerable']} have an "
            "answer passage). `min_score`: a passage is shown only if the question's cosine "
            "similarity to it is at least this; `relative_score`: and at least this share "
            "of the best passage's. recall: the answer passage is among those shown; "
            "shown: passages shown per answerable question; (none): the questions nothing "
            "answers.\n\n" + table(result) + "\n\n"
            "Why the default: `min_score` 0.25 is the highest absolute floor here that "
            "keeps every answer passage (0.3 loses some) and leaves most unanswerable "
            "questions with no passage; `relative_score` 0.5 then drops the passages far "
            "below the best one at no cost in recall. Stricter relative cuts (0.6 to 0.8) "
            "show fewer passages still on this set, where each question has one answer "
            "passage, but would drop the second passage of an answer spread over two. "
            "The floor also bounds what an LLM is given. Turn it "
            "off with `rag.min_score: -1` and `rag.relative_score: 0`."))
    print(f"\nwrote {args.json}" + ("" if args.no_write else f", updated {args.md}"),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
