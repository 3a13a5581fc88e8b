"""Ingest throughput with the issue-15 write checks on and off, in one process.

    python -m benchmarks.ingest_checks [--conversations 3] [--rounds 2] [--md BENCHMARKS.md]

"on" is the default add path: the duplicate lookup (one indexed query per batch on
``ix_items_ns_hash``), the near-duplicate report (one filtered nearest search per new
memory) and the mentioned times (the time parser on each text, rows in
``hm_memory_times``). "off" is ``add_many(..., on_duplicate="store")`` with
``memory.times_from_text`` off: no check at all, the write path as it was before.

The corpus is the LoCoMo dev turns (shared/data/locomo, one ``add_many`` per
conversation, the protocol's memory per turn with its session time). Both modes write
into the same stores, each conversation into a fresh namespace per mode and round, and
the modes alternate (on/off, then off/on) so that load drift on a shared machine hits
both alike. A first, untimed pass of both modes over the same turns warms every
per-text cache (stemming, fact rules) for both: without it the mode run first on a
conversation pays for the other's cache. Embedding is included, as in
every ingest figure of BENCHMARKS.md. Supersession (memory.supersede) runs in both
modes: it is not one of these checks.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.locomo import DEFAULT_DATA, turns
from benchmarks.report import write_section


def run(path: Path, conversations: int, rounds: int, warmup: int = 1) -> dict[str, Any]:
    from hello_memory.config import load_settings
    from hello_memory.factory import open_stores
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.text.entities import RuleExtractor

    samples = json.loads(path.read_text(encoding="utf-8"))[:conversations]
    seconds = {"on": 0.0, "off": 0.0}
    counts = {"on": 0, "off": 0}
    pairs: list[float] = []  # per conversation and round: on time / off time
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(environ={}, data_dir=Path(tmp))
        mm = MemoryManager(open_stores(settings), extractor=RuleExtractor())
        mm.stores.embedder.embed(["warm up"] * 8)
        for r in range(-warmup, rounds):
            order = ("on", "off") if r % 2 == 0 else ("off", "on")
            for s in samples:
                took: dict[str, float] = {}
                for mode in order:
                    entries = [{**e, "namespace": f"{mode}-{r}-{s['sample_id']}"}
                               for e in turns(s)]
                    mm.stores.records.mention_times = mode == "on"
                    t0 = time.perf_counter()
                    mm.add_many(entries, on_duplicate="return" if mode == "on" else "store")
                    took[mode] = time.perf_counter() - t0
                    if r >= 0:  # negative rounds only warm up
                        seconds[mode] += took[mode]
                        counts[mode] += len(entries)
                if r >= 0:
                    pairs.append(took["off"] / took["on"])  # = rate on / rate off
        mm.close()
    rate = {m: counts[m] / seconds[m] for m in seconds}
    return {"conversations": len(samples), "rounds": rounds, "turns_per_mode": counts["on"],
            "turns_per_s": {m: round(v, 1) for m, v in rate.items()},
            "ratio_on_off": round(rate["on"] / rate["off"], 3),
            "pair_ratios": sorted(round(p, 3) for p in pairs),
            "median_pair_ratio": round(statistics.median(pairs), 3),
            "load_average": [round(x, 1) for x in os.getloadavg()]}


def section(result: dict[str, Any], command: str) -> str:
    r = result["turns_per_s"]
    return (f"## Ingest with the write checks (issue 15)\n\n"
            f"Produced by `{command}` on {time.strftime('%Y-%m-%d')}, 2-core shared machine "
            f"(load average at the end {' / '.join(map(str, result['load_average']))}), "
            "all-MiniLM-L6-v2 on the CPU, embedding included. LoCoMo dev turns, "
            f"{result['conversations']} conversations x {result['rounds']} rounds = "
            f"{result['turns_per_mode']} turns per mode, one `add_many` per conversation, "
            "the modes alternating in one process after an untimed warm-up pass "
            "(benchmarks/ingest_checks.py).\n\n"
            "| mode | turns/s |\n|---|---|\n"
            f"| checks on (default: duplicate lookup, near-duplicate report, mentioned times) "
            f"| {r['on']} |\n"
            f"| checks off (`on_duplicate=\"store\"`, `times_from_text` off) | {r['off']} |\n\n"
            f"Checks on / off: **{result['ratio_on_off']:.3f}x** over all turns (target >= "
            f"0.85x); per conversation and round {', '.join(map(str, result['pair_ratios']))} "
            f"(median {result['median_pair_ratio']:.3f}x).")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--conversations", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"),
                    help="section to update (--md '' to skip)")
    args = ap.parse_args()
    result = run(args.data, args.conversations, args.rounds, args.warmup)
    print(json.dumps(result, indent=2))
    if str(args.md) not in ("", "."):
        cmd = (f"python -m benchmarks.ingest_checks --conversations {args.conversations} "
               f"--rounds {args.rounds} --warmup {args.warmup}")
        write_section(args.md, "ingest-checks", section(result, cmd))


if __name__ == "__main__":
    main()
