"""Which embedder reads Chinese and mixed text by default (issue 26, item 7): the LoCoMo
dev split through REST with each packaged preset as the only embedder, and each preset's
embedding speed on the same machine, in one table (BENCHMARKS.md, "Chinese and mixed
text: the embedder choice").

The LoCoMo rows come from runs of the LoCoMo benchmark, one per preset (each 5-15 min on
2 cores; e5 much longer), saved where this script reads them::

    python -m benchmarks.locomo DEV --modes hybrid --md '' \\
        --preset multilingual --json benchmarks/results/locomo_preset_multilingual.json

(``--preset`` omitted: ``locomo_preset_default.json``). This script re-measures only the
speed (128 sentences of our assistant and Chinese sets, batched and one at a time) and
writes the section::

    python -m benchmarks.embedder_choice [--no-write]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from benchmarks.report import write_section

RESULTS = Path("benchmarks/results")
PRESETS = ("default", "multilingual", "multilingual-use")
SECTION = "Chinese and mixed text: the embedder choice (issue 26)"


def _speed(preset: str, texts: list[str]) -> tuple[float, float]:
    from hello_memory.config import load_settings
    from hello_memory.factory import build_embedder

    over = {} if preset == "default" else {"embedding": {"preset": preset}}
    embedder = build_embedder(load_settings(environ={}, **over).embedding)
    embedder.embed(["warm up"])
    t = time.perf_counter()
    embedder.embed(texts)
    batch = len(texts) / (time.perf_counter() - t)
    t = time.perf_counter()
    for text in texts[:16]:
        embedder.embed_query(text)
    return batch, (time.perf_counter() - t) / 16 * 1000


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    data = Path("benchmarks/data")
    en = [m["content"] for m in json.loads((data / "assistant_v2.json").read_text())["memories"]]
    zh_set = json.loads((data / "zh_everyday.json").read_text())
    zh = [m["content"] for m in (zh_set.get("memories") or zh_set.get("messages"))]
    texts = (en[:64] + zh[:64])
    rows = ["| embedder | LoCoMo R@1 | R@5 | R@10 | MRR | LoCoMo ingest turns/s (that run) "
            "| embed batch sentences/s | one query ms |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for preset in PRESETS:
        path = RESULTS / f"locomo_preset_{preset}.json"
        run: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        o = run.get("modes", {}).get("hybrid", {}).get("overall")
        batch, query = _speed(preset, texts)
        name = "all-MiniLM-L6-v2 (default)" if preset == "default" else preset
        cells = (f"{o['recall@1']:.3f} | {o['recall@5']:.3f} | {o['recall@10']:.3f} | "
                 f"{o['mrr']:.3f} | {run['ingest_turns_per_s']:.0f}" if o else "- | - | - | - | -")
        rows.append(f"| {name} | {cells} | {batch:.0f} | {query:.1f} |")
    table = "\n".join(rows)
    print(table)
    if not args.no_write:
        body = (f"## {SECTION}\n\nProduced by `python -m benchmarks.embedder_choice` on "
                f"{time.strftime('%Y-%m-%d')} (2-core shared machine, under load: compare "
                "within a column). LoCoMo dev through `POST /v1/search`, recipe hybrid, each "
                "preset the only embedder (`python -m benchmarks.locomo ... --preset P`, "
                "results in `benchmarks/results/locomo_preset_*.json`); speed: 128 sentences "
                "of the assistant v2 and Chinese everyday sets. The three LoCoMo runs are "
                "from the same day but not the same commit (the retrieval code moved "
                "between them by changes worth about +-0.005 R@10 on the default "
                "embedder, BENCHMARKS.md's issue 26 sections).\n\n" + table + "\n\n"
                "Neither multilingual model can be the default: both lose LoCoMo recall "
                "(the done-when of issue 26 asks >= 0.72), and e5 is several times slower. "
                "USE-multilingual is fast, so it reads Chinese and mixed text as a view of its "
                "own (`retrieval/multilingual.py`, docs/RETRIEVAL.md), only when the question "
                "or a candidate holds CJK text: the assistant v2 and Chinese everyday sections "
                "show what it gives; an English-only namespace never runs it (the LoCoMo "
                "default row is measured with it on).")
        write_section(args.md, SECTION, body)
        print(f"updated {args.md}")


if __name__ == "__main__":
    main()
